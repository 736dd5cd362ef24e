"""The HTTP API: each view parses its input with a serializer, calls one service or read,
and serializes the result. Every job-state change goes through ``jobs.services``.

Nothing here assumes where the project mounted ``jobs.urls``: whether a request is the
API's is decided by the view its path resolves to (``jobs.middleware.is_api_request``)."""

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, login, logout
from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.urls import NoReverseMatch, Resolver404, ResolverMatch, resolve, reverse
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import server_error as django_server_error
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import BaseParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import errors, permissions, selectors, services
from ..middleware import is_api_request
from ..models import JobStatus
from . import answers
from .errors import exception_handler
from .pagination import JobEventCursorPagination, JobPagination, JobTimelinePagination
from .parsers import JobJSONParser
from .serializers import (
    VALIDATION_ERROR_SCHEMA,
    ActivityWindowQuerySerializer,
    AttemptSerializer,
    CancelOutcomeSerializer,
    ConfigSerializer,
    ErrorSerializer,
    HealthSerializer,
    HeartbeatsQuerySerializer,
    JobBulkCreateResultSerializer,
    JobBulkCreateSerializer,
    JobCreateResultSerializer,
    JobCreateSerializer,
    JobDetailSerializer,
    JobEventQuerySerializer,
    JobEventSerializer,
    JobListItemSerializer,
    JobListQuerySerializer,
    JobLookupQuerySerializer,
    JobLookupSerializer,
    JobSelectionSerializer,
    JobSerializer,
    JobStatsSerializer,
    JobTypesSerializer,
    LoginSerializer,
    QueueLimitsSerializer,
    QueueNameField,
    QueueSerializer,
    RetryConflictSerializer,
    RetryOutcomeSerializer,
    ScheduleSerializer,
    ScheduleTriggerSerializer,
    SessionSerializer,
    ThroughputQuerySerializer,
    ThroughputSerializer,
    WorkersSerializer,
    job_detail_representation,
    job_representation,
    validated_job_create,
)
from .throttling import AuthFailureThrottle, JobCreateThrottle

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


# --- Index, health and config -----------------------------------------------------------


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
    from .urls import urlpatterns  # the URLconf imports this module

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
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
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


# --- Jobs -------------------------------------------------------------------------------


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


@list_schema(
    "jobs_list",
    "jobs",
    JobListQuerySerializer,
    JobListItemSerializer,
    "Jobs, newest first unless `ordering` says otherwise, limit-offset paginated, filtered "
    "by status, type and queue.",
)
class JobListCreateView(FilteredListView):
    serializer_class = JobListItemSerializer
    pagination_class = JobPagination
    throttle_classes = [JobCreateThrottle]
    query_serializer = JobListQuerySerializer
    selector = selectors.job_list

    @extend_schema(
        operation_id="jobs_create",
        tags=["jobs"],
        request=JobCreateSerializer,
        responses={
            201: OpenApiResponse(JobCreateResultSerializer, description="Created a queued job."),
            200: OpenApiResponse(
                JobCreateResultSerializer,
                description="The job already created with this idempotency key, or the "
                "queued or running job holding this unique_key (see matched).",
            ),
            400: BAD_REQUEST,
            413: TOO_LARGE,
            415: OpenApiResponse(ErrorSerializer, description="Body is not application/json."),
        },
    )
    def post(self, request: Request) -> Response:
        """Enqueue a job (and its `created` event)."""
        spec = services.NewJobSpec(**validated_job_create(request.data))
        ((job, created),) = services.create_jobs([spec])
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        body = {**job_representation(job), "matched": services.matched_rule(spec, job, created)}
        return Response(body, status=code)


