from django.urls import path

from dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.memories, name="memories"),
    path("nodes/<id:node_id>", views.node_detail, name="node"),
    path("team", views.team_switch, name="team_switch"),
]
