"""Schedules: list, pause, resume and trigger."""

from django.db import transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ... import permissions, selectors, services
from ..serializers.errors import ErrorSerializer
from ..serializers.jobs import job_representation
from ..serializers.schedules import ScheduleSerializer, ScheduleTriggerSerializer
from .common import DomainErrorsMixin, request_actor

SCHEDULE_NAME_PARAMETER = OpenApiParameter(
    "name", OpenApiTypes.STR, OpenApiParameter.PATH, description="The schedule's name."
)
SCHEDULE_NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No schedule of this name.")


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
