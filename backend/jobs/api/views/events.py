"""Events: one job's timeline and the feed of all jobs' events."""

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics

from ... import selectors
from ..pagination import JobEventCursorPagination, JobTimelinePagination
from ..serializers.events import (
    HeartbeatsQuerySerializer,
    JobEventQuerySerializer,
    JobEventSerializer,
)
from .common import (
    BAD_REQUEST,
    JOB_ID_PARAMETER,
    NOT_FOUND,
    DomainErrorsMixin,
    FilteredListView,
    list_schema,
    parse_job_id,
    validated_query,
)

TIMELINE_LINK_HEADER = OpenApiParameter(
    "Link",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    response=[200],
    description=(
        'Further pages (RFC 8288), as GitHub\'s REST API announces them: `<url>; rel="next"` '
        'while later events follow, `<url>; rel="prev"` past the first page. Absent when the '
        "whole timeline fits in one response."
    ),
)


class TimelineSchema(AutoSchema):
    """The timeline's 200 is the plain array (its paginator's schema leaves it as it is),
    under a name of its own: drf-spectacular would name it PaginatedJobEventList like the
    feed's page object, and keep whichever it met first."""

    def get_paginated_name(self, serializer_name: str) -> str:
        return f"{serializer_name}Timeline"


@extend_schema_view(
    get=extend_schema(
        operation_id="jobs_events_list",
        tags=["events"],
        parameters=[JOB_ID_PARAMETER, HeartbeatsQuerySerializer, TIMELINE_LINK_HEADER],
        responses={200: JobEventSerializer(many=True), 400: BAD_REQUEST, 404: NOT_FOUND},
    )
)
class JobEventsView(DomainErrorsMixin, generics.ListAPIView[Any]):
    """The job's timeline: a JSON array of its events, oldest first (ascending id), at most
    `limit` of them (100 unless asked, at most 500); a longer timeline continues at the URL
    of the `Link` header's `rel="next"`. New events only ever append to the last page."""

    serializer_class = JobEventSerializer
    pagination_class = JobTimelinePagination
    schema = TimelineSchema()

    def get_queryset(self) -> QuerySet[Any]:
        query = validated_query(HeartbeatsQuerySerializer, self.request)
        return selectors.job_timeline(parse_job_id(self.kwargs["id"]), **query)


@list_schema(
    "job_events_list",
    "events",
    JobEventQuerySerializer,
    JobEventSerializer,
    "Events of all jobs, newest first, cursor paginated.",
)
class JobEventListView(FilteredListView):
    serializer_class = JobEventSerializer
    pagination_class = JobEventCursorPagination
    query_serializer = JobEventQuerySerializer
    selector = selectors.event_feed