class JobBulkCreateView(DomainErrorsMixin, APIView):
    job_permission = permissions.ADD
    throttle_classes = [JobCreateThrottle]

    @extend_schema(
        operation_id="jobs_bulk_create",
        tags=["jobs"],
        request=JobBulkCreateSerializer,
        responses={
            201: OpenApiResponse(JobBulkCreateResultSerializer, description="Jobs written."),
            200: OpenApiResponse(
                JobBulkCreateResultSerializer, description="Every key was known: none written."
            ),
            400: BAD_REQUEST,
            413: TOO_LARGE,
        },
    )
    def post(self, request: Request) -> Response:
        """Enqueue many jobs in one statement, all or nothing (idempotency keys per job)."""
        body = JobBulkCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        specs = [services.NewJobSpec(**job) for job in body.validated_data["jobs"]]
        results = services.create_jobs(specs)
        created = sum(1 for _, was_created in results if was_created)
        data = {
            "created": created,
            "existing": len(results) - created,
            "jobs": [
                {
                    "id": row.id,
                    "created": was_created,
                    "matched": services.matched_rule(spec, row, was_created),
                }
                for spec, (row, was_created) in zip(specs, results, strict=True)
            ],
        }
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(JobBulkCreateResultSerializer(data).data, status=code)


class JobDetailView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="jobs_retrieve",
        tags=["jobs"],
        parameters=[JOB_ID_PARAMETER],
        responses={200: JobDetailSerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, id: str) -> Response:
        """One job's current state, with its attempts over every round, its latest
        exception and traceback, and its effective timeout."""
        job, extra = selectors.job_detail(parse_job_id(id))
        return Response(job_detail_representation(job, extra))


class JobAttemptsView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="jobs_attempts_list",
        tags=["jobs"],
        parameters=[JOB_ID_PARAMETER],
        responses={200: AttemptSerializer(many=True), 404: NOT_FOUND},
    )
    def get(self, request: Request, id: str) -> Response:
        """The job's attempts, oldest first, from its events: one per claim, with its
        worker, queue wait, run time, outcome, error, exception class and traceback; each
        manual retry starts a new round."""
        attempts = selectors.job_attempts(parse_job_id(id))
        return Response([AttemptSerializer(attempt).data for attempt in attempts])


class JobLookupView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="jobs_lookup",
        tags=["jobs"],
        parameters=[JobLookupQuerySerializer],
        responses={
            200: JobLookupSerializer,
            400: OpenApiResponse(
                VALIDATION_ERROR_SCHEMA, description="No q, or a prefix of several jobs' ids."
            ),
            404: OpenApiResponse(ErrorSerializer, description="No job matches."),
        },
    )
    def get(self, request: Request) -> Response:
        """The job a search box names: its id, a unique prefix of its id (at least 8 hex
        digits, dashes ignored), or its idempotency key (exact)."""
        text = validated_query(JobLookupQuerySerializer, request)["q"]
        try:
            found = selectors.lookup_job(text)
        except selectors.AmbiguousIdPrefix as exc:
            raise serializers.ValidationError({"q": [str(exc)]}) from None
        if found is None:
            detail = f"No job has the id, id prefix or idempotency key '{text.strip()}'."
            return Response({"detail": detail}, status=status.HTTP_404_NOT_FOUND)
        match, job = found
        return Response({"match": match, "job": job_representation(job)})


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


