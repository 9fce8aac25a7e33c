from django.urls import path

from dashboard.views import budgets, kpis, memories, nodes, preview, sessions

app_name = "dashboard"

urlpatterns = [
    path("", memories.memories, name="memories"),
    path("nodes/<id:node_id>", nodes.node_page, name="node"),
    path("sessions", sessions.session_list, name="sessions"),
    path("sessions/<id:session_pk>", sessions.session_page, name="session"),
    path("preview", preview.preview, name="preview"),
    path("budgets", budgets.budgets, name="budgets"),
    path("kpis", kpis.kpi_page, name="kpis"),
    path("team", memories.team_switch, name="team_switch"),
]
