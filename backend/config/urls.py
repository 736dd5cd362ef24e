from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from jobs.views import MetricsView, api_not_found

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/", include("jobs.urls")),
    # Prometheus's default metrics_path.
    path("metrics", MetricsView.as_view(), name="metrics"),
    # Any other path under /api/ is a JSON 404, whatever the method (see api_not_found).
    re_path(r"^api/", api_not_found),
]

handler500 = "jobs.views.server_error"

if settings.ENABLE_DJANGO_DEBUG_TOOLBAR:
    from debug_toolbar.toolbar import debug_toolbar_urls

    urlpatterns += debug_toolbar_urls()
