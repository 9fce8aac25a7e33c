"""Explaining a context call from the hit ledger (R-CTX: which memories were used and why,
in plain words — no scores, no SQL)."""

from typing import Any

from accounts.principal import Principal
from memory.errors import NotFound
from memory.kpi_models import RetrievalFeedback
from memory.models import Node, Retrieval


def retrieval_get(*, principal: Principal, retrieval_id: int) -> Retrieval:
    """A hit-ledger row of the team. Raises NotFound — also for a key limited to workspaces
    when the call was made outside them (or in no workspace)."""
    retrieval = Retrieval.objects.filter(team=principal.team, pk=retrieval_id).select_related("session").first()
    if retrieval is None or not principal.can_read_workspace(retrieval.workspace_id):
        raise NotFound(f"no retrieval {retrieval_id}")
    return retrieval


def retrieval_feedback(*, retrieval: Retrieval) -> RetrievalFeedback | None:
    """The agent's report on what its answer used of this call (memory.services.feedback), or None."""
    feedback = RetrievalFeedback.objects.filter(team=retrieval.team_id, retrieval=retrieval).first()
    if feedback is not None:
        feedback.retrieval = retrieval
    return feedback


def explain_omission(reason: str, node_id: int) -> str:
    return {
        "expired": "it has expired",
        "superseded": "a newer memory replaced it",
        "low_confidence": "its confidence is below the minimum",
        "conflict_lost": "another memory with the same key takes precedence",
        "over_limit": "left out to stay within the budget",
        "layer_disabled": "its layer is switched off by the budget policy",
        "same_text": "another memory in the block says the same",
    }.get(reason, reason)


def explain_item(ref: dict[str, Any]) -> str:
    why = ref.get("why")
    if why == "relevant" and ref.get("matched"):
        return "relevant to the query (matched " + ", ".join(ref["matched"]) + ")"
    return {
        "session_memory": "remembered for this session",
        "workspace_memory": "a standing workspace or team memory",
        "user_preference": "a preference or constraint of this user",
        "relevant": "relevant to the query",
        "summary": "the latest summary of this conversation",
        "recent_message": "one of the latest messages of this conversation",
        "followup": "the turn after an earlier message that matched",
        "said_then": "said at the time the query names",
    }.get(why, why or "")


def retrieval_explain(*, principal: Principal, retrieval: Retrieval) -> dict[str, Any]:
    """What a context call injected and left out, and why, in plain words (no scores, no SQL)."""
    node_ids = [ref["id"] for ref in retrieval.items if ref["kind"] == "node"] + [
        item["node_id"] for item in retrieval.omitted
    ]
    titles = dict(Node.objects.filter(team=principal.team, pk__in=node_ids).values_list("pk", "title"))
    used = []
    for ref in retrieval.items:
        entry = {"kind": ref["kind"], "id": ref["id"], "layer": ref["layer"], "section": ref["section"],
                 "why": explain_item(ref), "chars": ref["chars"]}
        if ref["kind"] == "node":
            entry["title"] = titles.get(ref["id"], "(forgotten)")
        used.append(entry)
    omitted = [
        {"node_id": item["node_id"], "reason": item["reason"], "title": titles.get(item["node_id"], "(forgotten)"),
         "why": explain_omission(item["reason"], item["node_id"])}
        for item in retrieval.omitted
    ]
    return {"used": used, "omitted": omitted}
