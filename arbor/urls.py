from django.contrib import admin
from django.urls import path

from arbor import views
from sessions_app import health
from sessions_app.api import urlpatterns as api_urlpatterns

urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    path("health", health.health, name="health"),
    *api_urlpatterns(),
]
