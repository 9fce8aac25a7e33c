"""The agent API v1 (R-API): thin adapters — validate, call a service or selector, serialise."""

import base64
from urllib.parse import urlencode

from django.db import connection
from django.http import JsonResponse
from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api import context_serializers as cs
from memory.api import serializers as s
from memory.api.base import TeamAPIView, owner_of, session_ref
from memory.api.errors import not_found_view
from memory.api.kpi_serializers import feedback_output
from memory.api.tool_calls import tool_call
from memory.selectors.messages import messages_page
from memory.selectors.nodes import node_chain, node_get, node_history_audit, node_list, node_text_filter
from memory.selectors.retrievals import retrieval_explain, retrieval_feedback, retrieval_get
from memory.selectors.sessions import session_find
from memory.selectors.summaries import summary_latest, summary_list
from memory.services.messages import MessageInput, messages_append
from memory.services.summaries import LIST_FIELDS, SummaryInput, summary_append


class MessagesView(TeamAPIView):
    """Append messages to a conversation; read its latest messages."""

    @extend_schema(
        operation_id="messages_append",
        request=PolymorphicProxySerializer(component_name="MessageAppendIn", resource_type_field_name=None,
                                           serializers=[s.MessageInSerializer, s.MessageBatchInSerializer]),
        responses={201: s.MessageAppendOutSerializer},
        description="Append one message, or a batch `{messages: [...]}` (all or nothing). Returns ids in order.",
    )
    def post(self, request):
        if isinstance(request.data, dict) and "messages" in request.data:
            items = self.body(s.MessageBatchInSerializer)["messages"]
        else:
            items = [self.body(s.MessageInSerializer)]
        created = messages_append(
            principal=request.principal,
            messages=[
                MessageInput(
                    session=session_ref(item),
                    role=item["role"],
                    content=item["content"],
                    parent_id=item.get("parent_id"),
                    metadata=item.get("metadata") or {},
                    occurred_at=item.get("occurred_at"),
                )
                for item in items
            ],
        )
        output = {"ids": [message.pk for message in created], "messages": created}
        return Response(s.MessageAppendOutSerializer(output).data, status=201)

    @extend_schema(
        operation_id="messages_list",
        parameters=[s.MessageListQuerySerializer],
        responses={200: s.MessageListOutSerializer},
        description="The most recent messages of a session, oldest first; `next` pages to older ones.",
    )
    def get(self, request):
        params = self.query(s.MessageListQuerySerializer)
        session = session_find(principal=request.principal, ref=session_ref(params))
        if session is None:
            return Response({"results": [], "next": None})
        page = messages_page(session=session)
        if params.get("before"):
            page = page.filter(pk__lt=params["before"])
        newest_first = list(page.select_related("session")[: params["limit"] + 1])
        has_more = len(newest_first) > params["limit"]
        results = list(reversed(newest_first[: params["limit"]]))
        next_url = None
        if has_more:
            query = {**request.query_params.dict(), "before": results[0].pk}
            next_url = request.build_absolute_uri(request.path + "?" + urlencode(query))
        return Response({"results": s.MessageOutSerializer(results, many=True).data, "next": next_url})


class SummaryPagination(CursorPagination):
    ordering = "pk"
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 200

    def decode_cursor(self, request):
        """The cursor of `?cursor=`, or None; 400 for anything this paginator did not write. DRF's
        own decoding drops the characters base64 does not know, so "!!!" read as the first page."""
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            strict = base64.b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
            cursor = super().decode_cursor(request)
        except Exception as error:  # noqa: BLE001 - DRF raises NotFound for a bad cursor; it is bad input
            raise ParseError("invalid cursor") from error
        if not strict or (cursor.position is not None and not cursor.position.lstrip("-").isdigit()):
            raise ParseError("invalid cursor")
        return cursor


class NodePagination(SummaryPagination):
    ordering = "-pk"


class SummariesView(TeamAPIView):
    """Append to and read a session's summary chain."""

    @extend_schema(operation_id="summaries_append", request=s.SummaryInSerializer, responses={201: s.SummaryOutSerializer})
    def post(self, request):
        data = self.body(s.SummaryInSerializer)
        summary = summary_append(
            principal=request.principal,
            data=SummaryInput(
                session=session_ref(data),
                summary=data["summary"],
                from_message_id=data.get("from_message_id"),
                to_message_id=data.get("to_message_id"),
                current_goal=data.get("current_goal", ""),
                lists={name: data[name] for name in LIST_FIELDS if name in data},
            ),
        )
        return Response(s.SummaryOutSerializer(summary).data, status=201)

    @extend_schema(operation_id="summaries_list", parameters=[s.SummaryListQuerySerializer],
                   responses={200: s.SummaryPageSerializer})
    def get(self, request):
        ref = session_ref(self.query(s.SummaryListQuerySerializer))
        paginator = SummaryPagination()
        page = paginator.paginate_queryset(summary_list(principal=request.principal, ref=ref), request, view=self)
        return paginator.get_paginated_response(s.SummaryOutSerializer(page, many=True).data)


class SummaryLatestView(TeamAPIView):
    @extend_schema(operation_id="summaries_latest", parameters=[s.SessionQuerySerializer],
                   responses={200: s.SummaryOutSerializer})
    def get(self, request):
        ref = session_ref(self.query(s.SessionQuerySerializer))
        return Response(s.SummaryOutSerializer(summary_latest(principal=request.principal, ref=ref)).data)


