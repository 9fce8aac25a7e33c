"""The two teams the fuzzer calls as: team A holds canary-marked data of every kind, team B a little of its own."""

from typing import Any

from django.urls import reverse

from accounts.models import KeyKind
from accounts.principal import principal_for_key
from accounts.services import agent_key_create, team_create
from memory.models import (
    AuditEvent,
    BudgetPolicy,
    LexiconSet,
    Message,
    Node,
    Summary,
    UserProfile,
    UserProfileVersion,
)
from memory.services.sessions import SessionRef
from memory.services.summaries import SummaryInput, summary_append
from memory.services.working_memory import working_memory_put
from tests.conftest import key_client
from tests.fuzz.harness import A_CTX, CANARY, Caller
from tests.helpers import append, make_node


def plant(principal, ctx: dict[str, str], marker: str, ws_marker: str = "") -> dict[str, Any]:
    """Messages, a summary, nodes of three scopes, working memory, a profile and a policy in
    `principal`'s team, each carrying `marker`; what belongs to the workspace (the session's
    messages, summary and working memory, the workspace and session nodes) carries `ws_marker`
    too. Returns the ids an attacker would aim at."""
    ref = SessionRef(ctx["session_id"], ctx["workspace_id"], ctx["user_id"])
    ws = f"{marker} {ws_marker}".strip()
    messages = append(principal, f"my note {ws}", f"second note {ws}", **ctx)
    summary_append(principal=principal, data=SummaryInput(session=ref, summary=f"summary {ws}",
                                                          from_message_id=messages[0].pk,
                                                          to_message_id=messages[-1].pk))
    working_memory_put(principal=principal, ref=ref, data={"current_goal": ws, "references": {"it": ws}})
    node = make_node(principal, scope="workspace", workspace_id=ctx["workspace_id"], type="fact",
                     title=f"fact of {ctx['session_id']} {ws}", source_message_ids=[messages[0].pk])
    make_node(principal, scope="user", user_id=ctx["user_id"], type="preference",
              title=f"likes {ctx['session_id']} {marker}")
    make_node(principal, scope="session", session_id=ctx["session_id"], workspace_id=ctx["workspace_id"],
              user_id=ctx["user_id"], type="task", title=f"task of {ctx['session_id']} {ws}")
    team = principal.team
    if not UserProfile.objects.filter(team=team, user_id=ctx["user_id"]).exists():  # one per end user
        UserProfile.objects.create(team=team, user_id=ctx["user_id"], current_version=1)
        UserProfileVersion.objects.create(team=team, user_id=ctx["user_id"], version=1, summary=marker,
                                          content=marker, reason="consolidate", actor="system:consolidation")
    BudgetPolicy.objects.get_or_create(team=team, workspace_id=ctx["workspace_id"],
                                       defaults={"max_chars": 2000, "updated_by": ws})
    # Synonym sets stored as the canaries are (not normalised): a leaked set shows them as they are.
    team_set, _ = LexiconSet.objects.get_or_create(team=team, workspace_id="", terms_key=f"plant {marker}"[:64],
                                                   defaults={"terms": [marker, "planted synonym"], "updated_by": marker})
    ws_set, _ = LexiconSet.objects.get_or_create(team=team, workspace_id=ctx["workspace_id"],
                                                 terms_key=f"plant {ws}"[:64],
                                                 defaults={"terms": [ws, "planted synonym"], "updated_by": ws})
    return {"node": node.pk, "message": messages[0].pk, "lexicon_team": team_set.pk, "lexicon_ws": ws_set.pk, **ctx}


def build_world() -> dict[str, Any]:
    """Teams `fuzz-a` and `fuzz-b`; returns the callers, team A's targets and a fingerprint of A's data."""
    team_a = team_create(slug="fuzz-a", name="Team A")
    team_b = team_create(slug="fuzz-b", name="Team B")
    a_key, a_raw = agent_key_create(team=team_a, name="a admin", kind=KeyKind.ADMIN)
    targets = plant(principal_for_key(a_key), A_CTX, CANARY)
    context = key_client(a_raw).post(reverse("api-context"), {**A_CTX, "query": CANARY}, format="json")
    assert context.status_code == 200, context.content
    targets["retrieval"] = context.json()["retrieval_id"]
    b_key, b_raw = agent_key_create(team=team_b, name="b agent")
    plant(principal_for_key(b_key), {"workspace_id": "w-beta", "user_id": "u-beta", "session_id": "s-beta"},
           "team B's own")
    b_admin_raw = agent_key_create(team=team_b, name="b admin", kind=KeyKind.ADMIN)[1]
    return {
        "team_a": team_a, "targets": targets, "fingerprint": fingerprint(team_a),
        "team_b": [Caller("team B agent key", b_raw, watch_leaks=True),
                   Caller("team B admin key", b_admin_raw, watch_leaks=True)],
        "team_a_caller": Caller("team A admin key", a_raw, watch_leaks=False),
    }


def fingerprint(team) -> dict[str, Any]:
    """What team B must never change in team A: its rows, their content, and who wrote its audit trail."""
    return {
        "messages": sorted(Message.objects.filter(team=team).values_list("pk", "content")),
        "summaries": sorted(Summary.objects.filter(team=team).values_list("pk", "summary")),
        "nodes": sorted(Node.objects.filter(team=team).values_list("pk", "title", "status")),
        "audit_actors": sorted(set(AuditEvent.objects.filter(team=team).values_list("actor", flat=True))),
    }
