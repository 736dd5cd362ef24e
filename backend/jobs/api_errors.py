"""One place that maps domain errors to HTTP responses."""

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .errors import EmptySelection, InvalidTransition, JobNotFound
from .storable import UnstorableValue


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, JobNotFound):
        return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, InvalidTransition):
        return Response(
            {"detail": str(exc), "status": exc.current_status},
            status=status.HTTP_409_CONFLICT,
        )
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
    return drf_exception_handler(exc, context)
