"""One place that maps the domain errors (``jobs.errors``) to HTTP responses."""

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from rest_framework import status
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from ..drivers import is_read_only
from ..errors import (
    EmptySelection,
    InvalidTransition,
    InvalidWorkflow,
    JobNotFound,
    ScheduleInvalid,
    ScheduleNotFound,
    UniqueKeyHeld,
    WorkflowNotFound,
)
from ..storable import UnstorableValue

DATABASE_RETRY_AFTER_SECONDS = 5


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = _error_response(exc, context)
    request = context.get("request")
    if response is not None and request is not None:
        # The schema (YAML) and docs (HTML) views would render the error in their own
        # format; every error of the API is JSON.
        renderer = getattr(request, "accepted_renderer", None)
        if not isinstance(renderer, JSONRenderer | BrowsableAPIRenderer):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = "application/json"
    return response


def _error_response(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, JobNotFound | ScheduleNotFound | WorkflowNotFound):
        return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, UniqueKeyHeld):
        return Response(
            {
                "detail": str(exc),
                "status": exc.current_status,
                "unique_key": exc.unique_key,
                "held_by": str(exc.held_by),
            },
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, ScheduleInvalid):
        return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, InvalidTransition):
        return Response(
            {"detail": str(exc), "status": exc.current_status},
            status=status.HTTP_409_CONFLICT,
        )
    if isinstance(exc, InvalidWorkflow):  # the view names the fields first; kept as a net
        return Response(exc.problems, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, EmptySelection):
        return Response({"non_field_errors": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, UnstorableValue):  # the serializers refuse these first; kept as a net
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        # Django refuses to read a body over DATA_UPLOAD_MAX_MEMORY_SIZE.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {"detail": f"Request body is larger than {limit} bytes."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    read_only = isinstance(exc, DatabaseError) and is_read_only(exc)
    if read_only:
        # A standby, or a primary being demoted (behind a pooler or a DNS name that still
        # points at it): this connection will never write again. The next request opens a
        # new one, which target_session_attrs=read-write sends to the new primary.
        connection.close()
    if read_only or isinstance(exc, OperationalError | InterfaceError):
        # The database is down, unreachable or read-only (a restart, the network, a
        # failover): the request may succeed shortly, as /api/health/ says. Bugs
        # (IntegrityError, ...) stay 500s.
        return Response(
            {"detail": "The database is unavailable; try again shortly."},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    return drf_exception_handler(exc, context)
