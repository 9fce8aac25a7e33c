from django.urls import path

from dashboard.views import (
    audit,
    budgets,
    exports,
    keys,
    kpis,
    lexicon,
    members,
    memories,
    nodes,
    preview,
    schema,
    sessions,
)

app_name = "dashboard"

urlpatterns = [
    path("", memories.memories, name="memories"),
    path("nodes/<id:node_id>", nodes.node_page, name="node"),
    path("sessions", sessions.session_list, name="sessions"),
    path("sessions/<id:session_pk>", sessions.session_page, name="session"),
    path("export", exports.export_download, name="export"),
    path("preview", preview.preview, name="preview"),
    path("budgets", budgets.budgets, name="budgets"),
    path("kpis", kpis.kpi_page, name="kpis"),
    path("team", memories.team_switch, name="team_switch"),
    # Administration (issue 6 page 8)
    path("audit", audit.audit_page, name="audit"),
    path("members", members.members_page, name="members"),
    path("keys", keys.keys_page, name="keys"),
    path("schema", schema.schema_page, name="schema"),
    path("lexicon", lexicon.lexicon_page, name="lexicon"),
]
