"""GET/PUT/PATCH /api/v1/sessions/{session_id}/working-memory (seed 004 L4; R-CTX, R-API):
the session's working state — current goal, resolved references, clarification slots,
scratchpad. Thin adapters over memory.selectors.working_memory and
memory.services.working_memory, where the rules are.

The session is named like on the other session endpoints: session_id in the path (it may
contain "/"), workspace_id and user_id in the query string. GET of a session with nothing
written yet answers the empty document at version 0; of an unknown (or soft-deleted) session,
404. Every answer carries `ETag: "<version>"`. A write may name the version it read, in the
body (`expected_version`) or as `If-Match: "<version>"` (both: they must agree); a stale one
is 409 version_conflict. With an Idempotency-Key prefer the body field: the key's request
fingerprint covers the body, not the headers.

DELETE always names a whole session (memory.api.sessions): this route also serves the
DELETE of a session whose id itself ends in "/working-memory".
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from memory import limits
from memory.api.base import TeamAPIView, session_ref
from memory.api.fields import StrictCharField, StrictIntegerField
from memory.api.serializers import OwnerFields, StrictSerializer
from memory.api.sessions import SessionView
from memory.errors import InvalidInput
from memory.selectors.working_memory import sorted_object, working_memory_get
from memory.services.working_memory import working_memory_patch, working_memory_put
from memory.working_models import WorkingMemory

SUFFIX = "working-memory"
VERSION_MAX = limits.VERSION_MAX
IF_MATCH = "If-Match"


@extend_schema_field(OpenApiTypes.OBJECT)
class JSONObjectField(serializers.JSONField):
    """A JSON object (not an array, string or number); keys in code-point order on the way out."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object")
        return super().to_internal_value(data)

    def to_representation(self, value):
        return sorted_object(value)


class WorkingMemoryQuerySerializer(OwnerFields):
    """The query string; the session id is in the path."""


class WorkingMemoryInSerializer(StrictSerializer):
    """PUT: the whole document (a field left out becomes empty). PATCH: the fields to change."""

    current_goal = StrictCharField(required=False, allow_blank=True, trim_whitespace=False,
                                   help_text=f"what the conversation is after now; at most {limits.WORKING_GOAL_MAX} "
                                             "characters")
    references = JSONObjectField(required=False, help_text=(
        f'resolved references, e.g. {{"它": "番茄炒蛋", "the report": "Q3 report"}}; at most '
        f"{limits.WORKING_KEYS_MAX} keys of 1–{limits.WORKING_KEY_MAX} characters, each value any JSON of at most "
        f"{limits.WORKING_VALUE_JSON_MAX} characters and {limits.WORKING_VALUE_DEPTH_MAX} levels. PATCH merges "
        "key by key; null deletes the key"))
    slots = JSONObjectField(required=False, help_text=(
        'clarification slots, e.g. {"cuisine": null, "people": 2} (null: asked, not answered yet); limits as for '
        "references. PATCH merges key by key; null deletes the key (so only PUT stores a null slot)"))
    scratchpad = StrictCharField(required=False, allow_blank=True, trim_whitespace=False,
                                 help_text=f"the agent's notes; at most {limits.WORKING_SCRATCHPAD_MAX} characters")
    expected_version = StrictIntegerField(required=False, min_value=0, max_value=VERSION_MAX, help_text=(
        "write only if the document is still at this version (0: nothing written yet); else 409. "
        "Same as the If-Match header"))


class WorkingMemoryOutSerializer(serializers.Serializer):
    session_id = serializers.CharField(source="session.external_id")
    workspace_id = serializers.CharField(source="session.workspace_id")
    user_id = serializers.CharField(source="session.user_id")
    current_goal = serializers.CharField()
    references = JSONObjectField(help_text="keys in code-point order")
    slots = JSONObjectField(help_text="keys in code-point order")
    scratchpad = serializers.CharField()
    version = serializers.IntegerField(help_text="0 until the first write that stores something; +1 per change")
    updated_at = serializers.DateTimeField(allow_null=True)
    updated_by = serializers.CharField(help_text="the audit actor of the last change (key:… or user:…)")


