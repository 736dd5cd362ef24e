"""Workflows: list and create (a set of jobs and their edges, in one transaction), and one
workflow's members and edges."""

import uuid

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ... import errors, permissions, selectors, services
from ...models import Workflow
from ..pagination import WorkflowPagination
from ..serializers.errors import ErrorSerializer
from ..serializers.workflows import (
    WorkflowCreateSerializer,
    WorkflowDetailSerializer,
    WorkflowListQuerySerializer,
    WorkflowSummarySerializer,
)
from ..throttling import JobCreateThrottle
from .common import BAD_REQUEST, TOO_LARGE, DomainErrorsMixin, validated_query

WORKFLOW_ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.UUID, OpenApiParameter.PATH, description="The workflow's id."
)
WORKFLOW_NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No workflow with this id.")


def parse_workflow_id(raw: str) -> uuid.UUID:
    """The path's workflow id; anything that is not a UUID names no workflow (404)."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise errors.WorkflowNotFound(raw) from None


class WorkflowListCreateView(DomainErrorsMixin, generics.ListAPIView[Workflow]):
    serializer_class = WorkflowSummarySerializer
    pagination_class = WorkflowPagination
    throttle_classes = [JobCreateThrottle]
    job_permission = permissions.ADD

    def get_queryset(self) -> QuerySet[Workflow]:
        query = validated_query(WorkflowListQuerySerializer, self.request)
        return selectors.workflow_list(state=query.get("state") or None)

    @extend_schema(
        operation_id="workflows_list",
        tags=["workflows"],
        parameters=[WorkflowListQuerySerializer],
        responses={
            200: WorkflowSummarySerializer(many=True),
            400: BAD_REQUEST,
            404: OpenApiResponse(ErrorSerializer, description="A page past the last one."),
        },
    )
    def get(self, request: Request) -> Response:
        """Workflows, newest first, 50 a page, each with its members' counts per status and
        its state; `state` keeps those in one state."""
        workflows = self.paginate_queryset(self.get_queryset())
        assert workflows is not None  # pagination_class is set
        summaries = selectors.workflow_summaries(workflows)
        return self.get_paginated_response(WorkflowSummarySerializer(summaries, many=True).data)

    @extend_schema(
        operation_id="workflows_create",
        tags=["workflows"],
        request=WorkflowCreateSerializer,
        responses={
            201: OpenApiResponse(WorkflowDetailSerializer, description="Written, all of it."),
            400: OpenApiResponse(
                BAD_REQUEST.response,
                description="Invalid input (fields named `jobs[<index>].<field>`: a cycle, an "
                "unknown ref, a ref used twice, a bound); nothing written.",
            ),
            413: TOO_LARGE,
        },
    )
    def post(self, request: Request) -> Response:
        """Write a workflow: every job and every dependency edge in one transaction, or
        nothing. Jobs without parents are queued at once, the others wait for theirs."""
        body = WorkflowCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        specs = [services.WorkflowJobSpec(**job) for job in body.validated_data["jobs"]]
        try:
            created = services.create_workflow(jobs=specs, name=body.validated_data["name"])
        except errors.InvalidWorkflow as exc:
            raise serializers.ValidationError(exc.problems) from None
        detail = selectors.workflow_detail(created.id)
        return Response(WorkflowDetailSerializer(detail).data, status=status.HTTP_201_CREATED)


class WorkflowDetailView(DomainErrorsMixin, APIView):
    @extend_schema(
        operation_id="workflows_retrieve",
        tags=["workflows"],
        parameters=[WORKFLOW_ID_PARAMETER],
        responses={200: WorkflowDetailSerializer, 404: WORKFLOW_NOT_FOUND},
    )
    def get(self, request: Request, id: str) -> Response:
        """One workflow: its counts and state, its first 1,000 members in creation order
        with their refs, and the edges among them."""
        detail = selectors.workflow_detail(parse_workflow_id(id))
        return Response(WorkflowDetailSerializer(detail).data)
