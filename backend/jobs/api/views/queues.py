"""Queues: list, detail and limits, pause and resume."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ... import permissions, selectors, services
from ..serializers.fields import QueueNameField
from ..serializers.queues import QueueLimitsSerializer, QueueSerializer
from .common import BAD_REQUEST, DomainErrorsMixin, request_actor

QUEUE_NAME_PARAMETER = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The queue's name."
)


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
