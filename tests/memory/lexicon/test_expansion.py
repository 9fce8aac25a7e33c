"""Query expansion with the team synonym lexicon (seed 004 BusinessLexicon; R-QUERY): a query
finds a memory that shares no token with it but a synonym, in the node search, the message
search and the context call; other teams' and other workspaces' sets never apply."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.principal import principal_for_key
from accounts.services import agent_key_create
from memory.selectors.lexicon import LEXICON_SHARE, lexicon_expand
from memory.selectors.messages import messages_search
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from memory.services.lexicon import lexicon_set_delete, lexicon_set_save
from tests.helpers import append, make_node


def search(principal, text, workspace_id="w1"):
    found = memory_query(principal=principal, query=MemoryQuery(owner=Owner(workspace_id=workspace_id, user_id="u1"),
                                                                query_text=text))
    return [node.title for node in found.relevant]


@pytest.fixture
def allergy(principal):
    return make_node(principal, title="对花粉很敏感", user_id="u1")


def test_without_a_lexicon_the_query_finds_nothing_that_shares_no_token(principal, allergy):
    assert search(principal, "过敏") == []


def test_a_team_set_makes_the_query_find_a_memory_that_says_a_synonym(principal, admin_principal, allergy):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感", "allergy"])
    assert search(principal, "过敏") == ["对花粉很敏感"]
    assert search(principal, "any allergies?") == ["对花粉很敏感"]


def test_a_multi_word_term_matches_only_when_all_its_words_are_said(principal, admin_principal):
    make_node(principal, title="Sam cannot eat peanuts", user_id="u1")
    lexicon_set_save(principal=admin_principal, terms=["nut allergy", "cannot eat peanuts"])
    assert search(principal, "does he have a nut allergy") == ["Sam cannot eat peanuts"]
    assert search(principal, "an allergy to pollen") == []


def test_a_chinese_multi_character_term_expands_by_its_bigrams(principal, admin_principal):
    make_node(principal, title="周末常去爬山", user_id="u1")
    lexicon_set_save(principal=admin_principal, terms=["登山运动", "爬山"])
    assert search(principal, "你喜欢登山运动吗") == ["周末常去爬山"]


def test_traditional_and_full_width_terms_are_stored_and_matched_normalised(principal, admin_principal, allergy):
    row = lexicon_set_save(principal=admin_principal, terms=["過敏", "敏感", "ＡＬＬＥＲＧＹ"])
    assert row.terms == ["过敏", "敏感", "allergy"]
    assert search(principal, "過敏") == ["对花粉很敏感"]


def test_a_synonym_counts_less_than_the_words_the_user_said(principal, admin_principal):
    make_node(principal, title="对花粉很敏感", user_id="u1")
    make_node(principal, title="对花粉过敏", user_id="u1")
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])
    assert search(principal, "过敏") == ["对花粉过敏", "对花粉很敏感"]


def test_expansion_weights_are_the_share_of_the_matched_lines_weight(admin_principal):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])
    tokens, weights = lexicon_expand(team_id=admin_principal.team.pk, workspace_id="", tokens=["过敏", "花粉"],
                                     token_weights={"过敏": 0.5})
    assert tokens == ["过敏", "敏感", "花粉"]  # a synonym follows the term it expands
    assert weights == {"过敏": 0.5, "敏感": pytest.approx(LEXICON_SHARE * 0.5)}


def test_without_a_matching_set_the_tokens_and_weights_are_unchanged(admin_principal):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])
    weights = {"天气": 0.8}
    assert lexicon_expand(team_id=admin_principal.team.pk, workspace_id="", tokens=["天气"],
                          token_weights=weights) == (["天气"], weights)


def test_another_teams_lexicon_never_applies(principal, other_principal, allergy):
    other_admin = principal_for_key(agent_key_create(team=other_principal.team, name="b admin", kind="admin")[0])
    lexicon_set_save(principal=other_admin, terms=["过敏", "敏感"])
    assert search(principal, "过敏") == []


def test_a_workspace_set_applies_in_its_workspace_only(principal, admin_principal, allergy):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"], workspace_id="w1")
    assert search(principal, "过敏", workspace_id="w1") == ["对花粉很敏感"]
    assert search(principal, "过敏", workspace_id="w2") == []
    assert search(principal, "过敏", workspace_id="") == []


def test_a_changed_or_deleted_set_applies_to_the_next_call(principal, admin_principal, allergy):
    row = lexicon_set_save(principal=admin_principal, terms=["过敏", "敏锐"])
    assert search(principal, "过敏") == []
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"], set_id=row.pk)
    assert search(principal, "过敏") == ["对花粉很敏感"]
    lexicon_set_delete(principal=admin_principal, set_id=row.pk)
    assert search(principal, "过敏") == []


def test_the_message_search_expands_too(principal, admin_principal):
    append(principal, "I am allergic to cats, they make me sneeze", session_id="old", workspace_id="w1")
    lexicon_set_save(principal=admin_principal, terms=["feline", "cat"])
    found = messages_search(principal=principal, session=None, owner=Owner(workspace_id="w1", user_id="u1"),
                            query_text="is there a feline problem", limit=5)
    assert [hit.message.content for hit in found] == ["I am allergic to cats, they make me sneeze"]


def test_the_context_call_injects_a_memory_found_by_a_synonym(agent_client, principal, admin_principal, allergy):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])
    body = agent_client.post(reverse("api-context"), {"workspace_id": "w1", "user_id": "u1", "session_id": "new",
                                                      "query": "我过敏吗"}, format="json").json()
    assert allergy.pk in body["used_memory_ids"]
    assert "对花粉很敏感" in body["block"]


def test_the_lexicon_costs_one_query_per_search(principal, admin_principal, allergy):
    lexicon_set_save(principal=admin_principal, terms=["过敏", "敏感"])
    search(principal, "过敏")  # reads and compiles the sets once
    with CaptureQueriesContext(connection) as with_lexicon:
        search(principal, "过敏")
    reads = [query["sql"] for query in with_lexicon.captured_queries if "memory_lexiconset" in query["sql"]]
    assert len(reads) == 0
    versions = [query["sql"] for query in with_lexicon.captured_queries if "memory_lexiconversion" in query["sql"]]
    assert len(versions) == 1
