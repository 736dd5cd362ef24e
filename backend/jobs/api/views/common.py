"""What every resource's views share: the domain errors mapped to HTTP, the actor of an
operator action, parsing a job id and a query, the read-only and filtered-list view
shapes, and the schema parts they repeat.
"""

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, serializers
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ... import errors, services
from ..errors import exception_handler
from ..parsers import JobJSONParser
from ..serializers.errors import VALIDATION_ERROR_SCHEMA, ErrorSerializer

JOB_ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The job's id."
)
BAD_REQUEST = OpenApiResponse(VALIDATION_ERROR_SCHEMA, description="Invalid input.")
NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No job with this id.")
TOO_LARGE = OpenApiResponse(ErrorSerializer, description="Body over the size limit.")


class DomainErrorsMixin:
    """The API maps its domain errors (404, 409, 413, ...) itself and parses its own JSON,
    so it answers the same in any project, whatever that project's ``REST_FRAMEWORK``."""

    parser_classes: Sequence[type[BaseParser]] = [JobJSONParser]

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Response | None]:
        return exception_handler


def request_actor(request: Request) -> services.Actor:
    """Who makes this request, for the event of the action it asks for."""
    # None when the API is open and nobody signed in (UNAUTHENTICATED_USER is None).
    user: Any = request.user
    signed_in = user is not None and bool(user.is_authenticated)
    return services.Actor(user=user.get_username() if signed_in else None, via="api")


def parse_job_id(raw: str) -> uuid.UUID:
    """The path's job id; anything that is not a UUID names no job (404)."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise errors.JobNotFound(raw) from None


def validated_query(
    serializer_class: type[serializers.Serializer[Any]], request: Request
) -> dict[str, Any]:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    validated: dict[str, Any] = serializer.validated_data  # the stubs type it Any
    return validated


class SelectorView(DomainErrorsMixin, APIView):
    """A read: the query string is validated by ``query_serializer`` (none: no query), its
    values are handed to ``selector``, and ``response_serializer`` renders the answer.
    Declare it with ``@read_schema``; the view's docstring is the operation's description."""

    query_serializer: type[serializers.Serializer[Any]] | None = None
    response_serializer: type[serializers.Serializer[Any]]
    selector: Callable[..., Any]

    def get(self, request: Request) -> Response:
        query = (
            {} if self.query_serializer is None else validated_query(self.query_serializer, request)
        )
        return Response(self.response_serializer(type(self).selector(**query)).data)


def read_schema[V: type[SelectorView]](operation_id: str, tag: str) -> Callable[[V], V]:
    """The OpenAPI operation of a ``SelectorView``, from its serializers: its query's
    parameters and a 400 only where it validates a query string."""

    def decorate(view: V) -> V:
        parameters: list[Any] = []
        responses: dict[int, Any] = {200: view.response_serializer}
        if view.query_serializer is not None:
            parameters.append(view.query_serializer)
            responses[400] = BAD_REQUEST
        schema = extend_schema(
            operation_id=operation_id, tags=[tag], parameters=parameters, responses=responses
        )
        decorated: V = extend_schema_view(get=schema)(view)
        return decorated

    return decorate


class FilteredListView(DomainErrorsMixin, generics.ListAPIView[Any]):
    """A paginated list: the query string is validated by ``query_serializer`` and its
    values are handed to ``selector``."""

    query_serializer: type[serializers.Serializer[Any]]
    selector: Callable[..., QuerySet[Any]]

    def get_queryset(self) -> QuerySet[Any]:
        return type(self).selector(**validated_query(self.query_serializer, self.request))


def list_schema(operation_id: str, tag: str, query: type, item: type, description: str) -> Any:
    return extend_schema_view(
        get=extend_schema(
            operation_id=operation_id,
            tags=[tag],
            description=description,
            parameters=[query],
            responses={200: item(many=True), 400: BAD_REQUEST},
        )
    )
