"""Typed Python client for the memory service's agent API v1 (R-API, R-OPS).

    from memory_client import MemoryClient

    with MemoryClient("http://127.0.0.1:8000", "mk_...") as memory:
        said = memory.append_message("dinner-1", "user", "记住，我对花生过敏", user_id="xiaoming")
        context = memory.context("dinner-1", user_id="xiaoming", query="今晚吃什么？")
        print(context.block)

`AsyncMemoryClient` has the same methods, awaited. Errors are memory_client.errors classes
carrying the API's code; writes are retried safely under one Idempotency-Key.
"""

from memory_client._calls import VERSION as __version__
from memory_client._retry import RetryPolicy
from memory_client.async_client import AsyncMemoryClient
from memory_client.client import MemoryClient
from memory_client.errors import (
    AuthenticationError,
    Conflict,
    InvalidRequest,
    MemoryAPIError,
    MemoryClientError,
    MemoryConnectionError,
    NotFound,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ServerError,
    UnexpectedResponse,
    UnprocessableEntity,
    ValidationError,
)
from memory_client.models import (
    AppendResult,
    Context,
    ContextItem,
    Message,
    MessagePage,
    Node,
    Omission,
    SearchResult,
    Summary,
    SummaryPage,
)
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

__all__ = [
    "AppendResult", "AsyncMemoryClient", "AuthenticationError", "Conflict", "Context", "ContextItem",
    "ExtractionResult", "Feedback", "ForgetResult", "InvalidRequest", "MemoryAPIError", "MemoryClient",
    "MemoryClientError", "MemoryConnectionError", "Message", "MessagePage", "Node", "NodeHistory", "NodePage",
    "NotFound", "Omission", "PayloadTooLarge", "PermissionDenied", "ProposeResult", "RateLimited", "Retrieval",
    "RetryPolicy", "SearchResult", "ServerError", "SessionForgetResult", "Summary", "SummaryPage", "Tools",
    "UnexpectedResponse", "UnprocessableEntity", "ValidationError", "WorkingMemory", "__version__",
]
