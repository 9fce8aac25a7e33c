"""Proposals, forgetting, restore, extraction batches and the tool definitions (R-TOOLS, R-STORE, R-API)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from memory.api import governance_serializers as g
from memory.api import serializers as s
from memory.api.base import TeamAPIView, owner_of
from memory.api.tool_calls import forget_output, proposal_from, proposal_output, tool_call
from memory.api.tools import tool_definitions, tool_endpoints
from memory.api.views import NodeDetailView
from memory.selectors.nodes import node_get
from memory.services.forgetting import ForgetSelector, memory_forget, node_restore
from memory.services.proposals import extraction_apply
from memory.services.schema import schema_summary


class MemoryProposeView(TeamAPIView):
    """memory_propose_update (first form): create, update or supersede a node, validated."""

    required_right = "write"

    @extend_schema(operation_id="memory_propose", request=s.ProposeInSerializer,
                   responses={200: s.ProposeOutSerializer, 201: s.ProposeOutSerializer})
    def post(self, request):
        answer = tool_call(request.principal, "memory_propose_update", request.data)
        return Response(answer.body, status=answer.status)


class MemoryForgetView(TeamAPIView):
    """memory_forget: by id or selector; several candidates or a hard delete need confirm."""

    required_right = "write"

    @extend_schema(operation_id="memory_forget", request=g.ForgetInSerializer, responses={200: g.ForgetOutSerializer})
    def post(self, request):
        answer = tool_call(request.principal, "memory_forget", request.data)
        return Response(answer.body, status=answer.status)


class NodeView(NodeDetailView):
    """GET a node; DELETE /nodes/{id}?mode=soft|hard forgets it directly (no confirmation step)."""

    @extend_schema(operation_id="nodes_delete", parameters=[g.NodeDeleteQuerySerializer],
                   responses={200: g.ForgetOutSerializer})
    def delete(self, request, node_id: int):
        params = self.query(g.NodeDeleteQuerySerializer)
        result = memory_forget(principal=request.principal, selector=ForgetSelector(owner=owner_of(params), node_id=node_id),
                               mode=params["mode"], reason=params["reason"], confirm=True, confirm_hard=False)
        return Response(forget_output(result))


class NodeRestoreView(TeamAPIView):
    """Undo a soft delete or a supersede of this node."""

    required_right = "write"

    @extend_schema(operation_id="nodes_restore", request=g.RestoreInSerializer, responses={200: s.NodeOutSerializer})
    def post(self, request, node_id: int):
        data = self.body(g.RestoreInSerializer)
        node = node_restore(principal=request.principal, node_id=node_id, reason=data["reason"],
                            workspace_id=data.get("workspace_id", ""))
        return Response(s.NodeOutSerializer(node_get(principal=request.principal, node_id=node.pk)).data)


class ExtractionsView(TeamAPIView):
    """An agent-supplied MemoryExtraction: many proposals, one transaction, all or nothing."""

    required_right = "write"

    @extend_schema(operation_id="memory_extractions", request=g.ExtractionInSerializer,
                   responses={200: g.ExtractionOutSerializer, 201: g.ExtractionOutSerializer})
    def post(self, request):
        data = self.body(g.ExtractionInSerializer)
        batch = {name: data.get(name, "") for name in ("workspace_id", "user_id", "session_id")}
        proposals = [proposal_from({**batch, **{k: v for k, v in item.items() if v != "" or k not in batch}})
                     for item in data["operations"]]
        applied, results = extraction_apply(principal=request.principal, proposals=proposals)
        body = {"applied": applied, "results": [proposal_output(request.principal, result) for result in results]}
        return Response(body, status=201 if applied and any(result.created for result in results) else 200)


class ToolsView(TeamAPIView):
    """The four memory tools as JSON-Schema function definitions for an LLM (R-TOOLS)."""

    @extend_schema(operation_id="tools_list", parameters=[
        OpenApiParameter("provider", str, enum=["openai", "anthropic"], required=False,
                         description="openai: [{type: function, function: {name, description, parameters}}]; "
                                     "anthropic: [{name, description, input_schema}]"),
    ], responses={200: inline_serializer("ToolList", {
        "tools": serializers.ListField(child=serializers.DictField()),
        "endpoints": serializers.DictField(child=serializers.CharField(), help_text="tool name → request to make"),
    })})
    def get(self, request):
        flavour = request.query_params.get("provider", "openai")
        if flavour not in ("openai", "anthropic"):
            raise ValidationError({"provider": ["openai or anthropic"]})
        summary = schema_summary(team=request.principal.team)
        return Response({"tools": tool_definitions(flavour, schema_summary=summary), "endpoints": tool_endpoints()})