class JobRetryView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="jobs_retry",
        tags=["jobs"],
        parameters=[JOB_ID_PARAMETER],
        request=None,
        responses={
            200: OpenApiResponse(JobSerializer, description="The job, queued again."),
            404: NOT_FOUND,
            409: OpenApiResponse(
                RetryConflictSerializer,
                description=(
                    "The job is neither failed nor cancelled, or another active job holds "
                    "its unique_key (unique_key and held_by say which); nothing changed."
                ),
            ),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Send a failed or cancelled job back to the queue with a fresh attempt budget."""
        job = services.retry_job(job_id=parse_job_id(id), actor=request_actor(request))
        return Response(job_representation(job))


class JobCancelView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="jobs_cancel",
        tags=["jobs"],
        parameters=[JOB_ID_PARAMETER],
        request=None,
        responses={
            200: OpenApiResponse(JobSerializer, description="The queued job, now cancelled."),
            202: OpenApiResponse(
                JobSerializer,
                description=(
                    "The job is running: a cancel was requested (cancel_requested_at); its "
                    "worker sees it within one heartbeat and the attempt ends as cancelled."
                ),
            ),
            404: NOT_FOUND,
            409: OpenApiResponse(RetryConflictSerializer, description="The job has finished."),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Cancel a job: a queued one at once, a running one as soon as its worker can."""
        job = services.cancel_job(job_id=parse_job_id(id), actor=request_actor(request))
        code = status.HTTP_202_ACCEPTED if job.status == JobStatus.RUNNING else status.HTTP_200_OK
        return Response(job_representation(job), status=code)


class JobRunNowView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="jobs_run_now",
        tags=["jobs"],
        parameters=[JOB_ID_PARAMETER],
        request=None,
        responses={
            200: OpenApiResponse(JobSerializer, description="The job, due now."),
            404: NOT_FOUND,
            409: OpenApiResponse(
                RetryConflictSerializer,
                description="The job is not queued, or already due; nothing changed.",
            ),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Make a job scheduled for later, or waiting out a retry's backoff, due now (a
        `run_now` event records it and who asked)."""
        job = services.run_job_now(job_id=parse_job_id(id), actor=request_actor(request))
        return Response(job_representation(job))


class JobBulkCancelView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="jobs_bulk_cancel",
        tags=["jobs"],
        request=JobSelectionSerializer,
        responses={200: CancelOutcomeSerializer, 400: BAD_REQUEST},
    )
    def post(self, request: Request) -> Response:
        """Cancel every job the filters and/or ids select (one statement); an empty
        selection is refused."""
        selection = JobSelectionSerializer(data=request.data)
        selection.is_valid(raise_exception=True)
        outcome = services.cancel_jobs(**selection.validated_data, actor=request_actor(request))
        return Response(CancelOutcomeSerializer(outcome).data)


class JobBulkRetryView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="jobs_bulk_retry",
        tags=["jobs"],
        request=JobSelectionSerializer,
        responses={200: RetryOutcomeSerializer, 400: BAD_REQUEST},
    )
    def post(self, request: Request) -> Response:
        """Retry every failed or cancelled job the filters and/or ids select (one
        statement), but those whose unique_key another job holds, which are reported;
        an empty selection is refused."""
        selection = JobSelectionSerializer(data=request.data)
        selection.is_valid(raise_exception=True)
        outcome = services.retry_jobs(**selection.validated_data, actor=request_actor(request))
        return Response(RetryOutcomeSerializer(outcome).data)


@read_schema("jobs_stats", "jobs")
class JobStatsView(SelectorView):
    """Counts by status, overdue leases and pending retries, from one query; computed at most
    once per ``JOB_STATS_CACHE_SECONDS`` per process, however many dashboards poll."""

    response_serializer = JobStatsSerializer
    selector = selectors.cached_job_stats


@read_schema("jobs_throughput", "jobs")
class JobThroughputView(SelectorView):
    """Succeeded and failed events per time bucket over the last minutes."""

    query_serializer = ThroughputQuerySerializer
    response_serializer = ThroughputSerializer
    selector = selectors.throughput


@read_schema("jobs_types", "jobs")
class JobTypesView(SelectorView):
    """Per job type over the last minutes: outcomes, failure rate, run time and queue
    wait percentiles, last error, and failures per bucket (a sparkline)."""

    query_serializer = ActivityWindowQuerySerializer
    response_serializer = JobTypesSerializer
    selector = selectors.type_health


@read_schema("workers_list", "workers")
class WorkersView(SelectorView):
    """Every live worker process, idle or busy: its queues, configured, live and busy
    threads, what each thread runs, and when it last checked in. A process checks in every
    half heartbeat interval and is listed while its last check-in is within one interval,
    so a process that died drops out within one interval. `finished` counts its threads'
    attempt endings over the last `minutes`."""

    query_serializer = ActivityWindowQuerySerializer
    response_serializer = WorkersSerializer
    selector = selectors.live_workers


# --- Events -----------------------------------------------------------------------------


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


# --- Session: the dashboard signs in with Django's session ------------------------------


# --- Flow control (issue 24) ------------------------------------------------------------

QUEUE_NAME_PARAMETER = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The queue's name."
)
SCHEDULE_NAME_PARAMETER = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The schedule's name."
)
SCHEDULE_NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No schedule of this name.")


def parse_queue_name(raw: str) -> str:
    """The path's queue name, validated as a job's queue is (400 otherwise)."""
    field = QueueNameField()
    try:
        name: str = field.run_validation(raw)
    except serializers.ValidationError as exc:
        raise serializers.ValidationError({"name": exc.detail}) from None
    return name


class QueueListView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="queues_list", tags=["queues"], responses={200: QueueSerializer(many=True)}
    )
    def get(self, request: Request) -> Response:
        """Every known queue, by name: counts by status, paused, limits, running vs limit."""
        return Response([QueueSerializer(queue).data for queue in selectors.queue_list()])


class QueueDetailView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="queues_partial_update",
        tags=["queues"],
        parameters=[QUEUE_NAME_PARAMETER],
        request=QueueLimitsSerializer,
        responses={200: QueueSerializer, 400: BAD_REQUEST},
    )
    def patch(self, request: Request, name: str) -> Response:
        """Set the queue's limits (null removes one); they hold across all workers."""
        queue = parse_queue_name(name)
        body = QueueLimitsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.set_queue_limits(queue=queue, **body.validated_data, actor=request_actor(request))
        return Response(QueueSerializer(selectors.queue_detail(queue)).data)


class QueuePauseView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="queues_pause",
        tags=["queues"],
        parameters=[QUEUE_NAME_PARAMETER],
        request=None,
        responses={200: QueueSerializer, 400: BAD_REQUEST},
    )
    def post(self, request: Request, name: str) -> Response:
        """Pause the queue: no worker claims from it from now on; running jobs finish."""
        queue = parse_queue_name(name)
        services.pause_queue(queue=queue, actor=request_actor(request))
        return Response(QueueSerializer(selectors.queue_detail(queue)).data)


