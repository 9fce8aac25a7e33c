"""The hit preview: what a context call would inject, in force and under a draft budget, never
recorded (R-UI, R-CTX; seed 004 §10 记忆命中预览)."""

import pytest
from django.urls import reverse

from memory.models import Retrieval
from memory.services.nodes import node_supersede, supersede_input
from memory.services.policies import policy_set
from tests.dashboard.xss import ALL, ESCAPED, SCRIPT, injected
from tests.helpers import append, make_node

URL = reverse("dashboard:preview")
CALL = {"workspace_id": "w1", "user_id": "u1", "session_id": "s1"}


@pytest.fixture
def launch(principal):
    """Four user facts the query "launch" finds (L5), a standing preference (L2) and a turn (L3)."""
    append(principal, "planning the launch", **CALL)
    facts = [make_node(principal, user_id="u1", type="fact", key=f"launch{index}", title=f"launch fact {index}",
                       content="the launch is on Friday " * 2) for index in range(4)]
    make_node(principal, user_id="u1", type="preference", title="likes short answers")
    return facts


def relevant_ids(side) -> list[int]:
    return [entry["item"].obj.pk for section in side.sections if section["name"] == "relevant"
            for entry in section["items"]]


def test_the_preview_shows_the_block_the_api_would_inject_and_records_nothing(viewer_client, agent_client, launch):
    api = agent_client.post("/api/v1/context", {**CALL, "query": "launch"}, format="json").json()
    recorded = Retrieval.objects.count()
    response = viewer_client.get(URL, {**CALL, "q": "launch"})
    assert response.status_code == 200
    current = response.context["current"]
    assert current.context.block == api["block"] and "launch fact 0" in api["block"]
    assert current.context.used_memory_ids == api["used_memory_ids"]
    assert {layer: row["chars"] for layer, row in zip("012345", current.layers, strict=True)} == {
        layer[1]: chars for layer, chars in api["diagnostics"]["chars_by_layer"].items()}
    assert current.total_chars == api["diagnostics"]["total_chars"]
    assert Retrieval.objects.count() == recorded
    assert response.context["draft"] is None


def test_the_page_shows_items_by_section_with_why_and_matched_tokens(viewer_client, launch):
    html = viewer_client.get(URL, {**CALL, "q": "launch"}).content.decode()
    assert "[Relevant memories]" in html and "[Recent messages]" in html
    assert f'href="{reverse("dashboard:node", args=[launch[0].pk])}"' in html
    assert "why: relevant" in html
    assert '<span class="tag">launch</span>' in html


def test_a_smaller_draft_top_n_shows_fewer_items_and_marks_the_removed_ones(viewer_client, launch):
    response = viewer_client.get(URL, {**CALL, "q": "launch", "draft-top_n": "1"})
    assert response.status_code == 200
    current, draft = response.context["current"], response.context["draft"]
    assert len(relevant_ids(current)) == 4 and len(relevant_ids(draft)) == 1
    removed = [entry["item"].obj.pk for section in current.sections for entry in section["items"]
               if entry["state"] == "removed"]
    assert sorted(removed) == sorted(set(relevant_ids(current)) - set(relevant_ids(draft)))
    assert current.removed == 3 and draft.added == 0
    assert draft.context.budget.top_n == 1 and draft.context.budget.sources["top_n"] == "workspace"
    html = response.content.decode()
    assert html.count('class="item removed"') == 3 and "−3 items in the draft" in html


def test_a_larger_draft_shows_the_added_items(viewer_client, admin_principal, launch):
    policy_set(principal=admin_principal, changes={"top_n": 1})
    response = viewer_client.get(URL, {**CALL, "q": "launch", "draft-top_n": "4"})
    current, draft = response.context["current"], response.context["draft"]
    assert current.context.budget.sources["top_n"] == "team" and len(relevant_ids(current)) == 1
    assert draft.added == 3 and response.content.decode().count('class="item added"') == 3


