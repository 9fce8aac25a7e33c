"""Forgetting a whole conversation: DELETE /api/v1/sessions/{session_id} (R-STORE provable
forgetting, R-TEN, S05, S07). Values, not just status codes: rows per table before and after,
every audit payload and ledger query grepped for the conversation's marker text."""

import json
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.urls import reverse

from accounts.services import agent_key_create
from memory.errors import Conflict, InvalidInput
from memory.models import AuditEvent, Message, Node, NodeSource, NodeStatus, Retrieval, Session, Summary
from memory.search.fields import TokenQuery
from memory.services import forget
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from tests.conftest import key_client
from tests.helpers import append, index_hits, make_node

MARKER = "ZEBRA-MARKER-7"
MARKER_ZH = "斑马标记"
S1 = {"session_id": "s1", "workspace_id": "w1", "user_id": "u1"}
S2 = {"session_id": "s2", "workspace_id": "w1", "user_id": "u1"}


def forget_url(session_id="s1", **params):
    query = {"workspace_id": "w1", "user_id": "u1", **params}
    return reverse("api-session", args=[session_id]) + "?" + urlencode(query)


def forget_call(client, mode="hard", session_id="s1", **params):
    return client.delete(forget_url(session_id, mode=mode, **params))


@pytest.fixture
def world(principal, other_principal, agent_client):
    """Team acme: the conversation s1 to forget (messages, a summary, a session node, a node derived
    only from it, a node shared with s2), the same user's s2, and ledger rows of both; team
    globex holds the same ids and the same marker."""
    s1 = append(principal, f"我不吃香菜 {MARKER}", f"{MARKER_ZH} project code", "we shipped the release", **S1)
    s2 = append(principal, "OKAPI-KEEP-3 a different conversation", "the release went out", **S2)
    summary_append(principal=principal, data=SummaryInput(session=SessionRef("s1", "w1", "u1"),
                                                          summary=f"summary of {MARKER} {MARKER_ZH}"))
    session_node = make_node(principal, scope="session", type="task", title=f"{MARKER} follow-up",
                             source_message_ids=[s1[0].pk], **S1)
    derived = make_node(principal, scope="user", user_id="u1", type="preference", title=f"{MARKER_ZH} 不吃香菜",
                        content=f"said in {MARKER}", source_message_ids=[s1[0].pk, s1[1].pk])
    shared = make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="release shipped",
                       source_message_ids=[s1[2].pk, s2[1].pk])
    other_node = make_node(principal, scope="user", user_id="u1", type="fact", title="OKAPI-KEEP-3 fact",
                           source_message_ids=[s2[0].pk])
    # No recent window: the summary covers a turn the block does not show, so it is injected (and recorded).
    agent_client.post(reverse("api-context"), {**S1, "query": f"{MARKER} {MARKER_ZH}", "budget": {"recent_messages": 0}},
                      format="json")
    agent_client.post(reverse("api-context"), {**S2, "query": "香菜"}, format="json")
    append(other_principal, f"globex {MARKER} {MARKER_ZH}", **S1)
    globex_node = make_node(other_principal, scope="user", user_id="u1", title=f"globex {MARKER} {MARKER_ZH}")
    return {"s1": s1, "s2": s2, "session_node": session_node, "derived": derived, "shared": shared,
            "other_node": other_node, "globex_node": globex_node}


def session_rows(session: Session) -> dict[str, int]:
    return {
        "messages": Message.objects.filter(session=session).count(),
        "summaries": Summary.objects.filter(session=session).count(),
        "session_nodes": Node.objects.filter(session=session).count(),
        "source_links": NodeSource.objects.filter(message__session=session).count(),
        "retrievals": Retrieval.objects.filter(session=session).count(),
    }


def marker_hits(team) -> dict[str, int]:
    """Rows of `team` that still hold the marker text anywhere we keep text."""
    def holds(text: str) -> bool:
        text = text.casefold()
        return "zebra" in text or "斑马" in text

    return {
        "audit_payloads": sum(holds(json.dumps(event.payload, ensure_ascii=False))
                              for event in AuditEvent.objects.filter(team=team)),
        "retrievals": sum(holds(r.query + json.dumps(r.items, ensure_ascii=False))
                          for r in Retrieval.objects.filter(team=team)),
        "messages": sum(holds(m.content + m.search_tokens) for m in Message.objects.filter(team=team)),
        "summaries": sum(holds(s.summary) for s in Summary.objects.filter(team=team)),
        "nodes": sum(holds(n.title + n.content + n.search_tokens) for n in Node.objects.filter(team=team)),
    }


