from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from accounts.views import LoginView
from memory.api.views import UnknownEndpointView
from memory.ops.views import health_full_view, metrics_view

# Errors under /api/ are JSON in the one error shape, whatever raised them (R-API).
handler404 = "memory.api.errors.not_found_view"
handler500 = "memory.api.errors.server_error_view"

urlpatterns = [
    path("login", LoginView.as_view(), name="login"),
    path("logout", auth_views.LogoutView.as_view(), name="logout"),
    re_path(r"^api(/v1)?$", UnknownEndpointView.as_view()),  # no redirect to the slash form: a JSON 404 for any method
    path("", include("dashboard.urls", namespace="dashboard")),
    path("api/v1/", include("memory.api.urls")),
    path("healthz", include("memory.api.health_urls")),
    path("healthz/full", health_full_view, name="healthz-full"),
    path("metrics", metrics_view, name="metrics"),
]
