"""Workflows: the list, each one's counts and state, and one workflow's members and
edges.

Data access: the ORM (``Workflow``, ``Job`` by ``job_workflow_idx``, ``JobDependency``
and the ids of the members' first events, their ``created`` events, which give their
creation order: the members of a workflow share one ``created_at``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery

from ..errors import WorkflowNotFound
from ..limits import WORKFLOW_MEMBERS_SHOWN
from ..models import Job, JobDependency, JobEvent, JobStatus, Workflow

# A workflow's state from its members: active while any may still change by itself.
WORKFLOW_STATES = ["active", "succeeded", "failed", "cancelled"]
_ACTIVE = [JobStatus.WAITING, JobStatus.QUEUED, JobStatus.RUNNING]


def _has(statuses: list[JobStatus]) -> Exists:
    """The workflow has a member in one of ``statuses`` (a probe of job_workflow_idx)."""
    return Exists(Job.objects.filter(workflow_id=OuterRef("pk"), status__in=statuses))


def _in_state(state: str) -> Q:
    """The workflows in ``state``, as ``_state`` decides it, without counting members."""
    active = Q(_has(_ACTIVE))
    failed = Q(_has([JobStatus.FAILED]))
    cancelled = Q(_has([JobStatus.CANCELLED]))
    return {
        "active": active,
        "failed": ~active & failed,
        "cancelled": ~active & ~failed & cancelled,
        "succeeded": ~active & ~failed & ~cancelled,
    }[state]


def _state(counts: dict[str, int]) -> str:
    """Active while a member may still change by itself; then failed if one failed, else
    cancelled if one was cancelled, else succeeded."""
    if any(counts[status] for status in _ACTIVE):
        return "active"
    if counts[JobStatus.FAILED]:
        return "failed"
    if counts[JobStatus.CANCELLED]:
        return "cancelled"
    return "succeeded"


def workflow_list(*, state: str | None = None) -> QuerySet[Workflow]:
    """Workflows newest first (``workflow_summaries`` gives a page's counts and states);
    ``state`` (one of ``WORKFLOW_STATES``) keeps those in it, by index probes per workflow
    rather than by counting every member."""
    workflows = Workflow.objects.all()
    if state:
        if state not in WORKFLOW_STATES:
            raise ValueError(f"unknown workflow state {state!r}")
        workflows = workflows.filter(_in_state(state))
    return workflows.order_by("-created_at", "-id")


def workflow_summaries(workflows: Sequence[Workflow]) -> list[dict[str, Any]]:
    """Each workflow's summary: ``id``, ``name``, ``created_at``, ``jobs`` (members in
    all), ``counts`` (per status, zeros included) and ``state``; one grouped query for all
    of them (a page of the list)."""
    counts: dict[UUID, dict[str, int]] = {
        workflow.pk: dict.fromkeys(JobStatus.values, 0) for workflow in workflows
    }
    grouped = (
        Job.objects.filter(workflow_id__in=list(counts))
        .values_list("workflow_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for workflow_id, status, n in grouped:
        counts[workflow_id][status] = n
    return [
        {
            "id": workflow.pk,
            "name": workflow.name,
            "created_at": workflow.created_at,
            "jobs": sum(counts[workflow.pk].values()),
            "counts": counts[workflow.pk],
            "state": _state(counts[workflow.pk]),
        }
        for workflow in workflows
    ]


def workflow_detail(workflow_id: UUID | str) -> dict[str, Any]:
    """A workflow's summary, its first ``WORKFLOW_MEMBERS_SHOWN`` members in creation
    order (each with its ref and the policy of its edges, null without parents), whether
    more exist (``members_truncated``), and the edges among the members shown.
    ``WorkflowNotFound`` for an unknown id."""
    workflow = Workflow.objects.filter(pk=workflow_id).first()
    if workflow is None:
        raise WorkflowNotFound(workflow_id)
    # The members share one created_at: their first events' ids (each job's created event,
    # written with it) give the order. One probe of job_event_job_id_idx per member, with
    # no filter on type: a type filter lets a planner with stale statistics AND in the
    # type index's every created event, per member. The rest is read for those shown.
    created = JobEvent.objects.filter(job=OuterRef("pk")).order_by("id")
    members: list[dict[str, Any]] = [
        dict(member)
        for member in Job.objects.filter(workflow_id=workflow.pk)
        .annotate(position=Subquery(created.values("id")[:1], output_field=IntegerField()))
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
        )[: WORKFLOW_MEMBERS_SHOWN + 1]
    ]
    truncated = len(members) > WORKFLOW_MEMBERS_SHOWN
    members = members[:WORKFLOW_MEMBERS_SHOWN]
    # A child's policy rides on each of its edges, the same on all of them.
    policies = dict(
        JobDependency.objects.filter(job_id__in=[member["id"] for member in members])
        .values_list("job_id", "on_parent_failure")
        .distinct()
    )
    for member in members:
        member["on_parent_failure"] = policies.get(member["id"])
    shown = [member["id"] for member in members]
    edges = [
        {"parent": parent, "child": child}
        for child, parent in JobDependency.objects.filter(job_id__in=shown, parent_id__in=shown)
        .order_by("id")
        .values_list("job_id", "parent_id")
    ]
    return {
        **workflow_summaries([workflow])[0],
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


def job_relatives(job_id: UUID, *, limit: int) -> dict[str, Any]:
    """The jobs ``job_id`` waits for and the jobs waiting for it (``parents`` and
    ``children``: the first ``limit`` of each, oldest edge first, as ``(id, type,
    status)``), and how many wait for it in all (``children_total``). Three index probes."""
    parents = list(
        JobDependency.objects.filter(job_id=job_id)
        .order_by("id")
        .values_list("parent_id", "parent__type", "parent__status")[:limit]
    )
    children = list(
        JobDependency.objects.filter(parent_id=job_id)
        .order_by("id")
        .values_list("job_id", "job__type", "job__status")[:limit]
    )
    total = len(children)
    if total == limit:
        total = JobDependency.objects.filter(parent_id=job_id).count()
    return {"parents": parents, "children": children, "children_total": total}