# ---- hard ---------------------------------------------------------------------------------


def test_hard_forget_removes_the_sessions_rows_and_reports_counts(agent_client, world, team):
    session = Session.objects.get(team=team, external_id="s1")
    assert session_rows(session) == {"messages": 3, "summaries": 1, "session_nodes": 1, "source_links": 4,
                                     "retrievals": 1}
    response = forget_call(agent_client, reason="user asked")
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "hard" and body["session_id"] == "s1"
    assert body["counts"] == {"messages": 3, "summaries": 1, "working_memory": 0, "nodes": 2, "source_links": 4,
                              "retrievals_redacted": 2, "audit_events_redacted": 2}
    assert sorted(body["node_ids"]) == sorted([world["session_node"].pk, world["derived"].pk])
    assert body["kept_node_ids"] == [world["shared"].pk]
    assert session_rows(session) == {"messages": 0, "summaries": 0, "session_nodes": 0, "source_links": 0,
                                     "retrievals": 0}
    assert not Session.objects.filter(team=team, external_id="s1").exists()
    assert not Node.objects.filter(pk__in=body["node_ids"]).exists()
    assert not Message.objects.filter(pk__in=[m.pk for m in world["s1"]]).exists()


def test_after_a_hard_forget_no_payload_ledger_row_or_index_holds_the_sessions_text(
    agent_client, world, team, other_team
):
    assert marker_hits(team) == {"audit_payloads": 2, "retrievals": 1, "messages": 2, "summaries": 1, "nodes": 2}
    globex = marker_hits(other_team)
    assert forget_call(agent_client).status_code == 200
    assert marker_hits(team) == {"audit_payloads": 0, "retrievals": 0, "messages": 0, "summaries": 0, "nodes": 0}
    assert marker_hits(other_team) == globex and globex["messages"] == 1 and globex["nodes"] == 1
    # The keyword index itself (FTS5 table on SQLite, the tsvector column on PostgreSQL).
    for token in ("zebra", "斑马"):
        assert index_hits(Message, token) == 1 and index_hits(Node, token) == 1  # globex's only
        matching = Node.objects.filter(team=team, search_tokens__matches=TokenQuery((token,)))
        assert matching.count() == 0
        assert Message.objects.filter(team=team, search_tokens__matches=TokenQuery((token,))).count() == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the tsvector column exists on PostgreSQL only")
def test_on_postgresql_no_search_vector_of_the_team_matches_the_marker(agent_client, world, team):
    def count(table: str, token: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {table} WHERE team_id = %s AND "
                           f"search_vector @@ to_tsquery('simple', %s)", [team.pk, f"'{token}'"])
            return cursor.fetchone()[0]

    assert count("memory_node", "zebra") == 2 and count("memory_message", "斑马") == 1
    forget_call(agent_client)
    assert [count(table, token) for table in ("memory_node", "memory_message") for token in ("zebra", "斑马")] == \
        [0, 0, 0, 0]


def sightings(client, world) -> set[str]:
    """Where s1's text or its own nodes show up through the API."""
    seen = set()
    if client.get(reverse("api-messages"), S1).json()["results"]:
        seen.add("messages")
    if client.get(reverse("api-summaries"), S1).status_code == 200:
        seen.add("summaries")
    if client.get(reverse("api-summary-latest"), S1).status_code == 200:
        seen.add("latest summary")
    for query in ("zebra", MARKER_ZH):
        search = client.post(reverse("api-memory-search"), {**S1, "query_text": query}, format="json").json()
        if search["exact"] or search["relevant"]:
            seen.add(f"search {query}")
        for body in (S1, S2):
            context = client.post(reverse("api-context"), {**body, "query": query}, format="json").json()
            text = json.dumps(context, ensure_ascii=False).casefold()
            if "zebra" in text or "斑马" in text:
                seen.add(f"context {body['session_id']} {query}")
        listed = client.get(reverse("api-nodes"), {"q": query}).json()["results"]
        if any(node["status"] != "deleted" for node in listed):
            seen.add(f"nodes q={query}")
    if client.get(reverse("api-nodes"), {"session_id": "s1", "status": "active"}).json()["results"]:
        seen.add("active nodes of s1")
    for name in ("session_node", "derived"):
        node_id = world[name].pk
        got = client.get(reverse("api-node", args=[node_id]))
        if got.status_code == 200 and got.json()["status"] != "deleted":
            seen.add(f"{name} by id")
        if client.post(reverse("api-memory-get"), {"id": node_id}, format="json").status_code == 200:
            seen.add(f"{name} memory/get")
    return seen


