"""The base of every team API view (R-TEN, R-API): authentication and permission, the team
scope (django-scopes) around everything the view does, and Idempotency-Key on writes."""

from contextlib import ExitStack

from django.http import HttpResponse
from django_scopes import scope
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, ParseError, Throttled
from rest_framework.views import APIView

from accounts.throttling import AnonRateThrottle
from memory.errors import InvalidInput
from memory.limits import IDEMPOTENCY_KEY_MAX
from memory.selectors.nodes import Owner
from memory.services.idempotency import (
    IdempotentWrite,
    StoredResponse,
    WriteRequest,
    idempotency_key_problem,
    idempotent_write,
)
from memory.services.sessions import SessionRef
from memory.validation import text_problem

IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _Replay(Exception):
    """Not an error: carries a retried write's stored answer from initial() past the handler."""

    def __init__(self, stored: StoredResponse):
        super().__init__(stored.status)
        self.stored = stored


class TeamAPIView(APIView):
    """Base view: after authentication and permission, everything runs inside the principal's
    team scope (django-scopes), so an unscoped query raises instead of reading across teams.

    Every write method (POST, PUT, PATCH, DELETE) accepts an `Idempotency-Key` header (R-API;
    rules in memory.services.idempotency): 1–255 printable ASCII characters without spaces,
    else 400. The handler then runs in one transaction with the key's record; a 2xx answer is
    stored (rendered JSON) and a retry with the same key and request gets it back, status and
    body, with `Idempotent-Replayed: true`, without running the handler again. A non-2xx answer
    is not stored and its writes roll back. The same key for another request: 422. A second
    request racing the first waits for it and replays its answer. By method, not by what the
    handler does, except views that set `replays = False` (the POSTs that only read:
    /context, /memory/search, /memory/get); GET, HEAD and OPTIONS ignore the header.
    """

    required_right: str | None = None
    # POSTs that only read (context, search, get) answer from memory as it is now: a retry is
    # answered afresh, so a memory forgotten in between never comes back in a replay.
    replays: bool = True

    def _keyed_write(self, request) -> bool:
        return self.replays and request.method in WRITE_METHODS and IDEMPOTENCY_HEADER in request.headers

    def dispatch(self, request, *args, **kwargs):
        if self._keyed_write(request):
            request.body  # noqa: B018 - read it now: a session's CSRF check may consume the stream before initial()
        self._idempotent_write: IdempotentWrite | None = None
        with ExitStack() as self._request_context:  # the team scope and a keyed write's transaction
            response = super().dispatch(request, *args, **kwargs)
            if self._idempotent_write is not None:
                response.render()
                self._idempotent_write.store(status=response.status_code, body=response.content.decode())
            return response

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        for key, values in request.query_params.lists():
            for value in [key, *values]:
                problem = text_problem(value)
                if problem:
                    raise ParseError(f"query parameter {key!r} {problem}")
        self._request_context.enter_context(scope(team=request.principal.team))
        if self._keyed_write(request):
            self._hold_idempotency_key(request, request.headers[IDEMPOTENCY_HEADER])

    def _hold_idempotency_key(self, request, key: str) -> None:
        problem = idempotency_key_problem(key)
        if problem:
            message = f"must be 1–{IDEMPOTENCY_KEY_MAX} printable ASCII characters without spaces; this one {problem}"
            raise InvalidInput(f"{IDEMPOTENCY_HEADER} {message}", fields={IDEMPOTENCY_HEADER: [message]})
        write = WriteRequest(method=request.method, path=request.path, query=request.META.get("QUERY_STRING", ""),
                             body=request.body)
        held = self._request_context.enter_context(idempotent_write(principal=request.principal, key=key, request=write))
        if held.replay is not None:
            raise _Replay(held.replay)
        self._idempotent_write = held

    def handle_exception(self, exc):
        if isinstance(exc, _Replay):
            return HttpResponse(exc.stored.body, status=exc.stored.status, content_type="application/json",
                                headers={REPLAYED_HEADER: "true"})
        if isinstance(exc, (NotAuthenticated, AuthenticationFailed)):
            # Each refusal spends the client address's "anon" budget; past it, 429 (accounts.throttling).
            throttle = AnonRateThrottle()
            if not throttle.allow_request(self.request, self):
                exc = Throttled(wait=throttle.retry_after())
        return super().handle_exception(exc)

    def query(self, serializer_class):
        serializer = serializer_class(data=self.request.query_params.dict())
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def body(self, serializer_class):
        serializer = serializer_class(data=self.request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data


def session_ref(data) -> SessionRef:
    return SessionRef.of(session_id=data["session_id"], workspace_id=data.get("workspace_id"),
                         user_id=data.get("user_id"))


def owner_of(data) -> Owner:
    return Owner(workspace_id=data.get("workspace_id", ""), user_id=data.get("user_id", ""),
                 session_id=data.get("session_id", ""))
