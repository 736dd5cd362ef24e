"""Workflows: a set of jobs and the dependency edges between them, written at once.

Data access: the database driver only. The jobs are written by ``create_jobs`` (one
statement on PostgreSQL, each with its ``created`` event, idle workers woken for the due
ones), their edges by the dependency statements, all in one transaction; the settling
duty then runs them as for any job created with ``depends_on``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from django.db import transaction

from ..drivers import JobRow, get_driver
from ..errors import InvalidWorkflow
from ..limits import (
    DEPENDS_ON_MAX,
    WORKFLOW_DEPENDS_ON_MAX,
    WORKFLOW_JOBS_MAX,
    WORKFLOW_NAME_MAX_LENGTH,
    WORKFLOW_REF_MAX_LENGTH,
    metadata_problem,
)
from ..models import DEFAULT_QUEUE, JobStatus, OnParentFailure
from ..storable import json_problem
from .common import _now
from .dependencies import settle_waiting_jobs
from .jobs import NewJobSpec, create_jobs


@dataclass(frozen=True)
class WorkflowJobSpec:
    """One job of a workflow: ``create_job``'s arguments but ``unique_key`` (a waiting job
    holds no key), its step name ``ref``, and ``depends_on``: refs of jobs of the same
    workflow, or ids of jobs that exist already."""

    type: str
    ref: str = ""
    payload: dict[str, Any] | None = None
    priority: int = 50
    available_at: datetime | None = None
    max_attempts: int | None = None
    idempotency_key: str | None = None
    queue: str = DEFAULT_QUEUE
    timeout_seconds: int | None = None
    metadata: dict[str, str] | None = None
    concurrency_key: str | None = None
    depends_on: tuple[UUID | str, ...] = ()
    on_parent_failure: str = OnParentFailure.CANCEL


@dataclass(frozen=True)
class CreatedWorkflow:
    """What ``create_workflow`` wrote: the workflow and its jobs, in the specs' order."""

    id: UUID
    name: str
    created_at: datetime
    jobs: list[JobRow] = field(default_factory=list)


def _parents(
    specs: Sequence[WorkflowJobSpec], problems: dict[str, list[str]]
) -> tuple[list[list[int]], list[list[UUID]]]:
    """Each spec's parents inside the workflow (indexes) and outside it (ids), with the
    problems of its ``ref`` and ``depends_on`` added to ``problems``."""
    refs: dict[str, int] = {}
    for index, spec in enumerate(specs):
        where = f"jobs[{index}].ref"
        if len(spec.ref) > WORKFLOW_REF_MAX_LENGTH:
            problems.setdefault(where, []).append(
                f"A string of at most {WORKFLOW_REF_MAX_LENGTH} characters."
            )
        elif spec.ref:
            if spec.ref in refs:
                problems.setdefault(where, []).append(f"Also used by jobs[{refs[spec.ref]}].")
            refs.setdefault(spec.ref, index)
    inside: list[list[int]] = []
    outside: list[list[UUID]] = []
    for index, spec in enumerate(specs):
        where = f"jobs[{index}].depends_on"
        mine: list[int] = []
        theirs: list[UUID] = []
        reasons: list[str] = []
        for parent in spec.depends_on:
            text = str(parent)
            if text in refs:
                mine.append(refs[text])
                continue
            try:
                theirs.append(UUID(text))
            except ValueError:
                reasons.append(f"No job of this workflow has the ref {text!r}.")
        if len(set(mine)) != len(mine) or len(set(theirs)) != len(theirs):
            reasons.append("A parent is named twice.")
        if len(mine) > WORKFLOW_DEPENDS_ON_MAX:
            reasons.append(f"At most {WORKFLOW_DEPENDS_ON_MAX} parents of this workflow.")
        if len(theirs) > DEPENDS_ON_MAX:
            reasons.append(f"At most {DEPENDS_ON_MAX} parents outside this workflow.")
        if spec.on_parent_failure not in OnParentFailure.values:
            problems.setdefault(f"jobs[{index}].on_parent_failure", []).append(
                f"One of {', '.join(OnParentFailure.values)}."
            )
        if reasons:
            problems.setdefault(where, []).extend(reasons)
        inside.append(list(dict.fromkeys(mine)))
        outside.append(list(dict.fromkeys(theirs)))
    return inside, outside


def _cycle(specs: Sequence[WorkflowJobSpec], inside: list[list[int]]) -> list[int] | None:
    """A cycle among the jobs' parents inside the workflow, as the indexes along it (the
    first again at the end), or ``None``. Jobs that no cycle reaches are peeled off first
    (Kahn's order); from what is left, following parents always comes back round."""
    children: list[list[int]] = [[] for _ in specs]
    waiting = [len(parents) for parents in inside]
    for child, parents in enumerate(inside):
        for parent in parents:
            children[parent].append(child)
    ready = [index for index, count in enumerate(waiting) if count == 0]
    while ready:
        index = ready.pop()
        for child in children[index]:
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    left = [index for index, count in enumerate(waiting) if count > 0]
    if not left:
        return None
    remaining = set(left)
    path: list[int] = []
    seen: dict[int, int] = {}
    index = left[0]
    while index not in seen:
        seen[index] = len(path)
        path.append(index)
        index = next(parent for parent in inside[index] if parent in remaining)
    return [*path[seen[index] :], index]


def _spec_problems(index: int, spec: WorkflowJobSpec, problems: dict[str, list[str]]) -> None:
    payload = {} if spec.payload is None else spec.payload
    problem = json_problem(payload)
    if problem is not None:
        problems.setdefault(f"jobs[{index}].payload", []).append(problem)
    metadata = {} if spec.metadata is None else spec.metadata
    problem = metadata_problem(metadata) or json_problem(metadata)
    if problem is not None:
        problems.setdefault(f"jobs[{index}].metadata", []).append(problem)


