from django.contrib import admin
from django.urls import include, path

from sessions_app import health
from sessions_app.api import urlpatterns as api_urlpatterns

urlpatterns = [
    path("admin/", admin.site.urls),
    path("health", health.health, name="health"),  # liveness: touches nothing
    path("ready", health.ready, name="ready"),  # readiness: database and channel layer
    *api_urlpatterns(),
    path("", include("sessions_app.urls")),
]