EVERYWHERE = {
    "messages", "summaries", "latest summary", "search zebra", f"search {MARKER_ZH}", "context s1 zebra",
    f"context s1 {MARKER_ZH}", "context s2 zebra", f"context s2 {MARKER_ZH}", "nodes q=zebra", f"nodes q={MARKER_ZH}",
    "active nodes of s1", "session_node by id", "derived by id", "session_node memory/get", "derived memory/get",
}


def test_after_a_hard_forget_nothing_of_the_session_is_found_anywhere(agent_client, world):
    assert sightings(agent_client, world) == EVERYWHERE
    forget_call(agent_client)
    assert sightings(agent_client, world) == set()
    for name in ("session_node", "derived"):
        assert agent_client.get(reverse("api-node", args=[world[name].pk])).status_code == 404
        assert agent_client.get(reverse("api-node-history", args=[world[name].pk])).status_code == 404
    assert agent_client.get(reverse("api-nodes"), {"session_id": "s1"}).json()["results"] == []
    for query in ("zebra", MARKER_ZH):
        assert agent_client.get(reverse("api-nodes"), {"q": query}).json()["results"] == []


def test_a_node_cited_by_two_sessions_survives_with_only_the_other_source(agent_client, world):
    shared = world["shared"]
    forget_call(agent_client)
    shared.refresh_from_db()
    assert shared.status == NodeStatus.ACTIVE and shared.source_message_ids == [world["s2"][1].pk]
    body = agent_client.get(reverse("api-node", args=[shared.pk])).json()
    assert body["title"] == "release shipped" and body["source_message_ids"] == [world["s2"][1].pk]


def test_the_users_other_session_and_the_other_team_are_untouched(agent_client, other_agent_client, world, team):
    s2 = Session.objects.get(team=team, external_id="s2")
    before = session_rows(s2)
    forget_call(agent_client)
    assert session_rows(s2) == before
    assert [m["content"] for m in agent_client.get(reverse("api-messages"), S2).json()["results"]] == \
        ["OKAPI-KEEP-3 a different conversation", "the release went out"]
    assert Node.objects.get(pk=world["other_node"].pk).status == NodeStatus.ACTIVE
    recalled = agent_client.post(reverse("api-context"), {**S1, "session_id": "s3", "query": "okapi"},
                                 format="json").json()
    assert [m["content"] for m in recalled["relevant_messages"]] == ["OKAPI-KEEP-3 a different conversation"]
    globex = other_agent_client.get(reverse("api-messages"), S1).json()["results"]
    assert [m["content"] for m in globex] == [f"globex {MARKER} {MARKER_ZH}"]
    assert Node.objects.filter(pk=world["globex_node"].pk).exists()