class ContextView(TeamAPIView):
    """The memory context to inject before a model call (R-CTX)."""

    required_right = "read"
    replays = False

    @extend_schema(operation_id="context", request=cs.ContextInSerializer, responses={200: cs.ContextOutSerializer})
    def post(self, request):
        answer = tool_call(request.principal, "memory_context", request.data)
        return Response(answer.body, status=answer.status)


class RetrievalView(TeamAPIView):
    """What a context call injected and left out, and why (the hit ledger)."""

    @extend_schema(operation_id="retrievals_get", responses={200: cs.RetrievalOutSerializer})
    def get(self, request, retrieval_id: int):
        principal = request.principal
        retrieval = retrieval_get(principal=principal, retrieval_id=retrieval_id)
        explained = retrieval_explain(principal=principal, retrieval=retrieval)
        feedback = retrieval_feedback(retrieval=retrieval)
        return Response(
            {
                "id": retrieval.pk,
                "created_at": s.serializers.DateTimeField().to_representation(retrieval.created_at),
                "actor": retrieval.actor,
                "session_id": retrieval.session.external_id if retrieval.session_id else "",
                "workspace_id": retrieval.workspace_id,
                "user_id": retrieval.user_id,
                "query": retrieval.query,
                "budget": retrieval.policy,
                "used": explained["used"],
                "omitted": explained["omitted"],
                "chars_by_layer": retrieval.chars_by_layer,
                "tokens_by_layer": retrieval.tokens_by_layer,
                "total_chars": retrieval.total_chars,
                "total_tokens": retrieval.total_tokens,
                "truncated": retrieval.truncated,
                "store_status": retrieval.store_status,
                "warnings": retrieval.warnings,
                "latency_ms": retrieval.latency_ms,
                "feedback": feedback_output(feedback) if feedback is not None else None,
            }
        )


class MemorySearchView(TeamAPIView):
    """memory_search: a MemoryQuery → {exact, relevant, omitted} (R-QUERY)."""

    required_right = "read"
    replays = False

    @extend_schema(operation_id="memory_search", request=s.MemoryQueryInSerializer,
                   responses={200: s.MemoryQueryOutSerializer})
    def post(self, request):
        answer = tool_call(request.principal, "memory_search", request.data)
        return Response(answer.body, status=answer.status)


class MemoryGetView(TeamAPIView):
    """memory_get: one node by id, or the active node for an exact key (and value); 409
    several_values when the key holds more than one (memory.selectors.query.memory_get_by_key)."""

    required_right = "read"
    replays = False

    @extend_schema(operation_id="memory_get", request=s.MemoryGetInSerializer, responses={200: s.NodeOutSerializer})
    def post(self, request):
        answer = tool_call(request.principal, "memory_get", request.data)
        return Response(answer.body, status=answer.status)


class NodeListView(TeamAPIView):
    @extend_schema(operation_id="nodes_list", parameters=[s.NodeListQuerySerializer], responses={200: s.NodePageSerializer})
    def get(self, request):
        params = self.query(s.NodeListQuerySerializer)
        nodes = node_list(principal=request.principal, filters=params)
        if params.get("q", "").strip():
            nodes = node_text_filter(nodes, params["q"], team_id=request.principal.team.pk)
        paginator = NodePagination()
        page = paginator.paginate_queryset(nodes.select_related("superseded_by"), request, view=self)
        return paginator.get_paginated_response(s.NodeOutSerializer(page, many=True).data)


class NodeDetailView(TeamAPIView):
    @extend_schema(operation_id="nodes_get", parameters=[s.NodeReadQuerySerializer], responses={200: s.NodeOutSerializer})
    def get(self, request, node_id: int):
        owner = owner_of(self.query(s.NodeReadQuerySerializer))
        return Response(s.NodeOutSerializer(node_get(principal=request.principal, node_id=node_id, owner=owner)).data)


class NodeHistoryView(TeamAPIView):
    """A node's supersede chain (both directions, oldest first) and the audit trail of the chain."""

    @extend_schema(operation_id="nodes_history", parameters=[s.NodeReadQuerySerializer],
                   responses={200: s.NodeHistoryOutSerializer})
    def get(self, request, node_id: int):
        owner = owner_of(self.query(s.NodeReadQuerySerializer))
        node = node_get(principal=request.principal, node_id=node_id, owner=owner)
        chain = node_chain(principal=request.principal, node=node, owner=owner)
        audit = node_history_audit(principal=request.principal, node_ids=[item.pk for item in chain])
        return Response({"node_id": node.pk, "chain": s.NodeOutSerializer(chain, many=True).data,
                         "audit": s.AuditEventOutSerializer(audit, many=True).data})


class UnknownEndpointView(APIView):
    """Any other path under /api/v1/: a JSON 404, for every method, without authentication."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    schema = None

    def dispatch(self, request, *args, **kwargs):
        return not_found_view(request)


class HealthView(APIView):
    """Liveness and database reachability, for load balancers (no authentication)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="healthz", responses={200: inline_serializer(
        "Health", {"status": serializers.CharField(), "database": serializers.CharField()})})
    def get(self, request):
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            return JsonResponse({"status": "ok", "database": "ok"})
        except Exception as error:  # noqa: BLE001 - report, do not crash the probe
            return JsonResponse({"status": "degraded", "database": type(error).__name__}, status=503)

