"""Workflows of ``django.tasks`` tasks: ``chain``, ``group`` and a group's callback,
enqueued at once.

::

    from jobs.workflows import chain, group, step

    # extract, then transform with extract's return value, then load with transform's.
    flow = chain(step(extract, "2026-12"), transform, load.using(queue_name="etl"))
    # every shard at the same time, then report once every one of them succeeded.
    flow = group(*(step(shard, n) for n in range(1000))).then(report)
    run = flow.enqueue(name="nightly")  # run.id: the workflow; run.results: TaskResults

A step is a task (called without arguments), a ``task.using(...)`` task, or ``step(task,
*args, **kwargs)``. A chain runs its steps one after another; a group runs its members side
by side, and whatever follows it waits for every one of them (a group inside a chain, or
``group(...).then(callback)``). ``then(callback, on="finish")`` runs the callback once every
member finished, failed or not (``on_parent_failure="run"``); ``on="success"`` (the
default) runs it once every member succeeded and cancels it as soon as one failed for good
or was cancelled.

Invariants:

* ``enqueue()`` writes the workflow, every job and every edge through
  ``services.create_workflow``, in ONE transaction (the caller's, if any): all of it or
  nothing. Tasks and arguments are checked first, as ``Task.enqueue`` checks them.
* A step reads its parents' return values with ``context.parent_results``
  (``takes_context=True``), in the order of its parents: a chain step gets its one
  parent's, a callback every member's, in the group's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.tasks import TaskResult
from django.tasks.base import Task
from django.tasks.exceptions import InvalidTask

from . import services
from .backends import (
    InvalidTaskArguments,
    JobQueueBackend,
    JobQueueTask,
    job_priority,
    task_payload,
)
from .limits import WORKFLOW_REF_MAX_LENGTH
from .models import OnParentFailure

# then(on=...): what a callback waits for.
ON_SUCCESS = "success"
ON_FINISH = "finish"
_POLICIES = {ON_SUCCESS: OnParentFailure.CANCEL, ON_FINISH: OnParentFailure.RUN}


class Node:
    """A part of a workflow: a ``Step``, a ``Chain`` or a ``Group``."""

    def then(self, callback: Task[..., Any] | Step, *, on: str = ON_SUCCESS) -> Chain:
        """This part, then ``callback`` once all of it succeeded (``on="success"``) or
        finished (``on="finish"``, whatever became of it)."""
        if on not in _POLICIES:
            raise ValueError(f"on must be {ON_SUCCESS!r} or {ON_FINISH!r}, not {on!r}.")
        last = _node(callback)
        if not isinstance(last, Step):
            raise TypeError("A callback is one task or step(task, ...), not a chain or group.")
        return Chain((self, Step(last.task, last.args, last.kwargs, _POLICIES[on])))

    def enqueue(self, *, name: str = "") -> WorkflowRun:
        """Write the workflow, all or nothing (``services.create_workflow``), in the
        caller's transaction; its id and a READY TaskResult per step, in step order."""
        entries: list[_Entry] = []
        self._compile([], entries, {})
        return _enqueue(entries, name=name)

    def _compile(
        self, parents: list[str], entries: list[_Entry], taken: dict[str, int]
    ) -> list[str]:
        """Add this part's steps to ``entries``, each waiting for ``parents``; the refs of
        the steps whatever follows must wait for."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Step(Node):
    """One call of a task: its arguments, and (from ``then(on=...)``) the policy of its
    edges; ``None`` keeps the task's own ``on_parent_failure``."""

    task: JobQueueTask
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    on_parent_failure: str | None = None

    def _compile(
        self, parents: list[str], entries: list[_Entry], taken: dict[str, int]
    ) -> list[str]:
        ref = _ref(self.task, taken)
        entries.append(_Entry(ref, self, tuple(parents)))
        return [ref]


@dataclass(frozen=True, eq=False)
class Chain(Node):
    """Its parts one after another: each waits for all of the one before."""

    items: tuple[Node, ...]

    def _compile(
        self, parents: list[str], entries: list[_Entry], taken: dict[str, int]
    ) -> list[str]:
        for item in self.items:
            parents = item._compile(parents, entries, taken)
        return parents