def test_hard_forget_audits_one_event_per_removed_node_and_one_for_the_session(agent_client, agent_key, world, team):
    forget_call(agent_client, reason="user asked")
    actor = f"key:{agent_key[0].prefix}"
    session_events = AuditEvent.objects.filter(team=team, event_type="memory.session.hard_deleted")
    assert session_events.count() == 1
    event = session_events.get()
    assert (event.session_id, event.workspace_id, event.user_id) == ("s1", "w1", "u1")
    assert event.actor == actor and event.actor_key_id == agent_key[0].pk and event.reason == "user asked"
    assert event.payload["counts"]["messages"] == 3 and event.payload["kept_node_ids"] == [world["shared"].pk]
    node_events = AuditEvent.objects.filter(team=team, event_type="memory.node.hard_deleted").order_by("node_id")
    assert [e.node_id for e in node_events] == sorted([world["session_node"].pk, world["derived"].pk])
    assert {(e.actor, e.reason, e.payload["with_session"]) for e in node_events} == {(actor, "user asked", "s1")}
    assert node_events.get(node_id=world["derived"].pk).payload["previous_status"] == "active"
    # Every earlier event of a removed node is kept, with its content redacted.
    created = AuditEvent.objects.filter(node_id__in=[e.node_id for e in node_events], event_type="memory.node.created")
    assert created.count() == 2 and all(e.payload["redacted"] and e.payload["node"]["title"] == "[forgotten]"
                                        for e in created)


def test_s07_one_audit_row_per_memory_that_left_the_store(agent_client, world, team):
    before = AuditEvent.objects.filter(team=team, event_type__startswith="memory.node.").exclude(
        event_type="memory.node.created").count()
    body = forget_call(agent_client).json()
    after = AuditEvent.objects.filter(team=team, event_type__startswith="memory.node.").exclude(
        event_type="memory.node.created")
    assert after.count() - before == len(body["node_ids"]) == 2
    assert sorted(after.values_list("node_id", flat=True)) == sorted(body["node_ids"])


def test_ledger_rows_keep_their_sizes_but_lose_the_sessions_text_and_ids(agent_client, world, team):
    own = Retrieval.objects.get(team=team, session__external_id="s1")
    other = Retrieval.objects.get(team=team, session__external_id="s2")
    recalled = world["s1"][0].pk
    assert own.message_ids and own.summary_id and recalled in other.message_ids
    sizes = (own.total_chars, own.chars_by_layer, own.used_node_ids)
    forget_call(agent_client)
    own.refresh_from_db()
    other.refresh_from_db()
    assert own.session_id is None and own.query == "[forgotten]"
    assert own.message_ids == [] and own.summary_id is None
    assert (own.total_chars, own.chars_by_layer, own.used_node_ids) == sizes
    assert all(item["matched"] == [] for item in own.items)
    assert all(item["id"] is None for item in own.items if item["kind"] in ("message", "summary"))
    assert other.query == "香菜" and recalled not in other.message_ids
    assert all(item["id"] != recalled for item in other.items)
    explained = agent_client.get(reverse("api-retrieval", args=[own.pk])).json()
    assert explained["query"] == "[forgotten]" and explained["session_id"] == ""


def test_a_session_id_with_a_slash_can_be_forgotten(agent_client, principal):
    append(principal, "hello", session_id="chat/2024", user_id="u1", workspace_id="w1")
    response = forget_call(agent_client, session_id="chat/2024")
    assert response.status_code == 200 and response.json()["counts"]["messages"] == 1
    assert not Session.objects.filter(external_id="chat/2024").exists()


def test_the_same_ids_after_a_hard_forget_start_a_new_empty_session(agent_client, principal, world):
    forget_call(agent_client)
    append(principal, "a fresh start", **S1)
    contents = [m["content"] for m in agent_client.get(reverse("api-messages"), S1).json()["results"]]
    assert contents == ["a fresh start"]


def test_a_failure_before_commit_leaves_everything_as_it_was(principal, world, team, monkeypatch):
    session = Session.objects.get(team=team, external_id="s1")
    rows, hits = session_rows(session), marker_hits(team)
    events = AuditEvent.objects.filter(team=team).count()
    real = forget.audit_record

    def failing(**kwargs):
        if kwargs["event_type"] == "memory.session.hard_deleted":
            raise RuntimeError("disk full")
        return real(**kwargs)

    monkeypatch.setattr(forget, "audit_record", failing)
    with pytest.raises(RuntimeError):
        forget.session_forget(principal=principal, ref=SessionRef("s1", "w1", "u1"), mode="hard")
    assert session_rows(session) == rows and marker_hits(team) == hits
    assert AuditEvent.objects.filter(team=team).count() == events
    assert Node.objects.filter(pk=world["derived"].pk, status=NodeStatus.ACTIVE).exists()


# ---- soft ---------------------------------------------------------------------------------


