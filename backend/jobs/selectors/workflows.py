"""Workflows: the list with each one's counts and state, and one workflow's members and
edges.

Data access: the ORM (``Workflow``, ``Job`` by ``job_workflow_idx``, ``JobDependency``
and the members' ``created`` events, whose ids give their creation order: the members
of a workflow share one ``created_at``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.expressions import Case, When

from ..errors import WorkflowNotFound
from ..limits import WORKFLOW_MEMBERS_SHOWN
from ..models import Job, JobDependency, JobEvent, JobEventType, JobStatus, Workflow

# A workflow's state from its members: active while any may still change by itself.
WORKFLOW_STATES = ["active", "succeeded", "failed", "cancelled"]
_ACTIVE = [JobStatus.WAITING, JobStatus.QUEUED, JobStatus.RUNNING]


def _counted(workflows: QuerySet[Workflow]) -> QuerySet[Workflow]:
    """Each workflow with its members' count per status (``n_<status>``), ``n_jobs`` and
    ``state`` (active, then failed, then cancelled, else succeeded)."""
    counts: dict[str, Any] = {
        f"n_{status}": Count("jobs", filter=Q(jobs__status=status)) for status in JobStatus.values
    }
    counts["n_jobs"] = Count("jobs")
    active = Q(n_waiting__gt=0) | Q(n_queued__gt=0) | Q(n_running__gt=0)
    state = Case(
        When(active, then=Value("active")),
        When(n_failed__gt=0, then=Value("failed")),
        When(n_cancelled__gt=0, then=Value("cancelled")),
        default=Value("succeeded"),
    )
    return workflows.annotate(**counts).annotate(state=state)


def workflow_summary(workflow: Workflow) -> dict[str, Any]:
    """The list's shape of a workflow read through ``workflow_list`` (its annotations)."""
    return {
        "id": workflow.pk,
        "name": workflow.name,
        "created_at": workflow.created_at,
        "jobs": workflow.n_jobs,  # type: ignore[attr-defined]  # annotated by _counted
        "counts": {status: getattr(workflow, f"n_{status}") for status in JobStatus.values},
        "state": workflow.state,  # type: ignore[attr-defined]  # annotated by _counted
    }


def workflow_list(*, state: str | None = None) -> QuerySet[Workflow]:
    """Workflows newest first, each with its counts and state (``workflow_summary``);
    ``state`` (one of ``WORKFLOW_STATES``) keeps those in it."""
    workflows = _counted(Workflow.objects.all())
    if state:
        if state not in WORKFLOW_STATES:
            raise ValueError(f"unknown workflow state {state!r}")
        # state is _counted's annotation, which the stubs' plugin cannot see.
        workflows = workflows.filter(state=state)  # type: ignore[misc]
    return workflows.order_by("-created_at", "-id")


def workflow_detail(workflow_id: UUID | str) -> dict[str, Any]:
    """A workflow's summary, its first ``WORKFLOW_MEMBERS_SHOWN`` members in creation
    order (each with its ref and the policy of its edges, null without parents), whether
    more exist (``members_truncated``), and the edges among the members shown.
    ``WorkflowNotFound`` for an unknown id."""
    workflow = _counted(Workflow.objects.filter(pk=workflow_id)).first()
    if workflow is None:
        raise WorkflowNotFound(workflow_id)
    created = JobEvent.objects.filter(job=OuterRef("pk"), type=JobEventType.CREATED).order_by("id")
    policy = JobDependency.objects.filter(job=OuterRef("pk")).order_by("id")
    members: list[dict[str, Any]] = [
        dict(member)
        for member in Job.objects.filter(workflow_id=workflow.pk)
        .annotate(
            position=Subquery(created.values("id")[:1], output_field=IntegerField()),
            policy=Subquery(policy.values("on_parent_failure")[:1]),
        )
        .order_by("position", "id")
        .values(
            "id",
            "ref",
            "type",
            "status",
            "queue",
            "attempts",
            "max_attempts",
            "created_at",
            "finished_at",
            "policy",
        )[: WORKFLOW_MEMBERS_SHOWN + 1]
    ]
    truncated = len(members) > WORKFLOW_MEMBERS_SHOWN
    members = members[:WORKFLOW_MEMBERS_SHOWN]
    for member in members:
        member["on_parent_failure"] = member.pop("policy")
    shown = [member["id"] for member in members]
    edges = [
        {"parent": parent, "child": child}
        for child, parent in JobDependency.objects.filter(job_id__in=shown, parent_id__in=shown)
        .order_by("id")
        .values_list("job_id", "parent_id")
    ]
    return {
        **workflow_summary(workflow),
        "members": members,
        "members_truncated": truncated,
        "edges": edges,
    }


def parent_results(job_id: UUID | str) -> list[Any]:
    """The stored results of the jobs ``job_id`` depends on, in its ``depends_on`` order
    (the order its edges were written in); ``None`` for a parent without one."""
    return list(
        JobDependency.objects.filter(job_id=job_id)
        .order_by("id")
        .values_list("parent__result", flat=True)
    )
