"""Workflows: the body of a create, the list's filter, a workflow's summary and detail."""

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from ... import selectors
from ...limits import (
    DEPENDS_ON_MAX,
    WORKFLOW_DEPENDS_ON_MAX,
    WORKFLOW_JOBS_MAX,
    WORKFLOW_MEMBERS_SHOWN,
    WORKFLOW_NAME_MAX_LENGTH,
    WORKFLOW_REF_MAX_LENGTH,
)
from ...models import JobStatus, OnParentFailure
from .fields import FlatListField
from .jobs import JobCreateSerializer


class WorkflowJobSerializer(JobCreateSerializer):
    """One job of a workflow: the body of `POST /api/jobs/` but `unique_key` (a waiting job
    holds no key), with its step name and parents by ref."""

    ref = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=WORKFLOW_REF_MAX_LENGTH,
        trim_whitespace=False,
        help_text="The step's name, unique within the body; other jobs name it in depends_on.",
    )
    depends_on = FlatListField(
        child=serializers.CharField(max_length=WORKFLOW_REF_MAX_LENGTH, trim_whitespace=False),
        required=False,
        default=list,
        max_length=WORKFLOW_DEPENDS_ON_MAX + DEPENDS_ON_MAX,
        help_text=(
            "The jobs this one waits for: refs of jobs in this body (at most "
            f"{WORKFLOW_DEPENDS_ON_MAX}), or ids of existing jobs (at most {DEPENDS_ON_MAX}). "
            "With any, it is created `waiting`; without, `queued`."
        ),
    )

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()
        del fields["unique_key"]
        return fields

    def validate_depends_on(self, value: list[Any]) -> tuple[Any, ...]:
        return tuple(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return attrs


_WORKFLOW_JOB = WorkflowJobSerializer()
_WORKFLOW_JOB.fields  # noqa: B018  # bound now, not by two threads at once


class WorkflowCreateSerializer(serializers.Serializer[Any]):
    """The body of `POST /api/workflows/`, validated as a whole: any bad item refuses the
    request; errors are keyed ``jobs[<index>].<field>`` as the bulk create's."""

    name = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=WORKFLOW_NAME_MAX_LENGTH,
        help_text="What the workflow is, for people; may be empty.",
    )
    jobs = WorkflowJobSerializer(
        many=True,
        help_text=f"1 to {WORKFLOW_JOBS_MAX} jobs, written in one transaction.",
    )

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": ["Must be a JSON object."]})
        errors: dict[str, list[str]] = {
            str(key): ["Unknown field."] for key in data if key not in ("name", "jobs")
        }
        name = data.get("name", "")
        try:
            name = self.fields["name"].run_validation(name)
        except serializers.ValidationError as exc:
            errors["name"] = [str(message) for message in exc.detail]
        items = data.get("jobs")
        if not isinstance(items, list) or not 1 <= len(items) <= WORKFLOW_JOBS_MAX:
            errors["jobs"] = [f"A list of 1 to {WORKFLOW_JOBS_MAX} jobs is required."]
        if errors:
            raise serializers.ValidationError(errors)
        assert isinstance(items, list)
        validated: list[dict[str, Any]] = []
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                errors[f"jobs[{index}]"] = ["Must be a JSON object."]
                continue
            try:
                validated.append(_WORKFLOW_JOB.run_validation(item))
            except serializers.ValidationError as exc:
                detail = exc.detail if isinstance(exc.detail, dict) else {"": exc.detail}
                for field, messages in detail.items():
                    errors[f"jobs[{index}].{field}"] = [str(message) for message in messages]
        if errors:
            raise serializers.ValidationError(errors)
        return {"name": name, "jobs": validated}


class WorkflowListQuerySerializer(serializers.Serializer[Any]):
    state = serializers.ChoiceField(
        choices=selectors.WORKFLOW_STATES,
        required=False,
        allow_blank=True,
        help_text="active: a member is waiting, queued or running; else failed if one "
        "failed, cancelled if one was cancelled, succeeded otherwise.",
    )


class WorkflowCountsSerializer(serializers.Serializer[Any]):
    waiting = serializers.IntegerField()
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()


class WorkflowSummarySerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    name = serializers.CharField()
    created_at = serializers.DateTimeField()
    jobs = serializers.IntegerField(help_text="Members in total.")
    counts = WorkflowCountsSerializer(help_text="Members per status, zeros included.")
    state = serializers.ChoiceField(
        choices=selectors.WORKFLOW_STATES,
        help_text="active while a member is waiting, queued or running; otherwise failed "
        "if one failed, else cancelled if one was cancelled, else succeeded.",
    )


class WorkflowMemberSerializer(serializers.Serializer[Any]):
    id = serializers.UUIDField()
    ref = serializers.CharField(help_text="The step's name given at creation; may be empty.")
    type = serializers.CharField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    queue = serializers.CharField()
    attempts = serializers.IntegerField()
    max_attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    on_parent_failure = serializers.ChoiceField(
        choices=OnParentFailure.choices,
        allow_null=True,
        help_text="What it does when a parent does not succeed; null without parents.",
    )


class WorkflowEdgeSerializer(serializers.Serializer[Any]):
    """``{"parent": id, "child": id}``: the child waits for the parent."""

    # Built here, not declared: a field named ``parent`` would shadow Field.parent.
    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        return {
            "parent": serializers.UUIDField(),
            "child": serializers.UUIDField(help_text="Waits for parent."),
        }


class WorkflowDetailSerializer(WorkflowSummarySerializer):
    members = WorkflowMemberSerializer(
        many=True,
        help_text=f"In creation order; the first {WORKFLOW_MEMBERS_SHOWN}.",
    )
    members_truncated = serializers.BooleanField(
        help_text=f"More than {WORKFLOW_MEMBERS_SHOWN} members: the first ones are shown."
    )
    edges = WorkflowEdgeSerializer(many=True, help_text="The edges among the members shown.")
