"""The team synonym lexicon over HTTP (seed 004 BusinessLexicon; R-QUERY, R-API): list, read,
add, replace, change and delete synonym sets. Thin adapters over memory.services.lexicon and
memory.selectors.lexicon.

Reading needs the read right (any key of the team; a key limited to workspaces sees the
team-wide sets and its workspaces'); writing needs a team admin (admin login or admin key).
Another team's set, or one outside a limited key's workspaces, is 404.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response

from memory import limits
from memory.api.base import TeamAPIView
from memory.api.fields import IdentityField, StrictCharField
from memory.api.serializers import StrictSerializer
from memory.api.views import SummaryPagination
from memory.errors import NotFound
from memory.selectors.lexicon import lexicon_set_get, lexicon_sets
from memory.services.lexicon import lexicon_set_delete, lexicon_set_save

TERMS_HELP = (f"2–{limits.LEXICON_TERMS_MAX} equivalent terms (过敏, 敏感, allergy), each at most "
              f"{limits.LEXICON_TERM_MAX} characters once normalised; stored normalised (NFKC, case-folded, "
              "simplified Chinese); no two equal once normalised")


def _terms_field(required: bool) -> serializers.ListField:
    # Lengths are checked once normalised, by the service; this bound only keeps a body small.
    return serializers.ListField(child=StrictCharField(allow_blank=True, trim_whitespace=False,
                                                       max_length=4 * limits.LEXICON_TERM_MAX),
                                 max_length=limits.LEXICON_TERMS_MAX, required=required, help_text=TERMS_HELP)


class LexiconSetInSerializer(StrictSerializer):
    terms = _terms_field(required=True)
    workspace_id = IdentityField(required=False, help_text="the workspace the set applies in; absent: team-wide")


class LexiconSetPatchSerializer(StrictSerializer):
    terms = _terms_field(required=False)
    workspace_id = IdentityField(required=False, help_text="move the set to this workspace")


class LexiconSetOutSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    workspace_id = serializers.CharField(allow_blank=True, help_text='"" for a team-wide set')
    terms = serializers.ListField(child=serializers.CharField(), help_text="as stored (normalised)")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    updated_by = serializers.CharField(allow_blank=True, help_text="the actor of the last change")


class LexiconPageSerializer(serializers.Serializer):
    next = serializers.CharField(allow_null=True)
    previous = serializers.CharField(allow_null=True)
    results = LexiconSetOutSerializer(many=True)


class LexiconListQuerySerializer(StrictSerializer):
    workspace_id = serializers.CharField(required=False, allow_blank=True, max_length=limits.IDENTITY_MAX,
                                         help_text='only the sets of this level; "" team-wide ones')
    cursor = serializers.CharField(required=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=limits.PAGE_SIZE_MAX)


class LexiconPagination(SummaryPagination):
    ordering = "pk"


class _LexiconView(TeamAPIView):
    @property
    def required_right(self) -> str:  # type: ignore[override]
        return "read" if self.request.method in SAFE_METHODS else "admin"


class LexiconListView(_LexiconView):
    """The team's synonym sets (oldest first, paged) and adding one."""

    @extend_schema(operation_id="lexicon_list", parameters=[LexiconListQuerySerializer],
                   responses={200: LexiconPageSerializer},
                   description="Synonym sets in the caller's reach, oldest first, with a `next` cursor. A query "
                               "whose terms match a set's term is expanded with the set's other terms.")
    def get(self, request):
        params = self.query(LexiconListQuerySerializer)
        sets = lexicon_sets(principal=request.principal, workspace_id=params.get("workspace_id"))
        paginator = LexiconPagination()
        page = paginator.paginate_queryset(sets, request, view=self)
        return paginator.get_paginated_response(LexiconSetOutSerializer(page, many=True).data)

    @extend_schema(operation_id="lexicon_create", request=LexiconSetInSerializer,
                   responses={201: LexiconSetOutSerializer},
                   description="Add a synonym set (team admins). Audited as memory.lexicon.created.")
    def post(self, request):
        data = self.body(LexiconSetInSerializer)
        row = lexicon_set_save(principal=request.principal, terms=data["terms"],
                               workspace_id=data.get("workspace_id", ""))
        return Response(LexiconSetOutSerializer(row).data, status=201)


SET_ID = OpenApiParameter("set_id", int, OpenApiParameter.PATH, description="the synonym set's id")


class LexiconSetView(_LexiconView):
    """One synonym set."""

    def _found(self, request, set_id: int):
        row = lexicon_set_get(principal=request.principal, set_id=set_id)
        if row is None:
            raise NotFound("no such synonym set in this team")
        return row

    @extend_schema(operation_id="lexicon_get", parameters=[SET_ID], responses={200: LexiconSetOutSerializer})
    def get(self, request, set_id: int):
        return Response(LexiconSetOutSerializer(self._found(request, set_id)).data)

    @extend_schema(operation_id="lexicon_update", parameters=[SET_ID], request=LexiconSetInSerializer,
                   responses={200: LexiconSetOutSerializer},
                   description="Replace the set's terms and level (team admins; workspace_id absent: team-wide). "
                               "Audited as memory.lexicon.updated.")
    def put(self, request, set_id: int):
        data = self.body(LexiconSetInSerializer)
        row = lexicon_set_save(principal=request.principal, terms=data["terms"],
                               workspace_id=data.get("workspace_id", ""), set_id=set_id)
        return Response(LexiconSetOutSerializer(row).data)

    @extend_schema(operation_id="lexicon_partial_update", parameters=[SET_ID], request=LexiconSetPatchSerializer,
                   responses={200: LexiconSetOutSerializer},
                   description="Change the terms or the workspace sent (team admins).")
    def patch(self, request, set_id: int):
        data = self.body(LexiconSetPatchSerializer)
        row = self._found(request, set_id)
        # Absent terms stay as they are when the service locks the set, not as read here.
        saved = lexicon_set_save(principal=request.principal, terms=data.get("terms"),
                                 workspace_id=data.get("workspace_id"), set_id=row.pk)
        return Response(LexiconSetOutSerializer(saved).data)

    @extend_schema(operation_id="lexicon_delete", parameters=[SET_ID], responses={204: None},
                   description="Delete the set (team admins). Audited as memory.lexicon.deleted.")
    def delete(self, request, set_id: int):
        lexicon_set_delete(principal=request.principal, set_id=set_id)
        return Response(status=204)
