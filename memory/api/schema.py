"""The OpenAPI document says what the server accepts (R-API): every operation documents the one
error shape, the writes that honour it the Idempotency-Key header; request bodies are closed
(unknown fields are a 400) and identity fields carry their rule. Found wanting by fuzzing
(tests/fuzz): a schema looser than the server sends clients into 400s it never warned of."""

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_basic_type
from drf_spectacular.types import OpenApiTypes

from memory.api.base import IDEMPOTENCY_HEADER, REPLAYED_HEADER, WRITE_METHODS
from memory.limits import IDEMPOTENCY_KEY_MAX, IDEMPOTENCY_TTL_HOURS, IDENTITY_MAX

IDENTITY_FORMAT = "identity"
IDENTITY_DESCRIPTION = (
    f"An agent-chosen id: 1–{IDENTITY_MAX} printable characters (Python's str.isprintable: no control, format, "
    "private-use or unassigned characters, no white space but the plain space), not starting or ending with a "
    "space, not '.' or '..'."
)


class StrictSerializerScheme(OpenApiSerializerExtension):
    """A StrictSerializer refuses unknown fields (400), so its request body is closed."""

    target_class = "memory.api.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema


class IdentityFieldScheme(OpenApiSerializerFieldExtension):
    """workspace_id, user_id, session_id: the rule of memory.validation.identity_problem."""

    target_class = "memory.api.fields.IdentityField"

    def map_serializer_field(self, auto_schema, direction):
        # At least one character even when optional: drf-spectacular offers "" as the other branch
        # of a oneOf, and "" must match exactly one of them.
        schema = build_basic_type(OpenApiTypes.STR)
        schema.update({"minLength": 1, "maxLength": IDENTITY_MAX, "format": IDENTITY_FORMAT,
                       "description": IDENTITY_DESCRIPTION})
        return schema

ERROR_STATUSES = {
    "400": "Invalid input (the fields say which)",
    "401": "Missing, malformed or revoked key",
    "403": "The key or login may not do this",
    "404": "No such object in your team",
    "409": "The object changed state (e.g. already superseded)",
    "413": "Request body too large",
    "429": "Too many requests from this key or address (docs/limits.md); wait Retry-After seconds",
}
RETRY_AFTER_HEADER = {"description": "Whole seconds until a request will be allowed again", "schema": {"type": "integer"}}
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
        responses["429"].setdefault("headers", {})["Retry-After"] = RETRY_AFTER_HEADER
    return result


IDENTITY_NAMES = ("workspace_id", "user_id", "session_id")


def add_identity_rules(result, generator, request, public):
    """Path and query parameters named like an identity field follow its rule (the views check
    them with memory.validation.identity_problem), whatever serializer or converter read them."""
    for _method, operation in _api_operations(result):
        for parameter in operation.get("parameters", []):
            schema = parameter.get("schema", {})
            if parameter["name"] not in IDENTITY_NAMES or schema.get("format") == IDENTITY_FORMAT:
                continue
            if "oneOf" in schema:  # drf-spectacular's optional identity: the rule, or ""
                continue
            rule = {"type": "string", "minLength": 1, "maxLength": IDENTITY_MAX, "format": IDENTITY_FORMAT}
            if not parameter.get("required"):  # as drf-spectacular draws an optional one: the rule, or ""
                rule = {"oneOf": [rule, {"type": "string", "maxLength": 0}]}
                if "default" in schema:
                    rule["default"] = schema["default"]
            parameter["schema"] = rule
            parameter.setdefault("description", IDENTITY_DESCRIPTION)
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