class QueueResumeView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="queues_resume",
        tags=["queues"],
        parameters=[QUEUE_NAME_PARAMETER],
        request=None,
        responses={200: QueueSerializer, 400: BAD_REQUEST},
    )
    def post(self, request: Request, name: str) -> Response:
        """Resume the queue and wake idle workers at once."""
        queue = parse_queue_name(name)
        services.resume_queue(queue=queue, actor=request_actor(request))
        return Response(QueueSerializer(selectors.queue_detail(queue)).data)


class ScheduleListView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="schedules_list",
        tags=["schedules"],
        responses={200: ScheduleSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        """Every schedule of JOB_SCHEDULES, by name: next run, last run and its job."""
        return Response([ScheduleSerializer(entry).data for entry in selectors.schedule_list()])


class SchedulePauseView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="schedules_pause",
        tags=["schedules"],
        parameters=[SCHEDULE_NAME_PARAMETER],
        request=None,
        responses={200: ScheduleSerializer, 404: SCHEDULE_NOT_FOUND},
    )
    def post(self, request: Request, name: str) -> Response:
        """Pause the schedule: no tick is enqueued until it is resumed."""
        services.pause_schedule(name=name, actor=request_actor(request))
        return Response(ScheduleSerializer(selectors.schedule_detail(name)).data)


class ScheduleResumeView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="schedules_resume",
        tags=["schedules"],
        parameters=[SCHEDULE_NAME_PARAMETER],
        request=None,
        responses={200: ScheduleSerializer, 404: SCHEDULE_NOT_FOUND},
    )
    def post(self, request: Request, name: str) -> Response:
        """Resume the schedule from its next tick (ticks while paused are not run)."""
        services.resume_schedule(name=name, actor=request_actor(request))
        return Response(ScheduleSerializer(selectors.schedule_detail(name)).data)


