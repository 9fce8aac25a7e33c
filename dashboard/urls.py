from django.urls import path

from dashboard.views import memories, nodes

app_name = "dashboard"

urlpatterns = [
    path("", memories.memories, name="memories"),
    path("nodes/<id:node_id>", nodes.node_page, name="node"),
    path("team", memories.team_switch, name="team_switch"),
]