def test_soft_forget_hides_messages_summaries_and_derived_nodes_but_keeps_the_rows(agent_client, world, team):
    assert sightings(agent_client, world) == EVERYWHERE
    session = Session.objects.get(team=team, external_id="s1")
    rows = session_rows(session)
    response = forget_call(agent_client, mode="soft", reason="pause")
    assert response.status_code == 200
    assert response.json()["counts"] == {"messages": 3, "summaries": 1, "working_memory": 0, "nodes": 2, "source_links": 0,
                                         "retrievals_redacted": 0, "audit_events_redacted": 0}
    session.refresh_from_db()
    assert session.deleted_at is not None and session_rows(session) == rows
    # By id a soft-deleted node still answers, with status deleted (memory/get by id reads any status).
    assert sightings(agent_client, world) == {"session_node memory/get", "derived memory/get"}
    for name in ("session_node", "derived"):
        assert agent_client.get(reverse("api-node", args=[world[name].pk])).json()["status"] == "deleted"
    search = agent_client.post(reverse("api-memory-search"), {**S1, "query_text": "zebra"}, format="json").json()
    assert search["omitted"] == []  # deleted nodes are never reported
    assert Node.objects.get(pk=world["shared"].pk).status == NodeStatus.ACTIVE
    assert marker_hits(team)["audit_payloads"] == 2  # nothing redacted: soft is reversible


def test_soft_forget_audits_each_node_once_and_the_session_once(agent_client, agent_key, world, team):
    forget_call(agent_client, mode="soft", reason="pause")
    node_events = AuditEvent.objects.filter(team=team, event_type="memory.node.deleted")
    assert sorted(node_events.values_list("node_id", flat=True)) == sorted([world["session_node"].pk,
                                                                            world["derived"].pk])
    assert {(e.payload["mode"], e.payload["previous_status"], e.reason) for e in node_events} == \
        {("soft", "active", "pause")}
    event = AuditEvent.objects.get(team=team, event_type="memory.session.deleted")
    assert event.actor == f"key:{agent_key[0].prefix}" and event.session_id == "s1" and event.reason == "pause"


def test_repeating_a_soft_forget_is_a_conflict_and_changes_nothing(agent_client, world, team):
    forget_call(agent_client, mode="soft")
    events = AuditEvent.objects.filter(team=team).count()
    response = forget_call(agent_client, mode="soft")
    assert response.status_code == 409 and response.json()["error"]["code"] == "conflict"
    assert AuditEvent.objects.filter(team=team).count() == events


def test_mode_defaults_to_soft(agent_client, world, team):
    response = agent_client.delete(forget_url())
    assert response.status_code == 200 and response.json()["mode"] == "soft"
    assert Session.objects.get(team=team, external_id="s1").deleted_at is not None


def test_a_hard_forget_of_a_soft_deleted_session_removes_it(agent_client, world, team):
    forget_call(agent_client, mode="soft")
    response = forget_call(agent_client, mode="hard")
    assert response.status_code == 200
    assert response.json()["counts"]["messages"] == 3 and response.json()["counts"]["nodes"] == 2
    assert marker_hits(team) == {"audit_payloads": 0, "retrievals": 0, "messages": 0, "summaries": 0, "nodes": 0}
    for node in (world["session_node"], world["derived"]):
        assert list(AuditEvent.objects.filter(node_id=node.pk).exclude(event_type="memory.node.created")
                    .order_by("pk").values_list("event_type", flat=True)) == \
            ["memory.node.deleted", "memory.node.hard_deleted"]
    assert forget_call(agent_client, mode="hard").status_code == 404


def test_a_soft_deleted_session_takes_no_new_messages_memories_or_sources(agent_client, principal, world):
    forget_call(agent_client, mode="soft")
    response = agent_client.post(reverse("api-messages"), {**S1, "role": "user", "content": "more"}, format="json")
    assert response.status_code == 409
    with pytest.raises(Conflict):
        make_node(principal, scope="session", type="task", title="more", **S1)
    with pytest.raises(InvalidInput):
        make_node(principal, scope="workspace", workspace_id="w1", type="fact", title="x",
                  source_message_ids=[world["s1"][0].pk])
    assert Message.objects.filter(session__external_id="s1", session__team=principal.team).count() == 3


