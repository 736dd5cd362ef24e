from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from jobs.api.metrics import MetricsView

urlpatterns = [
    path("admin/", admin.site.urls),
    # Before the API's include, whose last pattern answers any other path under api/.
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/", include("jobs.urls")),
    # Prometheus's default metrics_path.
    path("metrics", MetricsView.as_view(), name="metrics"),
]

handler500 = "jobs.api.views.server_error"

if settings.ENABLE_DJANGO_DEBUG_TOOLBAR:
    from debug_toolbar.toolbar import debug_toolbar_urls

    urlpatterns += debug_toolbar_urls()
