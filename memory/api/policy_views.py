"""Budget policies over HTTP (seed 004 §7, §10; R-CTX, R-TEN): read the team's or a
workspace's policy with the effective values and where each came from; admins change them.
Thin adapters over memory.services.policies and memory.selectors.budget.

PUT replaces a level's policy (settings left out inherit again); PATCH changes the
settings sent. In both, null clears a setting back to inherit. Reading needs the read right
(a key limited to workspaces reads only their policies, never the team's); writing needs a
team admin (admin login or admin key).
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response

from accounts.principal import Principal
from memory import limits
from memory.api.base import TeamAPIView
from memory.api.fields import (
    IdentityField,
    StrictBooleanField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)
from memory.api.serializers import StrictSerializer
from memory.instruction_models import PinnedInstructions
from memory.policy_models import POLICY_FIELDS
from memory.selectors.budget import budget_resolve
from memory.selectors.simulation import policy_simulate
from memory.services.instructions import instructions_set
from memory.services.policies import policy_get, policy_set, range_message
from memory.validation import clean_identity


def switch(help_text: str) -> StrictBooleanField:
    return StrictBooleanField(required=False, allow_null=True, help_text=help_text + "; null inherits")


def bounded(name: str, help_text: str) -> serializers.Field:
    low, high = limits.POLICY_RANGES[name]
    messages = {"min_value": range_message(name), "max_value": range_message(name)}
    field_class = StrictFloatField if name == "min_confidence" else StrictIntegerField
    return field_class(required=False, allow_null=True, min_value=low, max_value=high, error_messages=messages,
                       help_text=f"{help_text}, {low}–{high}; null inherits")


class PolicyInSerializer(StrictSerializer):
    """The settings of one level (team or workspace); sizes in characters."""

    enabled = switch("pre-injection on or off (seed preInject.enabled)")
    top_n = bounded("top_n", "relevant memories (L5) at most")
    max_chars = bounded("max_chars", "characters of the whole block")
    recent_messages = bounded("recent_messages", "recent messages in the window (L3)")
    min_confidence = bounded("min_confidence", "nodes below this confidence are left out")
    summary_enabled = switch("the conversation summary (L3) on or off")
    l0_enabled = switch("layer L0 (foundation) on or off")
    l1_enabled = switch("layer L1 (shared organisational memory) on or off")
    l2_enabled = switch("layer L2 (long-term user memory) on or off")
    l3_enabled = switch("layer L3 (conversation window) on or off")
    l4_enabled = switch("layer L4 (working memory) on or off")
    l5_enabled = switch("layer L5 (retrieval) on or off")
    l0_chars = bounded("l0_chars", "characters of layer L0 at most")
    l1_chars = bounded("l1_chars", "characters of layer L1 at most")
    l2_chars = bounded("l2_chars", "characters of layer L2 at most")
    l3_chars = bounded("l3_chars", "characters of layer L3 at most")
    l4_chars = bounded("l4_chars", "characters of layer L4 at most")
    l5_chars = bounded("l5_chars", "characters of layer L5 at most")


class PolicyOutSerializer(serializers.Serializer):
    workspace_id = serializers.CharField(help_text='"" for the team-wide policy')
    level = serializers.CharField(help_text="team | workspace")
    policy = serializers.JSONField(help_text="{setting: value} as stored at this level; null inherits")
    updated_at = serializers.DateTimeField(allow_null=True, help_text="null: never set")
    updated_by = serializers.CharField(help_text="the actor of the last change")
    effective = serializers.JSONField(
        help_text="{setting: {value, source}} in force for a context call at this level; source is "
                  "default | environment | team | workspace")


WORKSPACE_ID = OpenApiParameter("workspace_id", str, OpenApiParameter.PATH, description="the workspace's id")


def policy_output(principal: Principal, workspace_id: str) -> dict:
    policy = policy_get(principal=principal, workspace_id=workspace_id)
    effective = budget_resolve(team=principal.team, workspace_id=workspace_id)
    return PolicyOutSerializer({
        "workspace_id": workspace_id,
        "level": "workspace" if workspace_id else "team",
        "policy": policy.settings(),
        "updated_at": policy.updated_at if policy.pk else None,
        "updated_by": policy.updated_by,
        "effective": effective.as_dict(),
    }).data


class _PolicyView(TeamAPIView):
    @property
    def required_right(self) -> str:  # type: ignore[override]
        return "read" if self.request.method in SAFE_METHODS else "admin"

    def _read(self, request, workspace_id: str) -> Response:
        return Response(policy_output(request.principal, workspace_id))

    def _write(self, request, workspace_id: str, *, replace: bool) -> Response:
        data = self.body(PolicyInSerializer)
        changes = {name: data.get(name) for name in POLICY_FIELDS} if replace else dict(data)
        policy_set(principal=request.principal, workspace_id=workspace_id, changes=changes)
        return Response(policy_output(request.principal, workspace_id))


class TeamPolicyView(_PolicyView):
    """The team-wide budget policy."""

    @extend_schema(operation_id="policies_team_get", responses={200: PolicyOutSerializer},
                   description="The team's policy and the effective budget for a context call without a "
                               "workspace policy, each value with its source. Not for keys limited to workspaces.")
    def get(self, request):
        return self._read(request, "")

    @extend_schema(operation_id="policies_team_update", request=PolicyInSerializer,
                   responses={200: PolicyOutSerializer},
                   description="Replace the team's policy (team admins). Settings left out or null inherit.")
    def put(self, request):
        return self._write(request, "", replace=True)

    @extend_schema(operation_id="policies_team_partial_update", request=PolicyInSerializer,
                   responses={200: PolicyOutSerializer},
                   description="Change the settings sent (team admins); null clears one back to inherit.")
    def patch(self, request):
        return self._write(request, "", replace=False)


class WorkspacePolicyView(_PolicyView):
    """One workspace's budget policy, over the team's."""

    @extend_schema(operation_id="policies_workspace_get", parameters=[WORKSPACE_ID],
                   responses={200: PolicyOutSerializer},
                   description="The workspace's policy and the effective budget of a context call in it, each "
                               "value with its source (default, environment, team or workspace).")
    def get(self, request, workspace_id: str):
        return self._read(request, workspace_id)

    @extend_schema(operation_id="policies_workspace_update", parameters=[WORKSPACE_ID], request=PolicyInSerializer,
                   responses={200: PolicyOutSerializer},
                   description="Replace the workspace's policy (team admins). Settings left out or null inherit "
                               "from the team's.")
    def put(self, request, workspace_id: str):
        return self._write(request, workspace_id, replace=True)

    @extend_schema(operation_id="policies_workspace_partial_update", parameters=[WORKSPACE_ID],
                   request=PolicyInSerializer, responses={200: PolicyOutSerializer},
                   description="Change the settings sent (team admins); null clears one back to inherit.")
    def patch(self, request, workspace_id: str):
        return self._write(request, workspace_id, replace=False)


class SimulateInSerializer(StrictSerializer):
    workspace_id = IdentityField(required=False, help_text="simulate this workspace's policy; absent: the team's")
    changes = PolicyInSerializer(help_text="the draft: settings to change (null clears one), as for PATCH")
    last = StrictIntegerField(required=False, min_value=1, max_value=limits.SIMULATION_CALLS_MAX,
                              default=limits.SIMULATION_CALLS_DEFAULT, help_text="recorded context calls to rebuild")


class PolicySimulationView(TeamAPIView):
    """Rebuild recorded context calls under a draft policy before saving it (team admins)."""

    required_right = "admin"
    replays = False  # it writes nothing

    @extend_schema(operation_id="policies_simulate", request=SimulateInSerializer,
                   responses={200: inline_serializer("PolicySimulation", {
                       "level": serializers.CharField(), "workspace_id": serializers.CharField(),
                       "draft": serializers.DictField(), "calls": serializers.IntegerField(),
                       "before": serializers.DictField(), "after": serializers.DictField(),
                       "per_call": serializers.ListField(child=serializers.DictField()),
                   })},
                   description="The last recorded context calls (same store, same queries) under the policy in "
                               "force and under the draft: hit rate, injected characters, memories per call, "
                               "omitted by reason, and per call what the draft adds or removes. Writes nothing.")
    def post(self, request):
        data = self.body(SimulateInSerializer)
        return Response(policy_simulate(principal=request.principal, workspace_id=data.get("workspace_id", ""),
                                        changes=dict(data["changes"]), last=data["last"]))


class InstructionsInSerializer(StrictSerializer):
    text = StrictCharField(max_length=limits.INSTRUCTIONS_MAX, allow_blank=True, trim_whitespace=False,
                           help_text="pinned for every context call (L0); empty removes the pin")


class InstructionsOutSerializer(serializers.Serializer):
    workspace_id = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    updated_at = serializers.DateTimeField(allow_null=True)
    updated_by = serializers.CharField(allow_blank=True)


def instructions_output(row, workspace_id: str) -> dict:
    return {"workspace_id": workspace_id, "text": row.text if row else "",
            "updated_at": row.updated_at if row else None, "updated_by": row.updated_by if row else ""}


class InstructionsView(TeamAPIView):
    """L0 pinned instructions of the team (no workspace_id) or of one workspace."""

    @property
    def required_right(self) -> str:  # type: ignore[override]
        return "read" if self.request.method in SAFE_METHODS else "admin"

    def _workspace(self, request) -> str:
        workspace_id = clean_identity(request.query_params.get("workspace_id", ""), field="workspace_id")
        request.principal.check_workspace(workspace_id)
        return workspace_id

    @extend_schema(operation_id="instructions_get", parameters=[
        OpenApiParameter("workspace_id", str, required=False, description="a workspace's; absent: the team's")],
        responses={200: InstructionsOutSerializer})
    def get(self, request):
        workspace_id = self._workspace(request)
        row = PinnedInstructions.objects.filter(team=request.principal.team, workspace_id=workspace_id).first()
        return Response(instructions_output(row, workspace_id))

    @extend_schema(operation_id="instructions_set", parameters=[
        OpenApiParameter("workspace_id", str, required=False, description="a workspace's; absent: the team's")],
        request=InstructionsInSerializer, responses={200: InstructionsOutSerializer})
    def put(self, request):
        workspace_id = self._workspace(request)
        data = self.body(InstructionsInSerializer)
        row = instructions_set(principal=request.principal, workspace_id=workspace_id, text=data["text"])
        return Response(instructions_output(row, workspace_id))