# ---- permissions and input ------------------------------------------------------------------


def test_a_read_only_key_gets_403_and_nothing_changes(readonly_agent_client, world, team):
    rows = session_rows(Session.objects.get(team=team, external_id="s1"))
    response = forget_call(readonly_agent_client)
    assert response.status_code == 403
    assert session_rows(Session.objects.get(team=team, external_id="s1")) == rows


def test_a_logged_in_viewer_gets_403_and_an_editor_may_forget(client, viewer, editor, world):
    client.force_login(viewer)
    assert forget_call(client, mode="soft").status_code == 403
    client.force_login(editor)
    assert forget_call(client, mode="soft").status_code == 200


def test_another_teams_key_gets_404_and_changes_nothing(other_agent_client, world, team):
    rows = session_rows(Session.objects.get(team=team, external_id="s1"))
    Session.objects.filter(team__slug="globex").delete()  # globex's own s1 would answer otherwise
    response = forget_call(other_agent_client)
    assert response.status_code == 404 and MARKER not in response.content.decode()
    assert session_rows(Session.objects.get(team=team, external_id="s1")) == rows


@pytest.mark.parametrize("workspaces", [["w2"], []])
def test_a_key_that_may_not_read_the_workspace_gets_403(team, world, workspaces):
    """As on every other session call: the refusal depends on the workspace named, not on what is stored."""
    client = key_client(agent_key_create(team=team, name="limited", workspace_ids=workspaces)[1])
    response = forget_call(client)
    assert response.status_code == 403 and "may not access workspace 'w1'" in response.json()["error"]["message"]
    assert Session.objects.filter(team=team, external_id="s1", deleted_at__isnull=True).exists()


def test_a_key_that_may_not_write_session_scope_gets_403(team, world):
    client = key_client(agent_key_create(team=team, name="user only", writable_scopes=["user"])[1])
    assert forget_call(client).status_code == 403


def test_a_derived_node_the_caller_may_not_delete_refuses_the_whole_call(
    agent_client, admin_principal, world, team
):
    make_node(admin_principal, scope="global", type="fact", title="team-wide", source_message_ids=[world["s1"][2].pk])
    session = Session.objects.get(team=team, external_id="s1")
    rows = session_rows(session)
    response = forget_call(agent_client)
    assert response.status_code == 403 and "global" in response.json()["error"]["message"]
    assert session_rows(session) == rows and Node.objects.filter(title="team-wide").exists()
    admin = key_client(agent_key_create(team=team, name="admin2", kind="admin")[1])
    assert forget_call(admin).status_code == 200
    assert not Node.objects.filter(title="team-wide").exists()


@pytest.mark.parametrize("session_id,params", [
    ("nope", {}),                      # unknown session
    ("s1", {"user_id": "u2"}),         # same id, another end user
    ("s1", {"workspace_id": "w9"}),    # same id, another workspace
])
def test_an_unknown_session_is_404(agent_client, world, session_id, params):
    response = agent_client.delete(forget_url(session_id, mode="hard", **params))
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("params", [{"mode": "purge"}, {"mode": ""}, {"colour": "red"},
                                    {"reason": "x" * 1001}, {"user_id": " u1"}])
def test_bad_input_is_a_400_and_changes_nothing(agent_client, world, team, params):
    response = agent_client.delete(forget_url(**params))
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"
    assert Session.objects.get(team=team, external_id="s1").deleted_at is None


def test_the_service_rejects_a_bad_mode_before_touching_anything(principal, world):
    with pytest.raises(InvalidInput):
        forget.session_forget(principal=principal, ref=SessionRef("s1", "w1", "u1"), mode="purge")


def test_the_dashboard_node_page_no_longer_shows_a_soft_deleted_sessions_messages(client, viewer, agent_client, world):
    client.force_login(viewer)
    url = reverse("dashboard:node", args=[world["shared"].pk])
    assert "we shipped the release" in client.get(url).content.decode()
    forget_call(agent_client, mode="soft")
    page = client.get(url).content.decode()
    assert "we shipped the release" not in page and "the release went out" in page