class ScheduleTriggerView(DomainErrorsMixin, APIView):
    job_permission = permissions.CHANGE

    @extend_schema(
        operation_id="schedules_trigger",
        tags=["schedules"],
        parameters=[SCHEDULE_NAME_PARAMETER],
        request=None,
        responses={
            201: ScheduleTriggerSerializer,
            404: SCHEDULE_NOT_FOUND,
            409: OpenApiResponse(
                ErrorSerializer, description="The schedule cannot run as declared."
            ),
        },
    )
    def post(self, request: Request, name: str) -> Response:
        """Enqueue one job of the schedule now, outside its ticks."""
        # The job and the answer, or neither: the answer is built before the commit.
        with transaction.atomic():
            _, job = services.trigger_schedule(name=name, actor=request_actor(request))
            body = {
                "schedule": ScheduleSerializer(selectors.schedule_detail(name)).data,
                "job": job_representation(job),
            }
        return Response(body, status=status.HTTP_201_CREATED)


class SessionView(DomainErrorsMixin, APIView):
    """Who is signed in; also sets the ``csrftoken`` cookie the dashboard sends back as
    ``X-CSRFToken`` on every POST."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="auth_session", tags=["auth"], responses={200: SessionSerializer})
    def get(self, request: Request) -> Response:
        """The signed-in user (if any) and the job permissions the API grants them."""
        get_token(request._request)
        return Response(SessionSerializer(answers.session_state(request.user)).data)


class LoginView(DomainErrorsMixin, APIView):
    """Sign in with a username and password; the session cookie is set on success.

    CSRF is checked although nobody is signed in yet (login CSRF); a client address past
    its failed-login rate gets 429 without its password being checked.
    """

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="auth_login",
        tags=["auth"],
        request=LoginSerializer,
        responses={
            200: SessionSerializer,
            400: BAD_REQUEST,
            403: OpenApiResponse(ErrorSerializer, description="CSRF check failed."),
            429: OpenApiResponse(ErrorSerializer, description="Too many failed logins."),
        },
    )
    def post(self, request: Request) -> Response:
        SessionAuthentication().enforce_csrf(request)
        credentials = LoginSerializer(data=request.data)
        credentials.is_valid(raise_exception=True)
        throttle = AuthFailureThrottle()
        if throttle.blocked(request):
            raise throttle.refusal()
        # ThrottledModelBackend checks the password; user_login_failed counts a failure.
        user = authenticate(request._request, **credentials.validated_data)
        if user is None:
            raise serializers.ValidationError(
                {"non_field_errors": ["Wrong username or password, or the account is inactive."]}
            )
        login(request._request, user)
        return Response(SessionSerializer(answers.session_state(user)).data)


class LogoutView(DomainErrorsMixin, APIView):
    """End the session (a no-op without one); CSRF-checked like every session write."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(operation_id="auth_logout", tags=["auth"], request=None, responses={204: None})
    def post(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


@csrf_exempt  # it writes nothing; without this an unsafe method got Django's HTML 403
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Any path under the API's prefix that names no endpoint: a JSON 404 for every method
    (the last pattern of ``jobs.urls``, so it answers under whatever prefix the project
    chose).

    A known path without its trailing slash is redirected for GET and HEAD (as
    ``APPEND_SLASH`` would); other methods cannot follow a redirect with their body, so
    they get the 404 with the right path named.
    """
    path = request.path
    if not path.endswith("/"):
        match = _resolve(path + "/")
        if match is not None and match.func is not api_not_found:
            if request.method in ("GET", "HEAD"):
                return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
            return JsonResponse({"detail": f"Not found. Did you mean {path}/ ?"}, status=404)
    return JsonResponse({"detail": "Not found."}, status=404)


def _resolve(path: str) -> ResolverMatch | None:
    try:
        return resolve(path)
    except Resolver404:
        return None


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: JSON for the API (``is_api_request``), Django's page
    elsewhere."""
    if is_api_request(request):
        return JsonResponse({"detail": f"CSRF Failed: {reason}"}, status=403)
    return django_csrf_failure(request, reason)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: an unexpected error of the API (``is_api_request``) is JSON like the
    rest of the API; Django's page elsewhere."""
    if is_api_request(request):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return django_server_error(request)
