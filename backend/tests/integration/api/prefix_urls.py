"""A project's URLconf that mounts the API somewhere else than this project's /api/."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("queue/v1/", include("jobs.urls")),
]
