from django.urls import path

from memory.api.views import HealthView

urlpatterns = [path("", HealthView.as_view(), name="healthz")]
