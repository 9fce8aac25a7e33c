"""Appending conversation messages (seed appendMessage; R-STORE, R-API POST /messages)."""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.principal import Principal
from memory.capture.triggers import capture_after_append
from memory.errors import InvalidInput
from memory.limits import MESSAGE_BATCH_MAX, MESSAGE_CONTENT_MAX, METADATA_JSON_MAX
from memory.models import Message, MessageRole, Session, speaker_name
from memory.search.text import document_tokens, episodic_token, owner_token
from memory.services.audit import audit_record
from memory.services.embeddings import embeddings_schedule
from memory.services.sessions import SessionRef, session_get_or_create
from memory.validation import clean_text, first_json_problem


@dataclass(frozen=True)
class MessageInput:
    session: SessionRef
    role: str
    content: str
    parent_id: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    occurred_at: datetime | None = None


def message_owner_tokens(session: Session) -> list[str]:
    """The team's token, the session's, and the (workspace, user) pair's: episodic recall
    searches one session or all of a user's sessions in a workspace."""
    team = session.team_id
    return [
        owner_token(team, "t"),
        owner_token(team, "s", session.pk),
        episodic_token(team, session.workspace_id, session.user_id),
    ]


def message_search_tokens(content: str, session: Session, metadata: Any = None) -> str:
    """The keyword index text of a message: its content, then the speaker's name (a question
    naming a person finds what that person said; see memory.selectors.messages weights)."""
    return document_tokens([content, speaker_name(metadata)], owners=message_owner_tokens(session))


def _validate(item: MessageInput, prefix: str) -> None:
    if item.role not in MessageRole.values:
        raise InvalidInput(
            f"{prefix}role must be one of {', '.join(MessageRole.values)}",
            fields={f"{prefix}role": ["invalid choice"]},
        )
    clean_text(item.content, field=f"{prefix}content", max_length=MESSAGE_CONTENT_MAX, allow_empty=False)
    if not isinstance(item.metadata, dict):
        raise InvalidInput(f"{prefix}metadata must be an object", fields={f"{prefix}metadata": ["must be an object"]})
    problem = first_json_problem(item.metadata)
    if problem:
        raise InvalidInput(f"{prefix}metadata.{problem[0]} {problem[1]}", fields={f"{prefix}metadata": [problem[1]]})
    if len(json.dumps(item.metadata, ensure_ascii=False)) > METADATA_JSON_MAX:
        raise InvalidInput(
            f"{prefix}metadata is too large: at most {METADATA_JSON_MAX} characters as JSON",
            fields={f"{prefix}metadata": ["too large"]},
        )
    if item.occurred_at is not None and timezone.is_naive(item.occurred_at):
        raise InvalidInput(
            f"{prefix}occurred_at needs a UTC offset", fields={f"{prefix}occurred_at": ["needs a UTC offset"]}
        )


def messages_append(*, principal: Principal, messages: Sequence[MessageInput]) -> list[Message]:
    """Append messages in order, all or nothing; returns them with ids (server order).

    Sessions are created on first use. `parent_id` must name a message of the same session.
    Raises InvalidInput (nothing stored), AccessDenied, or Conflict (a soft-deleted session).
    One audit event per session touched. Each message records the principal's agent key (None
    for a login), which bounds what background capture may write from it (R-TEN, R-EXTRACT).
    """
    if not messages:
        raise InvalidInput("no messages to append", fields={"messages": ["may not be empty"]})
    if len(messages) > MESSAGE_BATCH_MAX:
        raise InvalidInput(
            f"at most {MESSAGE_BATCH_MAX} messages per request (got {len(messages)})",
            fields={"messages": [f"at most {MESSAGE_BATCH_MAX} items"]},
        )
    many = len(messages) > 1
    for index, item in enumerate(messages):
        _validate(item, f"messages[{index}]." if many else "")
    for ref in {item.session for item in messages}:
        principal.check_workspace(ref.workspace_id)

    now = timezone.now()
    with transaction.atomic():
        # Sessions are locked in one fixed order, so two batches over the same sessions cannot deadlock.
        sessions: dict[SessionRef, Session] = {
            ref: session_get_or_create(principal=principal, ref=ref)
            for ref in sorted({item.session for item in messages}, key=lambda ref: ref.sort_key)
        }
        parent_ids = {item.parent_id for item in messages if item.parent_id is not None}
        parents = dict(
            Message.objects.filter(team=principal.team, pk__in=parent_ids).values_list("pk", "session_id")
        )
        rows = []
        for index, item in enumerate(messages):
            session = sessions[item.session]
            if item.parent_id is not None and parents.get(item.parent_id) != session.pk:
                field_name = f"messages[{index}].parent_id" if many else "parent_id"
                raise InvalidInput(
                    f"{field_name} {item.parent_id} is not a message of this session",
                    fields={field_name: ["not a message of this session"]},
                )
            rows.append(
                Message(
                    team=principal.team,
                    session=session,
                    parent_id=item.parent_id,
                    role=item.role,
                    content=item.content,
                    metadata=item.metadata,
                    created_at=now,
                    occurred_at=item.occurred_at,
                    search_tokens=message_search_tokens(item.content, session, item.metadata),
                    agent_key=principal.agent_key,  # what capture takes from it stays within the key's scopes
                )
            )
        created = Message.objects.bulk_create(rows)
        embeddings_schedule(principal.team.pk)
        for session in sessions.values():
            ids = [message.pk for message in created if message.session_id == session.pk]
            Session.objects.filter(pk=session.pk).update(last_message_at=now)
            audit_record(
                principal=principal,
                event_type="memory.messages.appended",
                session=session,
                payload={"message_ids": ids, "count": len(ids)},
            )
            # Background capture is recorded with the messages, so a broker outage loses nothing (R-EXTRACT).
            capture_after_append(session=session, messages=[m for m in created if m.session_id == session.pk])
    return created
