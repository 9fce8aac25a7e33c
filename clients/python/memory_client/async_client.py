"""AsyncMemoryClient: the agent API v1 (R-API) from asyncio code.

The same methods, arguments, results, errors, retries and Idempotency-Keys as MemoryClient
(memory_client.client), awaited; both build their requests in memory_client._calls.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import httpx

from memory_client import _calls as c
from memory_client._base import ClientConfig, request_options
from memory_client._retry import RetryPolicy
from memory_client.errors import MemoryAPIError, MemoryConnectionError
from memory_client.inputs import Budget, ExtractionOperation, MessageIn, NodeIn, ValueFilter
from memory_client.models import AppendResult, Context, MessagePage, Node, SearchResult, Summary, SummaryPage
from memory_client.results import (
    ExtractionResult,
    Feedback,
    ForgetResult,
    NodeHistory,
    NodePage,
    ProposeResult,
    Retrieval,
    SessionForgetResult,
    Tools,
    WorkingMemory,
)

T = TypeVar("T")
Category = str | Sequence[str]


class AsyncMemoryClient:
    """Asynchronous client. Use as an async context manager, or await aclose().

    >>> async with AsyncMemoryClient("http://127.0.0.1:8000", "mk_...") as memory:
    ...     context = await memory.context("s1", user_id="u1", query="今晚吃什么？")
    """

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *, timeout: float = 30.0,
                 retry: RetryPolicy | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        self._config = ClientConfig(base_url, api_key, timeout=timeout, retry=retry)
        self._http = httpx.AsyncClient(transport=transport, **self._config.http_options())
        self._sleep = sleep

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: c.Call[T]) -> T:
        policy = self._config.retry
        attempt = 1
        while True:
            try:
                response = await self._http.request(**request_options(call))
                return c.result(call, response.status_code, response.headers, response.content)
            except (httpx.TransportError, MemoryAPIError) as error:
                if attempt >= policy.max_attempts or not policy.retries_error(error):
                    if isinstance(error, httpx.TransportError):
                        raise MemoryConnectionError(f"{call.method} {call.path}: {error!r}") from error
                    raise
                await self._sleep(policy.delay(attempt, error, self._config.rng))
                attempt += 1

    # ---- messages and summaries --------------------------------------------------------

    async def append_message(self, session_id: str, role: str, content: str, *, workspace_id: str | None = None,
                             user_id: str | None = None, parent_id: int | None = None,
                             metadata: Mapping[str, Any] | None = None, occurred_at: datetime | str | None = None,
                             idempotency_key: str | None = None) -> AppendResult:
        """POST /messages: append one message (role user, assistant, system or tool); `ids[0]` is its id."""
        return await self._send(c.APPEND.call(locals()))

    async def append_messages(self, messages: Sequence[MessageIn], *, idempotency_key: str | None = None) -> AppendResult:
        """POST /messages `{messages: [...]}`: a batch, all or nothing; ids in the order sent."""
        return await self._send(c.APPEND.call(locals(), body={"messages": list(messages)}))

    async def list_messages(self, session_id: str, *, workspace_id: str | None = None, user_id: str | None = None,
                            limit: int | None = None, before: int | None = None) -> MessagePage:
        """GET /messages: the `limit` (default 20) most recent messages before id `before`, oldest first."""
        return await self._send(c.MESSAGES.call(locals()))

    async def append_summary(self, session_id: str, summary: str, *, workspace_id: str | None = None,
                             user_id: str | None = None, from_message_id: int | None = None,
                             to_message_id: int | None = None, current_goal: str | None = None,
                             constraints: Sequence[str] | None = None, preferences: Sequence[str] | None = None,
                             decisions: Sequence[str] | None = None, completed_work: Sequence[str] | None = None,
                             pending_work: Sequence[str] | None = None, known_issues: Sequence[str] | None = None,
                             idempotency_key: str | None = None) -> Summary:
        """POST /summaries: the next link of the session's summary chain, covering from..to message ids."""
        return await self._send(c.SUMMARY_APPEND.call(locals()))

    async def list_summaries(self, session_id: str, *, workspace_id: str | None = None, user_id: str | None = None,
                             cursor: str | None = None, limit: int | None = None) -> SummaryPage:
        """GET /summaries: the chain, oldest first, a page at a time (pass `next_cursor` as `cursor`)."""
        return await self._send(c.SUMMARIES.call(locals()))

    async def latest_summary(self, session_id: str, *, workspace_id: str | None = None,
                             user_id: str | None = None) -> Summary | None:
        """GET /summaries/latest: the newest summary, or None when the session has none."""
        return await self._send(c.SUMMARY_LATEST.call(locals()))

    async def forget_session(self, session_id: str, *, workspace_id: str | None = None, user_id: str | None = None,
                             mode: str | None = None, reason: str | None = None,
                             idempotency_key: str | None = None) -> SessionForgetResult:
        """DELETE /sessions/{id}: forget a conversation, `mode` soft (default, reversible) or hard.
        Raises Conflict (409) when it is already soft-deleted."""
        return await self._send(c.SESSION_FORGET.call(locals()))

    # ---- working memory ----------------------------------------------------------------

    async def get_working_memory(self, session_id: str, *, workspace_id: str | None = None,
                                 user_id: str | None = None) -> WorkingMemory:
        """GET /sessions/{id}/working-memory: version 0 and empty until written; NotFound for an unknown session."""
        return await self._send(c.WORKING_GET.call(locals()))

    async def put_working_memory(self, session_id: str, *, workspace_id: str | None = None, user_id: str | None = None,
                                 current_goal: str | None = None, references: Mapping[str, Any] | None = None,
                                 slots: Mapping[str, Any] | None = None, scratchpad: str | None = None,
                                 expected_version: int | None = None, idempotency_key: str | None = None) -> WorkingMemory:
        """PUT: replace the whole document (a field left out becomes empty). A stale
        `expected_version` raises Conflict with code version_conflict."""
        return await self._send(c.WORKING_PUT.call(locals()))

    async def patch_working_memory(self, session_id: str, *, workspace_id: str | None = None, user_id: str | None = None,
                                   current_goal: str | None = None, references: Mapping[str, Any] | None = None,
                                   slots: Mapping[str, Any] | None = None, scratchpad: str | None = None,
                                   expected_version: int | None = None,
                                   idempotency_key: str | None = None) -> WorkingMemory:
        """PATCH: change the fields given; references and slots merge key by key, a key set to None is deleted."""
        return await self._send(c.WORKING_PATCH.call(locals()))

    # ---- context and the hit ledger ----------------------------------------------------

    async def context(self, session_id: str, *, query: str | None = None, workspace_id: str | None = None,
                      user_id: str | None = None, domain: str | None = None, category_path_prefix: Category | None = None,
                      budget: Budget | None = None, timezone: str | None = None) -> Context:
        """POST /context (R-CTX): the block to inject before the model call, under the budget in force;
        `timezone` (an IANA name such as "Asia/Shanghai") is the end user's, for the dates in it."""
        return await self._send(c.CONTEXT.call(locals()))

    async def get_retrieval(self, retrieval_id: int) -> Retrieval:
        """GET /retrievals/{id}: what a context call injected and left out, and why."""
        return await self._send(c.RETRIEVAL.call(locals()))

    async def retrieval_feedback(self, retrieval_id: int, used_node_ids: Sequence[int], *, helpful: bool | None = None,
                                 note: str | None = None, idempotency_key: str | None = None) -> Feedback:
        """POST /retrievals/{id}/feedback: which injected memories the answer used ([] for none);
        replaces an earlier report on the same call."""
        return await self._send(c.FEEDBACK.call(locals()))

    # ---- the four memory tools (R-TOOLS) -------------------------------------------------

    async def search(self, *, query_text: str | None = None, workspace_id: str | None = None, user_id: str | None = None,
                     session_id: str | None = None, scopes: Sequence[str] | None = None, domain: str | None = None,
                     category_path_prefix: Category | None = None, types: Sequence[str] | None = None,
                     key: str | None = None, value_json: Any = None, value_filters: Sequence[ValueFilter] | None = None,
                     tags: Sequence[str] | None = None, entities: Sequence[str] | None = None,
                     include_expired: bool | None = None, min_confidence: float | None = None,
                     limit: int | None = None) -> SearchResult:
        """POST /memory/search (memory_search): exact matches on the fields given, keyword
        matches on `query_text` (Chinese or English), and what was left out and why."""
        return await self._send(c.SEARCH.call(locals()))

    async def get(self, *, id: int | None = None, workspace_id: str | None = None, user_id: str | None = None,
                  session_id: str | None = None, type: str | None = None, key: str | None = None, value_json: Any = None,
                  scope: str | None = None, domain: str | None = None) -> Node:
        """POST /memory/get (memory_get): one node by `id`, or the current one for `key`
        (with type, value_json, scope, domain). Raises NotFound when there is none."""
        return await self._send(c.GET.call(locals()))

    async def propose(self, operation: str, *, node: NodeIn | None = None, target_id: int | None = None,
                      reason: str | None = None, workspace_id: str | None = None, user_id: str | None = None,
                      session_id: str | None = None, explicit_user_intent: bool | None = None,
                      expected_version: int | None = None, confirm: bool | None = None,
                      on_nonconforming: str | None = None, idempotency_key: str | None = None) -> ProposeResult:
        """POST /memory/propose (memory_propose_update): create, update, supersede, expire or
        delete one memory. A refusal is a result with accepted=False and a reason code, not an error."""
        return await self._send(c.PROPOSE.call(locals()))

    async def forget(self, *, id: int | None = None, workspace_id: str | None = None, user_id: str | None = None,
                     session_id: str | None = None, scope: str | None = None, domain: str | None = None,
                     category_path_prefix: Category | None = None, type: str | None = None, key: str | None = None,
                     value_json: Any = None, source_message_ids: Sequence[int] | None = None, mode: str | None = None,
                     reason: str | None = None, confirm: bool | None = None,
                     idempotency_key: str | None = None) -> ForgetResult:
        """POST /memory/forget (memory_forget): by id or selector; several candidates or mode hard
        answer requires_confirmation with the candidates until repeated with confirm=True."""
        return await self._send(c.FORGET.call(locals()))

    async def extractions(self, operations: Sequence[ExtractionOperation], *, workspace_id: str | None = None,
                          user_id: str | None = None, session_id: str | None = None,
                          idempotency_key: str | None = None) -> ExtractionResult:
        """POST /memory/extractions: many proposals in one transaction, all or nothing."""
        return await self._send(c.EXTRACTIONS.call(locals()))

    async def tools(self, *, provider: str | None = None) -> Tools:
        """GET /tools: the four tools as function definitions, `provider` "openai" (default) or "anthropic"."""
        return await self._send(c.TOOLS.call(locals()))

    # ---- nodes ---------------------------------------------------------------------------

    async def list_nodes(self, *, scope: str | None = None, workspace_id: str | None = None, user_id: str | None = None,
                         session_id: str | None = None, domain: str | None = None,
                         category_path_prefix: Category | None = None, type: str | None = None, status: str | None = None,
                         key: str | None = None, q: str | None = None, cursor: str | None = None,
                         limit: int | None = None) -> NodePage:
        """GET /nodes: the team's nodes, newest first, filtered; a page at a time."""
        return await self._send(c.NODES.call(locals()))

    async def get_node(self, node_id: int, *, workspace_id: str | None = None, user_id: str | None = None) -> Node:
        """GET /nodes/{id}: any status; NotFound for an id of another team. A key limited to
        workspaces names one of them (and the user whose memory it reads)."""
        return await self._send(c.NODE.call(locals()))

    async def node_history(self, node_id: int, *, workspace_id: str | None = None,
                           user_id: str | None = None) -> NodeHistory:
        """GET /nodes/{id}/history: the supersede chain and its audit trail (workspace_id, user_id: as get_node)."""
        return await self._send(c.NODE_HISTORY.call(locals()))

    async def delete_node(self, node_id: int, *, mode: str | None = None, reason: str | None = None,
                          workspace_id: str | None = None, user_id: str | None = None,
                          idempotency_key: str | None = None) -> ForgetResult:
        """DELETE /nodes/{id}: forget one node directly, soft (default) or hard."""
        return await self._send(c.NODE_DELETE.call(locals()))

    async def restore_node(self, node_id: int, *, reason: str | None = None, workspace_id: str | None = None,
                           idempotency_key: str | None = None) -> Node:
        """POST /nodes/{id}/restore: undo a soft delete or a supersede."""
        return await self._send(c.NODE_RESTORE.call(locals()))

    # ---- anything else -------------------------------------------------------------------

    async def health(self) -> dict[str, Any]:
        """GET /healthz (site root, no key): {"status", "database"}; a 503 raises ServerError."""
        return await self._send(c.custom_call("GET", self._config.health_url(), params=None, json_body=None,
                                              idempotency_key=None))

    async def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, json: Any = None,
                      idempotency_key: str | None = None) -> Any:
        """Any endpoint under /api/v1/ (e.g. "kpis", "policies"), answered as decoded JSON, with
        the same errors, retries and Idempotency-Key on writes as the typed methods."""
        return await self._send(c.custom_call(method, path, params=params, json_body=json, idempotency_key=idempotency_key))
