"""The API's index, its health check and the configuration document."""

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ...drivers import get_driver
from .. import answers
from ..serializers.config import ConfigSerializer, HealthSerializer
from .common import DomainErrorsMixin, SelectorView, read_schema

API_INDEX_SCHEMA = OpenApiResponse(
    {
        "type": "object",
        # URI templates ({id}), so no "format": "uri".
        "additionalProperties": {"type": "string"},
        "description": "Each endpoint's route name and absolute URL, a URI template where "
        "it takes a job's id ({id}).",
    },
    description="The API's entry points.",
)


def api_index(request: HttpRequest) -> dict[str, str]:
    """Every named route of ``jobs.urls`` under the prefix this request came in on, as
    absolute URLs (``{id}`` for a job's id), and the project's schema and docs if it has
    them. Nothing assumes the prefix is ``/api/``."""
    from ..urls import urlpatterns  # the URLconf imports this module

    # Joined after build_absolute_uri, which would percent-encode the braces of {id}.
    root = request.build_absolute_uri(request.path)
    index: dict[str, str] = {}
    for pattern in urlpatterns:
        name = getattr(pattern, "name", None)
        if not name or name == "api-index":
            continue
        route = str(pattern.pattern).replace("<str:id>", "{id}")
        index[name] = root + route
    for name in ("schema", "docs"):
        try:
            index[name] = request.build_absolute_uri(reverse(name))
        except NoReverseMatch:
            continue
    return index


class ApiIndexView(DomainErrorsMixin, APIView):
    """The API's entry points; never needs credentials (it lists URLs, no data)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="api_index",
        tags=["health"],
        auth=[],
        responses={200: API_INDEX_SCHEMA},
        examples=[
            OpenApiExample(
                "Mounted at /api/",
                value={
                    "health": "http://localhost:8000/api/health/",
                    "job-list": "http://localhost:8000/api/jobs/",
                    "job-detail": "http://localhost:8000/api/jobs/{id}/",
                },
            )
        ],
    )
    def get(self, request: Request) -> Response:
        """Every endpoint's name and absolute URL, under the prefix the API is mounted at."""
        return Response(api_index(request._request))


class HealthView(DomainErrorsMixin, APIView):
    """Liveness plus a database round trip; never needs credentials."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="health",
        tags=["health"],
        auth=[],
        responses={
            200: HealthSerializer,
            503: OpenApiResponse(HealthSerializer, description="The database is unreachable."),
        },
        examples=[
            OpenApiExample("Healthy", value={"ok": True, "database": "ok"}, status_codes=[200]),
            OpenApiExample(
                "Database down",
                value={"ok": False, "database": "error", "detail": "connection refused"},
                status_codes=[503],
            ),
        ],
    )
    def get(self, request: Request) -> Response:
        try:
            get_driver().ping()
        except DatabaseError as exc:
            # The endpoint is public: in production name the failure, not hosts and ports.
            detail = (str(exc).strip() or repr(exc)) if settings.DEBUG else type(exc).__name__
            body = {"ok": False, "database": "error", "detail": detail}
            return Response(HealthSerializer(body).data, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response(HealthSerializer({"ok": True, "database": "ok"}).data)


@read_schema("config", "config")
class ConfigView(SelectorView):
    """Registered job types with example payloads, worker settings and input limits."""

    response_serializer = ConfigSerializer
    selector = answers.api_config
