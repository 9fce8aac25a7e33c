"""OpenAPI post-processing (R-API): every operation documents the one error shape, and every
write documents the Idempotency-Key header."""

from memory.api.base import IDEMPOTENCY_HEADER, REPLAYED_HEADER, WRITE_METHODS
from memory.limits import IDEMPOTENCY_KEY_MAX, IDEMPOTENCY_TTL_HOURS

ERROR_STATUSES = {
    "400": "Invalid input (the fields say which)",
    "401": "Missing, malformed or revoked key",
    "403": "The key or login may not do this",
    "404": "No such object in your team",
    "409": "The object changed state (e.g. already superseded)",
    "413": "Request body too large",
}
ERROR_REFERENCE = {"$ref": "#/components/schemas/Error"}

IDEMPOTENCY_PARAMETER = {
    "name": IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "description": (
        f"Makes a retry safe: 1–{IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces, unique per request "
        "(e.g. a UUID), chosen by the caller. The first 2xx answer is kept for "
        f"{IDEMPOTENCY_TTL_HOURS} hours per caller (agent key or login); sending the same key with the same method, "
        f"path, query and body returns that status and body again with `{REPLAYED_HEADER}: true` and writes nothing. "
        "An answer other than 2xx is not kept: the retry runs again. The same key with a different request gets 422. "
        "A request racing another with the same key waits for it and replays its answer."
    ),
    "schema": {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX, "pattern": "^[!-~]+$"},
}
REPLAYED_RESPONSE_HEADER = {
    "description": f"`true` when this is the stored answer to an earlier request with the same {IDEMPOTENCY_HEADER}.",
    "schema": {"type": "string", "enum": ["true"]},
}
KEY_REUSED_RESPONSE = {
    "description": f"The {IDEMPOTENCY_HEADER} was already used for a different request",
    "content": {"application/json": {"schema": ERROR_REFERENCE}},
}


def _api_operations(result):
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/v1/") or path == "/api/v1/schema":
            continue
        yield from operations.items()


def add_error_responses(result, generator, request, public):
    for _method, operation in _api_operations(result):
        responses = operation.setdefault("responses", {})
        for status, description in ERROR_STATUSES.items():
            responses.setdefault(status, {"description": description,
                                          "content": {"application/json": {"schema": ERROR_REFERENCE}}})
    return result


def _not_replayed(generator) -> set[tuple[str, str]]:
    """(path, method) of the writes whose view ignores Idempotency-Key (`replays = False`)."""
    return {(path, method.lower()) for path, _regex, method, callback in generator.endpoints or ()
            if not getattr(getattr(callback, "cls", None), "replays", True)}


def add_idempotency_key(result, generator, request, public):
    """Document the header, the 422 and the replay header on the writes that honour the key only:
    the POSTs that only read (context, search, get, simulate) and the import ignore it."""
    ignored = _not_replayed(generator)
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in operations.items():
            if method.upper() in WRITE_METHODS and (path, method) not in ignored:
                _document_idempotency(operation)
    return result


def _document_idempotency(operation) -> None:
    operation.setdefault("parameters", []).append(IDEMPOTENCY_PARAMETER)
    responses = operation.setdefault("responses", {})
    responses.setdefault("422", KEY_REUSED_RESPONSE)
    for status, response in responses.items():
        if status.startswith("2"):
            response.setdefault("headers", {})[REPLAYED_HEADER] = REPLAYED_RESPONSE_HEADER
