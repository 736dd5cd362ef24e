"""Jobs: list and create (one or many), a job's page, attempts and lookup, and the
operator's actions on one job or a selection (retry, cancel, run now).
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ... import permissions, selectors, services
from ...errors import InvalidDependencies
from ...models import JobStatus
from ..pagination import JobPagination
from ..serializers.errors import VALIDATION_ERROR_SCHEMA, ErrorSerializer, RetryConflictSerializer
from ..serializers.jobs import (
    AttemptSerializer,
    CancelOutcomeSerializer,
    JobBulkCreateResultSerializer,
    JobBulkCreateSerializer,
    JobCreateResultSerializer,
    JobCreateSerializer,
    JobDetailSerializer,
    JobListItemSerializer,
    JobListQuerySerializer,
    JobLookupQuerySerializer,
    JobLookupSerializer,
    JobSelectionSerializer,
    JobSerializer,
    RetryOutcomeSerializer,
    job_detail_representation,
    job_representation,
    validated_job_create,
)
from ..throttling import JobCreateThrottle
from .common import (
    BAD_REQUEST,
    JOB_ID_PARAMETER,
    NOT_FOUND,
    TOO_LARGE,
    DomainErrorsMixin,
    FilteredListView,
    list_schema,
    parse_job_id,
    request_actor,
    validated_query,
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
        try:
            ((job, created),) = services.create_jobs([spec])
        except InvalidDependencies as exc:
            raise serializers.ValidationError({"depends_on": [str(exc)]}) from None
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
        try:
            results = services.create_jobs(specs)
        except InvalidDependencies as exc:
            field = f"jobs[{exc.index}].depends_on"
            raise serializers.ValidationError({field: [str(exc)]}) from None
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