@dataclass(frozen=True, eq=False)
class Group(Node):
    """Its parts side by side; what follows waits for every one of them."""

    items: tuple[Node, ...]

    def _compile(
        self, parents: list[str], entries: list[_Entry], taken: dict[str, int]
    ) -> list[str]:
        leaves: list[str] = []
        for item in self.items:
            leaves.extend(item._compile(parents, entries, taken))
        return leaves


def step(task: Task[..., Any], /, *args: Any, **kwargs: Any) -> Step:
    """One call of ``task`` (or ``task.using(...)``) with these arguments, as a step."""
    return Step(_task(task), args, kwargs)


def chain(*items: Task[..., Any] | Node) -> Chain:
    """``items`` one after another: each starts once all of the one before succeeded."""
    return Chain(tuple(_node(item) for item in items))


def group(*items: Task[..., Any] | Node) -> Group:
    """``items`` side by side; a step after the group waits for every one of them."""
    return Group(tuple(_node(item) for item in items))


@dataclass(frozen=True)
class WorkflowRun:
    """An enqueued workflow: its id, and a TaskResult per step in step order (each one's
    ``refresh()`` reads its job), keyed by ref in ``by_ref``."""

    id: UUID
    name: str
    results: list[TaskResult[..., Any]]
    refs: list[str]

    @property
    def by_ref(self) -> dict[str, TaskResult[..., Any]]:
        return dict(zip(self.refs, self.results, strict=True))


@dataclass(frozen=True)
class _Entry:
    ref: str
    step: Step
    parents: tuple[str, ...]


def _task(task: object) -> JobQueueTask:
    if not isinstance(task, JobQueueTask):
        raise InvalidTask(
            f"{task!r} is not a task of jobs.backends.JobQueueBackend: a workflow's steps "
            "are @task functions of that backend."
        )
    return task


def _node(item: object) -> Node:
    if isinstance(item, Node):
        return item
    return Step(_task(item))


def _ref(task: JobQueueTask, taken: dict[str, int]) -> str:
    """The step's name: its task's, numbered from the second step of the same task on."""
    base = task.name[: WORKFLOW_REF_MAX_LENGTH - 8]
    count = taken.get(base, 0) + 1
    taken[base] = count
    return base if count == 1 else f"{base}-{count}"


def _backend(task: JobQueueTask) -> JobQueueBackend:
    backend = task.get_backend()
    if not isinstance(backend, JobQueueBackend):
        raise InvalidTask(f"The {task.backend!r} backend cannot run workflows.")
    backend.validate_task(task)
    return backend


def _enqueue(entries: Sequence[_Entry], *, name: str) -> WorkflowRun:
    specs: list[services.WorkflowJobSpec] = []
    backends: list[JobQueueBackend] = []
    for entry in entries:
        task = entry.step.task
        backend = _backend(task)
        if task.unique_key is not None:
            raise InvalidTask(f"{entry.ref}: a workflow's job holds no unique_key.")
        try:
            payload = task_payload(entry.step.args, entry.step.kwargs)
        except InvalidTaskArguments as exc:
            raise InvalidTaskArguments(f"{entry.ref}: {exc}") from None
        specs.append(
            services.WorkflowJobSpec(
                type=task.module_path,
                ref=entry.ref,
                payload=payload,
                priority=job_priority(task.priority),
                available_at=task.run_after,
                max_attempts=backend.option(task, "MAX_ATTEMPTS"),
                queue=task.queue_name,
                timeout_seconds=backend.option(task, "TIMEOUT_SECONDS"),
                metadata=None if task.metadata is None else dict(task.metadata),
                concurrency_key=task.concurrency_key,
                depends_on=(*entry.parents, *task.depends_on),
                on_parent_failure=entry.step.on_parent_failure or task.on_parent_failure,
            )
        )
        backends.append(backend)
    created = services.create_workflow(jobs=specs, name=name)
    results: list[TaskResult[..., Any]] = [
        backend.enqueued(entry.step.task, row, entry.step.args, dict(entry.step.kwargs))
        for entry, backend, row in zip(entries, backends, created.jobs, strict=True)
    ]
    return WorkflowRun(
        id=created.id, name=name, results=results, refs=[entry.ref for entry in entries]
    )