def workflow_problems(
    specs: Sequence[WorkflowJobSpec], *, name: str = ""
) -> tuple[dict[str, list[str]], list[list[int]], list[list[UUID]]]:
    """Every reason the workflow cannot be written, by field (empty: it can), and each
    job's parents inside and outside it. Reads the database only for the ids of jobs
    outside the workflow."""
    problems: dict[str, list[str]] = {}
    if len(name) > WORKFLOW_NAME_MAX_LENGTH:
        problems["name"] = [f"A string of at most {WORKFLOW_NAME_MAX_LENGTH} characters."]
    if not 1 <= len(specs) <= WORKFLOW_JOBS_MAX:
        problems["jobs"] = [f"A list of 1 to {WORKFLOW_JOBS_MAX} jobs is required."]
        return problems, [], []
    seen_keys: dict[str, int] = {}
    for index, spec in enumerate(specs):
        _spec_problems(index, spec, problems)
        key = spec.idempotency_key
        if key is not None:
            if key in seen_keys:
                problems.setdefault(f"jobs[{index}].idempotency_key", []).append(
                    f"Also used by jobs[{seen_keys[key]}]."
                )
            seen_keys.setdefault(key, index)
    inside, outside = _parents(specs, problems)
    cycle = _cycle(specs, inside)
    if cycle is not None:
        names = " -> ".join(specs[index].ref or f"jobs[{index}]" for index in cycle)
        problems.setdefault(f"jobs[{cycle[0]}].depends_on", []).append(
            f"Cycle: {names}. A job cannot wait for itself, even through others."
        )
    named = list({parent for parents in outside for parent in parents})
    if named:
        missing = set(named) - get_driver().existing_job_ids(named)
        for index, parents in enumerate(outside):
            unknown = [str(parent) for parent in parents if parent in missing]
            if unknown:
                problems.setdefault(f"jobs[{index}].depends_on", []).append(
                    "No ref of this workflow and no such job: " + ", ".join(unknown) + "."
                )
    return problems, inside, outside


def create_workflow(
    *, jobs: Sequence[WorkflowJobSpec], name: str = "", now: datetime | None = None
) -> CreatedWorkflow:
    """Write a workflow: its row, every job (each with its ``created`` event, idle workers
    woken as for any create) and every dependency edge, in ONE transaction; return it with
    its jobs as they are after that, in the specs' order.

    Invariant: all of it is written or nothing is. Every problem (bounds of
    ``jobs.limits``: ``WORKFLOW_JOBS_MAX`` jobs, ``WORKFLOW_DEPENDS_ON_MAX`` parents inside
    the workflow and ``DEPENDS_ON_MAX`` outside it per job; a ref used twice; a
    ``depends_on`` entry that is neither a ref of the workflow nor an existing job; a
    parent named twice; a cycle, reported with its path; unstorable payload or metadata;
    an idempotency key used twice, or known already) raises ``InvalidWorkflow`` naming
    each field (``jobs[2].depends_on``) before the transaction commits, so nothing
    remains. A job without parents is ``queued`` at once; the others are ``waiting`` and
    settled like any job with ``depends_on`` (``settle_waiting_jobs``): those waiting only
    for jobs of the workflow need nothing now (none of those has finished), those that
    wait for existing jobs are settled at once (those may have finished).
    """
    problems, inside, outside = workflow_problems(jobs, name=name)
    if problems:
        raise InvalidWorkflow(problems)
    now = _now(now)
    workflow_id = uuid4()
    driver = get_driver()
    with transaction.atomic():
        driver.create_workflow(workflow_id, name=name, now=now)
        results = create_jobs(
            [
                NewJobSpec(
                    type=spec.type,
                    payload=spec.payload,
                    priority=spec.priority,
                    available_at=spec.available_at,
                    max_attempts=spec.max_attempts,
                    idempotency_key=spec.idempotency_key,
                    queue=spec.queue,
                    timeout_seconds=spec.timeout_seconds,
                    metadata=spec.metadata,
                    concurrency_key=spec.concurrency_key,
                    workflow_id=workflow_id,
                    ref=spec.ref,
                )
                for spec in jobs
            ],
            now=now,
        )
        known = {
            f"jobs[{index}].idempotency_key": ["A job with this idempotency key exists already."]
            for index, (_, created) in enumerate(results)
            if not created
        }
        if known:
            # Raised inside the transaction: every row written so far is rolled back.
            raise InvalidWorkflow(known)
        ids = [row.id for row, _ in results]
        edges = [
            (ids[child], ids[parent], jobs[child].on_parent_failure)
            for child, parents in enumerate(inside)
            for parent in parents
        ] + [
            (ids[child], parent, jobs[child].on_parent_failure)
            for child, parents in enumerate(outside)
            for parent in parents
        ]
        if edges:
            driver.add_dependencies(edges, now=now)
        settle = [ids[child] for child, parents in enumerate(outside) if parents]
        if settle:
            settle_waiting_jobs(ids=settle, limit=len(settle), now=now)
        # add_dependencies made every child waiting; only the settled ones are read again.
        waiting = {child for child, _, _ in edges}
        settled = driver.job_rows(settle) if settle else {}
        rows = [
            settled.get(row.id)
            or (
                replace(row, status=JobStatus.WAITING, updated_at=now) if row.id in waiting else row
            )
            for row, _ in results
        ]
    return CreatedWorkflow(id=workflow_id, name=name, created_at=now, jobs=rows)