SESSION_ID = OpenApiParameter("session_id", str, OpenApiParameter.PATH, description="the agent's session id")
IF_MATCH_HEADER = OpenApiParameter(IF_MATCH, str, OpenApiParameter.HEADER, required=False,
                                   description='the version read, as its ETag ("3"); like expected_version')


def _if_match(request) -> int | None:
    header = request.headers.get(IF_MATCH)
    if header is None:
        return None
    tag = header.strip().removeprefix("W/").strip('"')
    if not (tag.isascii() and tag.isdigit() and len(tag) <= 10 and int(tag) <= VERSION_MAX):
        message = 'must be the version read, as its ETag: "3"'
        raise InvalidInput(f"{IF_MATCH} {message}", fields={IF_MATCH: [message]})
    return int(tag)


class WorkingMemoryView(TeamAPIView):
    """A session's working memory. Reading needs read rights; writing, the right to write
    session-scope memory (TeamAPIView's default by method, then the service)."""

    def _ref(self, session_id: str):
        return session_ref({**self.query(WorkingMemoryQuerySerializer), "session_id": session_id})

    def _write_input(self) -> tuple[dict, int | None]:
        data = dict(self.body(WorkingMemoryInSerializer))
        in_body = data.pop("expected_version", None)
        in_header = _if_match(self.request)
        if in_body is not None and in_header is not None and in_body != in_header:
            message = f"If-Match ({in_header}) and expected_version ({in_body}) disagree"
            raise InvalidInput(message, fields={"expected_version": [message]})
        return data, in_body if in_body is not None else in_header

    def _answer(self, memory: WorkingMemory) -> Response:
        return Response(WorkingMemoryOutSerializer(memory).data, headers={"ETag": f'"{memory.version}"'})

    @extend_schema(
        operation_id="sessions_working_memory_get",
        parameters=[SESSION_ID, WorkingMemoryQuerySerializer],
        responses={200: WorkingMemoryOutSerializer},
        description="The session's working memory (seed 004 L4). A session nothing was written to yet answers "
                    "the empty document at version 0; an unknown or soft-deleted session, 404.",
    )
    def get(self, request, session_id: str):
        return self._answer(working_memory_get(principal=request.principal, ref=self._ref(session_id)))

    @extend_schema(
        operation_id="sessions_working_memory_put",
        parameters=[SESSION_ID, WorkingMemoryQuerySerializer, IF_MATCH_HEADER],
        request=WorkingMemoryInSerializer,
        responses={200: WorkingMemoryOutSerializer},
        description="Replace the whole working memory; a field left out becomes empty. Creates the session if "
                    "needed, like appending a message; a soft-deleted session is 409. A limit broken anywhere is "
                    "400 and nothing is stored. A stale expected_version / If-Match is 409 version_conflict. "
                    "Audited (field names only).",
    )
    def put(self, request, session_id: str):
        data, expected_version = self._write_input()
        memory = working_memory_put(principal=request.principal, ref=self._ref(session_id), data=data,
                                    expected_version=expected_version)
        return self._answer(memory)

    @extend_schema(
        operation_id="sessions_working_memory_patch",
        parameters=[SESSION_ID, WorkingMemoryQuerySerializer, IF_MATCH_HEADER],
        request=WorkingMemoryInSerializer,
        responses={200: WorkingMemoryOutSerializer},
        description="Change the fields named: current_goal and scratchpad are replaced; references and slots are "
                    "merged key by key, and a key set to null is deleted (JSON Merge Patch). At least one field. "
                    "Limits apply to the merged document. Otherwise as PUT.",
    )
    def patch(self, request, session_id: str):
        changes, expected_version = self._write_input()
        memory = working_memory_patch(principal=request.principal, ref=self._ref(session_id), changes=changes,
                                      expected_version=expected_version)
        return self._answer(memory)

    @extend_schema(exclude=True)
    def delete(self, request, session_id: str):
        # DELETE forgets a session: here, one whose id itself ends in "/working-memory".
        return SessionView.delete(self, request, f"{session_id}/{SUFFIX}")
