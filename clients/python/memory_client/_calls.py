"""The layer both clients share: every endpoint as (method, path, where its fields go, how its
answer is read), turning a method's arguments into one prepared request and an answer into a
typed result or a typed error. The sync and async clients only send and wait.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from string import Formatter
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote

from memory_client import models as m
from memory_client import results as r
from memory_client.errors import InvalidRequest, UnexpectedResponse, error_from_response

T = TypeVar("T")
IDEMPOTENCY_HEADER = "Idempotency-Key"
NOT_FIELDS = frozenset({"self", "idempotency_key"})
VERSION = "0.1.0"


def _encode(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _sendable(text: str, what: str) -> str:
    """`text`, unless it cannot be encoded as UTF-8 (a lone surrogate): InvalidRequest."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidRequest(f"{what} contains a lone surrogate (U+{ord(error.object[error.start]):04X}) at "
                             f"position {error.start}, which UTF-8 cannot encode") from None
    return text


def _query_value(value: Any, name: str = "query parameter") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        text = "/".join(str(item) for item in value)  # a category path prefix as a/b/c
    else:
        text = value.isoformat() if isinstance(value, (datetime, date)) else str(value)
    return _sendable(text, name)


def path_segment(value: Any, name: str) -> str:
    """One path parameter as a single path segment: every reserved character escaped ("/" too,
    so "../nodes/82" stays a session id instead of reaching /nodes/82) and dots as %2E, so "."
    and ".." are never read as dot segments; the server decodes them back to the id."""
    return quote(_sendable(str(value), name), safe="").replace(".", "%2E")


