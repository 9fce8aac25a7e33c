from django.urls import include, path

urlpatterns = [
    path("", include("dashboard.urls")),
    path("api/v1/", include("memory.api.urls")),
    path("healthz", include("memory.api.health_urls")),
]
