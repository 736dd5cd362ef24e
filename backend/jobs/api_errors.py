"""One place that maps domain errors to HTTP responses."""

from typing import Any

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from .services import InvalidTransition, JobNotFound


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, JobNotFound):
        return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, InvalidTransition):
        return Response(
            {"detail": str(exc), "status": exc.current_status},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