def _json_bytes(payload: Any) -> bytes:
    """The UTF-8 JSON of a request body; InvalidRequest for what JSON cannot hold."""
    try:
        text = json.dumps(payload, default=_encode, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as error:
        raise InvalidRequest(f"the request body cannot be sent as JSON: {error}") from None
    return _sendable(text, "the request body").encode()


def idempotency_key_header(key: str | None) -> str:
    """`key`, or a new random one; InvalidRequest unless it is printable ASCII (an HTTP header)."""
    if key is None:
        return str(uuid.uuid4())
    if not isinstance(key, str) or not key.isascii() or not key.isprintable():
        raise InvalidRequest(f"idempotency_key must be printable ASCII, not {key!r}")
    return key


@dataclass(frozen=True)
class Call(Generic[T]):
    """One logical request, prepared once: its attempts send the very same bytes and the same
    Idempotency-Key, so the server can recognise a retry (its fingerprint covers the raw body)."""

    method: str
    path: str
    params: dict[str, str]
    content: bytes | None
    headers: dict[str, str]
    parse: Callable[[Any], T]
    none_on_404: bool = False


@dataclass(frozen=True)
class Endpoint(Generic[T]):
    """An endpoint of /api/v1. `path` names its path fields ("nodes/{node_id}"); on GET and
    DELETE every other field goes to the query string, otherwise the ones in `query` do and
    the rest form the JSON body. `write` sends an Idempotency-Key (not on the POSTs that only
    read, which the server answers afresh anyway)."""

    method: str
    path: str
    parse: Callable[[Any], T]
    write: bool = False
    query: tuple[str, ...] = ()
    none_on_404: bool = False
    path_fields: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        names = tuple(name for _, name, _, _ in Formatter().parse(self.path) if name)
        object.__setattr__(self, "path_fields", names)

    def call(self, arguments: Mapping[str, Any], *, body: Any = None) -> Call[T]:
        """The request for a client method's `locals()`: None means "not sent" (the server's
        default applies). `body` replaces the body built from the fields (a batch)."""
        values = {name: value for name, value in arguments.items() if name not in NOT_FIELDS and value is not None}
        path = self.path.format(**{name: path_segment(values.pop(name), name) for name in self.path_fields})
        in_query = values if self.method in ("GET", "DELETE") else {n: values.pop(n) for n in self.query if n in values}
        params = {name: _query_value(value, name) for name, value in in_query.items()}
        if self.method in ("GET", "DELETE"):
            values = {}
        headers: dict[str, str] = {}
        content = None
        if self.method not in ("GET", "DELETE"):
            content = _json_bytes(values if body is None else body)
            headers["Content-Type"] = "application/json"
        if self.write:
            headers[IDEMPOTENCY_HEADER] = idempotency_key_header(arguments.get("idempotency_key") or None)
        return Call(method=self.method, path=path, params=params, content=content, headers=headers, parse=self.parse,
                    none_on_404=self.none_on_404)


def _raw(data: Any) -> Any:
    return data


def custom_call(method: str, path: str, *, params: Mapping[str, Any] | None, json_body: Any,
                idempotency_key: str | None) -> Call[Any]:
    """A request to any endpoint, answered as decoded JSON; writes get an Idempotency-Key."""
    method = method.upper()
    segments = _sendable(path, "path").lstrip("/").split("?")[0].split("/")
    if any(segment in (".", "..") for segment in segments):
        raise InvalidRequest(f"path {path!r} has a dot segment: it would leave /api/v1/")
    headers: dict[str, str] = {}
    content = None
    if json_body is not None:
        content = _json_bytes(json_body)
        headers["Content-Type"] = "application/json"
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        headers[IDEMPOTENCY_HEADER] = idempotency_key_header(idempotency_key or None)
    return Call(method=method, path=path.lstrip("/"),
                params={k: _query_value(v, k) for k, v in (params or {}).items()}, content=content,
                headers=headers, parse=_raw)


def decode(content: bytes) -> Any:
    if not content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", "replace")


def result(call: Call[T], status: int, headers: Mapping[str, str], content: bytes) -> T:
    """The typed result of a 2xx answer; raises the MemoryAPIError subclass of any other status
    (None instead for a 404 where the endpoint's absence means "none", e.g. latest summary)."""
    body = decode(content)
    if 200 <= status < 300:
        try:
            return call.parse(body)
        except KeyError as error:
            raise UnexpectedResponse(f"{call.method} {call.path}: the answer lacks the field {error}", status=status,
                                     body=body) from None
        except (TypeError, ValueError, AttributeError) as error:
            raise UnexpectedResponse(f"{call.method} {call.path}: the answer is not what this endpoint returns "
                                     f"({error})", status=status, body=body) from None
    if status == 404 and call.none_on_404 and isinstance(body, dict) and "error" in body:
        return cast(T, None)
    raise error_from_response(status, body, headers.get("Retry-After"))


APPEND = Endpoint("POST", "messages", m.AppendResult.from_dict, write=True)
MESSAGES = Endpoint("GET", "messages", m.MessagePage.from_dict)
SUMMARY_APPEND = Endpoint("POST", "summaries", m.Summary.from_dict, write=True)
SUMMARIES = Endpoint("GET", "summaries", m.SummaryPage.from_dict)
SUMMARY_LATEST: Endpoint[m.Summary | None] = Endpoint("GET", "summaries/latest", m.Summary.from_dict, none_on_404=True)
CONTEXT = Endpoint("POST", "context", m.Context.from_dict)
RETRIEVAL = Endpoint("GET", "retrievals/{retrieval_id}", r.Retrieval.from_dict)
FEEDBACK = Endpoint("POST", "retrievals/{retrieval_id}/feedback", r.Feedback.from_dict, write=True)
SEARCH = Endpoint("POST", "memory/search", m.SearchResult.from_dict)
GET = Endpoint("POST", "memory/get", m.Node.from_dict)
PROPOSE = Endpoint("POST", "memory/propose", r.ProposeResult.from_dict, write=True)
FORGET = Endpoint("POST", "memory/forget", r.ForgetResult.from_dict, write=True)
EXTRACTIONS = Endpoint("POST", "memory/extractions", r.ExtractionResult.from_dict, write=True)
TOOLS = Endpoint("GET", "tools", r.Tools.from_dict)
NODES = Endpoint("GET", "nodes", r.NodePage.from_dict)
NODE = Endpoint("GET", "nodes/{node_id}", m.Node.from_dict)
NODE_HISTORY = Endpoint("GET", "nodes/{node_id}/history", r.NodeHistory.from_dict)
NODE_DELETE = Endpoint("DELETE", "nodes/{node_id}", r.ForgetResult.from_dict, write=True)
NODE_RESTORE = Endpoint("POST", "nodes/{node_id}/restore", m.Node.from_dict, write=True)
SESSION_FORGET = Endpoint("DELETE", "sessions/{session_id}", r.SessionForgetResult.from_dict, write=True)
WORKING_GET = Endpoint("GET", "sessions/{session_id}/working-memory", r.WorkingMemory.from_dict)
WORKING_PUT = Endpoint("PUT", "sessions/{session_id}/working-memory", r.WorkingMemory.from_dict, write=True,
                       query=("workspace_id", "user_id"))
WORKING_PATCH = Endpoint("PATCH", "sessions/{session_id}/working-memory", r.WorkingMemory.from_dict, write=True,
                         query=("workspace_id", "user_id"))
