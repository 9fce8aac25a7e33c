"""Which extractor the capture jobs use, and how its operations become proposals (R-EXTRACT).

extractor_for_settings: the LLM extractor when MEMORY_LLM_BASE_URL is set, else the rule-based
one (always available, offline).

proposal_from_operation: an extractor's operation is a propose-endpoint body (JSON: expires_at
is an ISO 8601 string); this checks it with the endpoint's own serializer and returns the
Proposal that memory.services.proposals.proposal_apply takes, with the session's owner ids.
"""

from typing import Any

from memory.capture.base import Extractor
from memory.capture.llm_client import LLMConfig
from memory.capture.llm_extractor import LLMExtractor
from memory.capture.rules import RuleExtractor
from memory.errors import InvalidInput
from memory.services.proposals import Proposal


def extractor_for_settings() -> Extractor:
    """LLMExtractor for the configured endpoint, or RuleExtractor when none is configured."""
    config = LLMConfig.from_settings()
    return LLMExtractor(config) if config is not None else RuleExtractor()


def proposal_from_operation(operation: dict[str, Any], *, workspace_id: str = "", user_id: str = "",
                            session_id: str = "") -> Proposal:
    """The Proposal for one extracted operation, owned by the given ids (the operation's own
    owner fields, if any, are ignored). Raises InvalidInput (the endpoint's 400) when the body
    is malformed."""
    from memory.api.serializers import ProposeInSerializer  # the API's shape is the contract

    owner = {"workspace_id": workspace_id, "user_id": user_id, "session_id": session_id}
    body = {**{name: value for name, value in operation.items() if name not in owner},
            **{name: value for name, value in owner.items() if value}}
    serializer = ProposeInSerializer(data=body)
    if not serializer.is_valid():
        fields = _flat(serializer.errors)
        raise InvalidInput(f"malformed operation: {', '.join(sorted(fields))}", fields=fields)
    data = serializer.validated_data
    return Proposal(
        operation=data["operation"], node=dict(data.get("node") or {}), reason=data.get("reason", ""),
        target_id=data.get("target_id"), workspace_id=workspace_id, user_id=user_id, session_id=session_id,
        explicit_user_intent=data.get("explicit_user_intent", False), expected_version=data.get("expected_version"),
        confirm=data.get("confirm", False), on_nonconforming=data.get("on_nonconforming", "reject"),
    )


def _flat(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as {"node.expires_at": [...]} (the API's field paths)."""
    if isinstance(errors, dict):
        flat: dict[str, list[str]] = {}
        for name, problems in errors.items():
            flat.update(_flat(problems, f"{prefix}{name}."))
        return flat
    return {prefix.rstrip("."): [str(problem) for problem in (errors if isinstance(errors, list) else [errors])]}
