"""``GET /metrics`` for Prometheus, as a view of the API: its authentication and permissions
apply. Needs the ``metrics`` extra (prometheus-client): a URLconf that routes to this view
without it fails at start-up, naming the extra (``jobs.metrics``)."""

from collections.abc import Iterable

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from .. import metrics
from .views.common import DomainErrorsMixin


class JsonErrorsNegotiation(DefaultContentNegotiation):
    """Renders a view's errors as JSON whatever the ``Accept`` header: for a view whose
    body is not DRF's to render, so that no ``Accept`` header is a 406."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = JSONRenderer()
        return renderer, renderer.media_type


class MetricsView(DomainErrorsMixin, APIView):
    """``GET /metrics``: the queue in Prometheus's text format, read from the database at
    scrape time, in the format the ``Accept`` header asks for as prometheus_client
    negotiates it (OpenMetrics for Prometheus, the classic text format for ``text/plain``,
    ``*/*`` or none). The API's authentication and permissions apply (a token in
    production: Prometheus's ``authorization: {type: Token, credentials_file: ...}``);
    errors answer JSON like the rest of the API. Not in the OpenAPI schema: it is not JSON."""

    content_negotiation_class = JsonErrorsNegotiation

    @extend_schema(exclude=True)
    def get(self, request: Request) -> HttpResponse:
        body, content_type = metrics.queue_metrics(request.META.get("HTTP_ACCEPT", ""))
        return HttpResponse(body, content_type=content_type)
