"""The per-session summary chain (seed appendSummary; R-STORE, R-API POST /summaries)."""

from dataclasses import dataclass, field

from django.db import transaction

from accounts.principal import Principal
from memory.errors import InvalidInput
from memory.limits import SUMMARY_LIST_ITEM_MAX, SUMMARY_LIST_ITEMS_MAX, SUMMARY_TEXT_MAX
from memory.models import Message, Session, Summary
from memory.selectors.sessions import session_get
from memory.services.audit import audit_record
from memory.services.sessions import SessionRef
from memory.validation import clean_text

LIST_FIELDS = ("constraints", "preferences", "decisions", "completed_work", "pending_work", "known_issues")


@dataclass(frozen=True)
class SummaryInput:
    session: SessionRef
    summary: str
    from_message_id: int | None = None
    to_message_id: int | None = None
    current_goal: str = ""
    lists: dict[str, list[str]] = field(default_factory=dict)


def _validate(data: SummaryInput) -> None:
    clean_text(data.summary, field="summary", max_length=SUMMARY_TEXT_MAX, allow_empty=False)
    clean_text(data.current_goal, field="current_goal", max_length=SUMMARY_LIST_ITEM_MAX)
    for name, items in data.lists.items():
        if name not in LIST_FIELDS:
            raise InvalidInput(f"unknown summary field {name!r}", fields={name: ["unknown field"]})
        if len(items) > SUMMARY_LIST_ITEMS_MAX:
            raise InvalidInput(f"{name}: at most {SUMMARY_LIST_ITEMS_MAX} items", fields={name: ["too many items"]})
        for item in items:
            clean_text(item, field=name, max_length=SUMMARY_LIST_ITEM_MAX, allow_empty=False)


def summary_append(*, principal: Principal, data: SummaryInput) -> Summary:
    """Append a summary to the session's chain; it links to the session's latest summary.

    The range covers the messages after the previous summary's `to_message` (or from the
    first message): `from_message_id` defaults to that message and, when given, must equal
    it, so ranges never overlap or leave gaps; `to_message_id` defaults to the latest
    message. Raises NotFound (no such session) or InvalidInput (bad range, nothing new).
    """
    _validate(data)
    session = session_get(principal=principal, ref=data.session)
    with transaction.atomic():
        # The lock serialises appends to one chain, so two writers cannot fork it.
        session = Session.objects.select_for_update().get(pk=session.pk)
        parent = Summary.objects.filter(team=principal.team, session=session).order_by("-pk").first()
        messages = Message.objects.filter(team=principal.team, session=session)
        if parent is not None:
            messages = messages.filter(pk__gt=parent.to_message_id)
        first = messages.order_by("pk").values_list("pk", flat=True).first()
        if first is None:
            raise InvalidInput(
                "no messages after the previous summary to summarise", fields={"to_message_id": ["nothing new"]}
            )
        start = data.from_message_id if data.from_message_id is not None else first
        if start != first:
            raise InvalidInput(
                f"from_message_id must be {first}, the first message not yet summarised",
                fields={"from_message_id": [f"must be {first}"]},
            )
        if data.to_message_id is None:
            end = messages.order_by("-pk").values_list("pk", flat=True).first()
        else:
            end = data.to_message_id
            if not messages.filter(pk=end).exists():
                raise InvalidInput(
                    f"to_message_id {end} is not a message of this session after from_message_id",
                    fields={"to_message_id": ["not in range"]},
                )
        summary = Summary.objects.create(
            team=principal.team,
            session=session,
            parent=parent,
            from_message_id=start,
            to_message_id=end,
            summary=data.summary,
            current_goal=data.current_goal,
            **{name: list(data.lists.get(name, [])) for name in LIST_FIELDS},
        )
        audit_record(
            principal=principal,
            event_type="memory.summary.appended",
            session=session,
            payload={
                "summary_id": summary.pk,
                "parent_summary_id": parent.pk if parent else None,
                "from_message_id": start,
                "to_message_id": end,
            },
        )
    return summary

