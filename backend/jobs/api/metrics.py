"""``GET /metrics`` for Prometheus, as a view of the API: its authentication and permissions
apply. Needs the ``metrics`` extra (prometheus-client): a URLconf that routes to this view
without it fails at start-up, naming the extra (``jobs.metrics``)."""

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from .. import metrics
from .views import DomainErrorsMixin


class MetricsView(DomainErrorsMixin, APIView):
    """``GET /metrics``: the queue in Prometheus's text format, read from the database at
    scrape time. The API's authentication and permissions apply (a token in production:
    Prometheus's ``authorization: {type: Token, credentials_file: ...}``); errors answer
    JSON like the rest of the API. Not in the OpenAPI schema: it is not JSON."""

    @extend_schema(exclude=True)
    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(metrics.queue_metrics_text(), content_type=metrics.CONTENT_TYPE)