def test_a_draft_switch_and_minimum_confidence_leave_out_nodes_with_their_reasons(viewer_client, principal, launch):
    weak = make_node(principal, user_id="u1", type="fact", title="launch rumour", confidence=0.3)
    response = viewer_client.get(URL, {**CALL, "q": "launch", "draft-min_confidence": "0.5", "draft-l3_enabled": "off"})
    draft = response.context["draft"]
    assert {(row["node_id"], row["reason"]) for row in draft.omitted} >= {(weak.pk, "low_confidence")}
    assert draft.context.chars_by_layer["L3"] == 0 and response.context["current"].context.chars_by_layer["L3"] > 0
    html = response.content.decode()
    assert f'<a href="{reverse("dashboard:node", args=[weak.pk])}">#{weak.pk}</a>' in html and "new in draft" in html


def test_draft_values_out_of_range_come_back_with_the_services_message(viewer_client, launch):
    response = viewer_client.get(URL, {**CALL, "q": "launch", "draft-top_n": "999", "draft-min_confidence": "2"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "must be between 0 and 50, or null to inherit" in html
    assert "must be between 0.0 and 1.0, or null to inherit" in html
    assert response.context["current"] is None


@pytest.mark.parametrize("params", [
    {"draft-max_chars": "abc"}, {"draft-max_chars": "9" * 5000}, {"draft-top_n": "1e3"},
    {"draft-min_confidence": "nan"}, {"draft-l0_enabled": "maybe"}, {"workspace_id": "x" * 200},
    {"session_id": "a\tb"}, {"q": "a\x00b"}, {"q": "q" * 5000}, {"user_id": ".."},
    {"timezone": "Mars/Olympus"}, {"timezone": "../../etc/passwd"}, {"timezone": "z" * 100},
])
def test_bad_input_is_a_400_with_a_message_never_a_500(viewer_client, params):
    response = viewer_client.get(URL, params)
    assert response.status_code == 400
    assert "Not previewed" in response.content.decode()


def test_the_preview_dates_earlier_messages_in_the_time_zone_given(viewer_client, agent_client, principal):
    from datetime import UTC, datetime

    append(principal, "launch rehearsal done", workspace_id="w1", user_id="u1", session_id="s-old",
           occurred_at=datetime(2024, 2, 29, 23, 30, tzinfo=UTC))
    append(principal, "hello", **CALL)
    api = agent_client.post("/api/v1/context", {**CALL, "query": "launch rehearsal", "timezone": "Asia/Shanghai"},
                            format="json").json()["block"]
    shown = viewer_client.get(URL, {**CALL, "q": "launch rehearsal", "timezone": "Asia/Shanghai"}).context["current"]
    assert shown.context.block == api and "- [2024-03-01] user: launch rehearsal done" in api.splitlines()
    in_utc = viewer_client.get(URL, {**CALL, "q": "launch rehearsal"}).context["current"].context.block
    assert "- [2024-02-29] user: launch rehearsal done" in in_utc.splitlines()


def test_the_fragment_is_only_the_preview(viewer_client, launch):
    response = viewer_client.get(URL, {**CALL, "q": "launch"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="preview">') and "<html" not in html and "launch fact 0" in html


def test_the_pickers_offer_the_teams_ids_only(viewer_client, principal, other_principal):
    append(principal, "hi", session_id="chat-1", workspace_id="家里", user_id="小明")
    append(other_principal, "hi", session_id="globex-chat", workspace_id="globex-ws", user_id="globex-user")
    html = viewer_client.get(URL).content.decode()
    assert '<datalist id="known-sessions"><option value="chat-1">家里 · 小明</option></datalist>' in html
    assert '<option value="家里">' in html and '<option value="小明">' in html
    assert "globex" not in html


def test_another_teams_memories_never_show(viewer_client, principal, other_principal):
    make_node(other_principal, user_id="u1", type="fact", title="globex launch secret")
    append(other_principal, "globex planning the launch", **CALL)
    response = viewer_client.get(URL, {**CALL, "q": "launch"})
    assert response.status_code == 200 and "globex" not in response.content.decode()


def test_payloads_in_ids_and_the_question_render_inert(viewer_client, principal):
    make_node(principal, scope="workspace", workspace_id=SCRIPT, type="fact", title=ALL, content=ALL)
    append(principal, ALL, session_id="s1", workspace_id=SCRIPT, user_id="u1")
    params = {"workspace_id": SCRIPT, "user_id": "u1", "session_id": "s1", "q": ALL, "draft-max_chars": "60"}
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = viewer_client.get(URL, params, **headers)
        html = response.content.decode()
        assert response.status_code == 200 and injected(html) == {}
        assert ESCAPED[0] in html


def test_a_login_is_required(client):
    response = client.get(URL)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_without_ids_the_page_offers_the_recent_conversations_to_start_from(viewer_client, principal):
    append(principal, "hi", session_id="做饭-1", workspace_id="家里", user_id="小明")
    html = viewer_client.get(URL).content.decode()
    start = html.index('<nav class="recent-sessions"')
    offered = html[start:html.index("</nav>", start)]
    assert ('href="/preview?workspace_id=%E5%AE%B6%E9%87%8C&amp;user_id=%E5%B0%8F%E6%98%8E&amp;'
            'session_id=%E5%81%9A%E9%A5%AD-1">做饭-1') in offered
    assert "家里 · 小明" in offered
    picked = viewer_client.get(URL, {"workspace_id": "家里", "user_id": "小明", "session_id": "做饭-1"})
    assert 'class="recent-sessions"' not in picked.content.decode()


def test_a_team_without_conversations_is_told_what_to_type(viewer_client):
    html = viewer_client.get(URL).content.decode()
    assert "No conversations recorded yet: type the ids an agent would send." in html


def test_left_out_nodes_are_counted_by_reason_and_the_first_ones_listed_the_drafts_first(viewer_client, principal,
                                                                                         monkeypatch):
    monkeypatch.setattr("dashboard.views.preview.OMITTED_SHOWN", 5)
    append(principal, "planning the launch", **CALL)
    for index in range(8):  # replaced facts the question finds: each old version is left out as superseded
        old = make_node(principal, user_id="u1", type="fact", key=f"plan{index}", title=f"old launch plan {index}")
        node_supersede(principal=principal, old_node_id=old.pk, reason="changed",
                       data=supersede_input(old, {"title": f"launch plan {index}"}, {}))
    make_node(principal, user_id="u1", type="fact", title="launch rumour", confidence=0.3)
    response = viewer_client.get(URL, {**CALL, "q": "launch", "draft-min_confidence": "0.5"})
    current, draft = response.context["current"], response.context["draft"]
    for side in (current, draft):
        assert sum(count for _, count in side.omitted_by_reason) == side.omitted_total == len(side.context.omitted)
        assert side.omitted_total > 5 and len(side.omitted) == 5
    assert dict(draft.omitted_by_reason) == {"superseded": 8, "low_confidence": 1}
    assert draft.omitted_by_reason[0] == ("superseded", 8)
    states = [row["state"] for row in draft.omitted]
    assert states == ["added", "", "", "", ""] and draft.omitted[0]["title"] == "launch rumour"
    html = response.content.decode()
    assert "<b>9</b> nodes:" in html and "the first 5 listed, what the draft newly leaves out first" in html
    assert html.count("old launch plan") == 4 + 5


def test_messages_a_layer_cap_leaves_out_are_listed_under_left_out_with_the_cap(viewer_client, admin_principal,
                                                                                principal):
    policy_set(principal=admin_principal, workspace_id="w1", changes={"max_chars": 400, "top_n": 3, "l5_chars": 200})
    turns = [append(principal, f"we planted roses in the garden bed number {index} " + "x" * 60,
                    session_id=f"old{index}", user_id="u1", workspace_id="w1")[0] for index in range(3)]
    append(principal, "hello", **CALL)
    response = viewer_client.get(URL, {**CALL, "q": "garden roses"})
    current = response.context["current"]
    assert current.context.omitted == [] and "2 item(s) left out to stay within l5_chars=200" in current.context.warnings
    assert [(row["item"].section, row["limit"]) for row in current.dropped] == [("earlier_messages", "l5_chars=200")] * 2
    html = response.content.decode()
    assert "Nothing left out." not in html and "<b>2</b> other items left out for the budget:" in html
    left_out = html.split('<ul class="dropped">')[1].split("</ul>")[0]
    assert sum(f"message #{turn.pk}</a>" in left_out for turn in turns) == 2 and left_out.count("l5_chars=200") == 2
