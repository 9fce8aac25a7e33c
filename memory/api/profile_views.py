"""The user profile document over HTTP (seed 004 L2; R-EXTRACT, R-API): read the current or
an earlier version, list the versions, roll back. Thin adapters over
memory.selectors.profiles and memory.services.profiles.

The user id is the rest of the path (it may contain "/"); a user id that itself ends in
"/versions" or "/rollback" is read through the list of versions.
"""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response

from memory import limits
from memory.api.base import TeamAPIView
from memory.api.fields import IdentityField, StrictCharField, StrictIntegerField
from memory.api.serializers import StrictSerializer
from memory.api.views import SummaryPagination
from memory.errors import NotFound
from memory.selectors.profiles import profile_as_injected, profile_version_get, profile_versions
from memory.services.profiles import profile_rollback

VERSION_MAX = limits.VERSION_MAX


def workspace_field() -> IdentityField:
    return IdentityField(required=False, help_text="required for a key limited to workspaces: one of them")


class ProfileQuerySerializer(StrictSerializer):
    workspace_id = workspace_field()
    version = serializers.IntegerField(required=False, min_value=1, max_value=VERSION_MAX,
                                       help_text="an earlier version; default: the current one")


class ProfileVersionsQuerySerializer(StrictSerializer):
    workspace_id = workspace_field()
    cursor = serializers.CharField(required=False, max_length=512)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=limits.PAGE_SIZE_MAX)


class RollbackInSerializer(StrictSerializer):
    workspace_id = workspace_field()
    version = StrictIntegerField(min_value=1, max_value=VERSION_MAX, help_text="the version to make current again")
    reason = StrictCharField(max_length=limits.REASON_MAX, required=False, allow_blank=True, default="")


class ProfileVersionItemSerializer(serializers.Serializer):
    """A version without its content (read it with GET /profiles/{user_id}?version=N)."""

    user_id = serializers.CharField()
    version = serializers.IntegerField()
    reason = serializers.CharField(help_text="consolidate | compact | rollback")
    generator = serializers.CharField(help_text="rules | llm")
    rolled_back_from = serializers.IntegerField(allow_null=True)
    summary = serializers.CharField(help_text=f"at most {limits.PROFILE_SUMMARY_MAX} characters")
    content_chars = serializers.SerializerMethodField()
    source_node_ids = serializers.ListField(child=serializers.IntegerField(), help_text="the nodes it was built from")
    actor = serializers.CharField()
    created_at = serializers.DateTimeField()
    redacted_at = serializers.DateTimeField(allow_null=True, help_text="when a forgotten memory's line was taken out")

    def get_content_chars(self, version) -> int:
        return len(version.content)


class ChangedSinceLayoutSerializer(serializers.Serializer):
    replaced = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()),
                                     help_text="[old node id, its active successor's id] per line corrected since")
    edited = serializers.ListField(child=serializers.IntegerField(), help_text="nodes edited since (title or content)")
    left_out = serializers.ListField(child=serializers.IntegerField(), help_text="nodes forgotten or expired since")


class ProfileVersionOutSerializer(ProfileVersionItemSerializer):
    content = serializers.CharField(help_text=f"at most {limits.PROFILE_CONTENT_MAX} characters, "
                                              "'## group' headings and '- ' lines")
    changed_since_layout = serializers.SerializerMethodField(
        help_text="the current version only, when a memory it was laid out from changed since: its lines then "
                  "name the memories as they are now (summary and content laid out again by rules; the stored "
                  "version, ?version=N, stays as written); null otherwise")

    @extend_schema_field(ChangedSinceLayoutSerializer(allow_null=True))
    def get_changed_since_layout(self, version) -> dict | None:
        return getattr(version, "changed_since_layout", None)


class ProfileVersionPageSerializer(serializers.Serializer):
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = ProfileVersionItemSerializer(many=True)


class ProfileVersionPagination(SummaryPagination):
    ordering = "-version"


USER_ID = OpenApiParameter("user_id", str, OpenApiParameter.PATH, description="the end user's id")


class ProfileView(TeamAPIView):
    """The user's profile document: the current version, or the one asked for."""

    required_right = "read"

    @extend_schema(operation_id="profiles_get", parameters=[USER_ID, ProfileQuerySerializer],
                   responses={200: ProfileVersionOutSerializer},
                   description="The current version of the user's profile document (summary, content, version) "
                               "as it holds now, as the context call injects it (see changed_since_layout), "
                               "or `?version=N` as stored. 404 when the user has no profile yet.")
    def get(self, request, user_id: str):
        params = self.query(ProfileQuerySerializer)
        request.principal.check_workspace(params.get("workspace_id", ""))
        if "version" in params:
            version = profile_version_get(principal=request.principal, user_id=user_id, version=params["version"])
        else:
            version = profile_as_injected(principal=request.principal, user_id=user_id, now=timezone.now())
            if version is None:
                raise NotFound(f"no profile for user {user_id!r}")
        return Response(ProfileVersionOutSerializer(version).data)


class ProfileVersionsView(TeamAPIView):
    """Every version of the user's profile document, newest first."""

    required_right = "read"

    @extend_schema(operation_id="profiles_versions", parameters=[USER_ID, ProfileVersionsQuerySerializer],
                   responses={200: ProfileVersionPageSerializer},
                   description="The versions of the user's profile, newest first, without their content; "
                               "`next` pages to older ones. Versions are never deleted.")
    def get(self, request, user_id: str):
        request.principal.check_workspace(self.query(ProfileVersionsQuerySerializer).get("workspace_id", ""))
        paginator = ProfileVersionPagination()
        versions = profile_versions(principal=request.principal, user_id=user_id)
        page = paginator.paginate_queryset(versions, request, view=self)
        return paginator.get_paginated_response(ProfileVersionItemSerializer(page, many=True).data)


class ProfileRollbackView(TeamAPIView):
    """Make an earlier version current again, as a new version."""

    required_right = "write"

    @extend_schema(operation_id="profiles_rollback", parameters=[USER_ID], request=RollbackInSerializer,
                   responses={201: ProfileVersionOutSerializer},
                   description="Appends version N+1, a copy of the version named (reason `rollback`); no version "
                               "is deleted. Needs the right to write user memory.")
    def post(self, request, user_id: str):
        data = self.body(RollbackInSerializer)
        request.principal.check_workspace(data.get("workspace_id", ""))
        version = profile_rollback(principal=request.principal, user_id=user_id, version=data["version"],
                                   reason=data["reason"])
        return Response(ProfileVersionOutSerializer(version).data, status=201)
