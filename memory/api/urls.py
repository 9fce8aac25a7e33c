from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView

from memory.api import capture_views, kpi_views, lexicon_views, policy_views, portability_views, sessions, views, working_views
from memory.api import governance_views as gv
from memory.api import profile_views as pv

urlpatterns = [
    path("messages", views.MessagesView.as_view(), name="api-messages"),
    # `path`: a session id may contain "/". The working memory is matched first; a DELETE there
    # forgets the session whose id ends in "/working-memory" (memory.api.working_views).
    path("sessions/<path:session_id>/working-memory", working_views.WorkingMemoryView.as_view(),
         name="api-session-working-memory"),
    path("sessions/<path:session_id>", sessions.SessionView.as_view(), name="api-session"),
    path("summaries", views.SummariesView.as_view(), name="api-summaries"),
    path("summaries/latest", views.SummaryLatestView.as_view(), name="api-summary-latest"),
    path("context", views.ContextView.as_view(), name="api-context"),
    path("retrievals/<id:retrieval_id>", views.RetrievalView.as_view(), name="api-retrieval"),
    path("retrievals/<id:retrieval_id>/feedback", kpi_views.RetrievalFeedbackView.as_view(),
         name="api-retrieval-feedback"),
    path("memory/search", views.MemorySearchView.as_view(), name="api-memory-search"),
    path("memory/get", views.MemoryGetView.as_view(), name="api-memory-get"),
    path("memory/propose", gv.MemoryProposeView.as_view(), name="api-memory-propose"),
    path("memory/forget", gv.MemoryForgetView.as_view(), name="api-memory-forget"),
    path("memory/extractions", gv.ExtractionsView.as_view(), name="api-memory-extractions"),
    path("tools", gv.ToolsView.as_view(), name="api-tools"),
    path("kpis", kpi_views.KpisView.as_view(), name="api-kpis"),
    path("capture/stats", capture_views.CaptureStatsView.as_view(), name="api-capture-stats"),
    path("nodes", views.NodeListView.as_view(), name="api-nodes"),
    path("nodes/<id:node_id>", gv.NodeView.as_view(), name="api-node"),
    path("nodes/<id:node_id>/restore", gv.NodeRestoreView.as_view(), name="api-node-restore"),
    path("nodes/<id:node_id>/history", views.NodeHistoryView.as_view(), name="api-node-history"),
    # `path`: a user id may contain "/"; the two sub-resources are matched first.
    path("profiles/<path:user_id>/versions", pv.ProfileVersionsView.as_view(), name="api-profile-versions"),
    path("profiles/<path:user_id>/rollback", pv.ProfileRollbackView.as_view(), name="api-profile-rollback"),
    path("profiles/<path:user_id>", pv.ProfileView.as_view(), name="api-profile"),
    path("policies", policy_views.TeamPolicyView.as_view(), name="api-policies"),
    path("instructions", policy_views.InstructionsView.as_view(), name="api-instructions"),
    path("policies/simulate", policy_views.PolicySimulationView.as_view(), name="api-policy-simulate"),
    # `path`: a workspace id may contain "/".
    path("policies/workspaces/<path:workspace_id>", policy_views.WorkspacePolicyView.as_view(),
         name="api-policy-workspace"),
    path("lexicon", lexicon_views.LexiconListView.as_view(), name="api-lexicon"),
    path("lexicon/<id:set_id>", lexicon_views.LexiconSetView.as_view(), name="api-lexicon-set"),
    path("export", portability_views.ExportView.as_view(), name="api-export"),
    path("import", portability_views.ImportView.as_view(), name="api-import"),
    path("schema", SpectacularAPIView.as_view(authentication_classes=[], permission_classes=[]), name="api-schema"),
    re_path(r"^.*$", views.UnknownEndpointView.as_view(), name="api-unknown"),
]
