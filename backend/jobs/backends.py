"""A ``django.tasks`` backend on this queue: ``@task`` functions become jobs.

Configured the standard way::

    TASKS = {"default": {"BACKEND": "jobs.backends.JobQueueBackend",
                         "QUEUES": ["default", "emails"],
                         "OPTIONS": {"MAX_ATTEMPTS": 5}}}

Invariants:

* ``Task.enqueue()`` writes one job, ``enqueue_many()`` one per call, through
  ``services.create_jobs`` on the default database, in the caller's transaction: they
  commit or roll back with the caller's data. Arguments that do not survive a JSON round
  trip are refused before anything is written (in a bulk call, every call is checked
  first: all or nothing).
* The job's type is the task's module path and its payload ``{"args": [...], "kwargs":
  {...}}``; the TaskResult id is the job id.
* The worker runs a task only through the handler registry: creating a task with this
  backend's ``task_class`` registers it, and a job type that names no registered task or
  handler is refused, never imported.
* A TaskResult is read from the job row and its events (one claim per attempt, one error
  event per failed attempt), never stored separately.
"""

from __future__ import annotations

import inspect
import json
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from dataclasses import field as dataclass_field
from datetime import datetime
from functools import partial
from typing import Any, Protocol
from uuid import UUID

from asgiref.sync import sync_to_async
from django.apps import apps
from django.core import checks
from django.db import transaction
from django.tasks import TaskContext, TaskResult, TaskResultStatus
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY, Task, TaskError
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued, task_finished, task_started

from . import registry, selectors, services
from .drivers import JobRow
from .errors import JobNotFound
from .handlers import JobCancelled, JobContext, JobTimedOut, LeaseLost
from .limits import (
    MAX_ATTEMPTS_MAX,
    QUEUE_NAME_MAX_LENGTH,
    QUEUE_NAME_PATTERN,
    TIMEOUT_SECONDS_MAX,
    TYPE_MAX_LENGTH,
    metadata_problem,
)
from .models import FINISHED_STATUSES, JobEventType, JobStatus
from .registry import Backoff, HandlerSpec, RetryPolicy
from .storable import UnstorableValue, json_problem

# Django's priority (-100..100, default 0, higher first) plus this is the job's priority:
# a task at Django's default runs level with a REST job at the spec's default of 50, and
# the order between any two tasks is kept (the mapping is a shift, so it is invertible).
PRIORITY_OFFSET = 50

STATUSES = {
    JobStatus.QUEUED: TaskResultStatus.READY,
    # Waiting for the jobs it depends on: not started, will run (or be cancelled).
    JobStatus.WAITING: TaskResultStatus.READY,
    JobStatus.RUNNING: TaskResultStatus.RUNNING,
    JobStatus.SUCCEEDED: TaskResultStatus.SUCCESSFUL,
    JobStatus.FAILED: TaskResultStatus.FAILED,
    # django.tasks has no cancelled status: a cancelled task did not succeed and will not
    # run, so FAILED; its last error names jobs.handlers.JobCancelled.
    JobStatus.CANCELLED: TaskResultStatus.FAILED,
}

# Backend OPTIONS: defaults for the task options, for the backend and per queue.
OPTION_NAMES = {"MAX_ATTEMPTS": "max_attempts", "TIMEOUT_SECONDS": "timeout_seconds"}
OPTION_LIMITS = {"max_attempts": MAX_ATTEMPTS_MAX, "timeout_seconds": TIMEOUT_SECONDS_MAX}


def job_priority(priority: int) -> int:
    """The job priority of a task priority (Django's -100..100 -> -50..150)."""
    return priority + PRIORITY_OFFSET


def task_priority(priority: int) -> int:
    """The task priority of a job priority; a job outside the mapped range (set through
    the API) reads as Django's nearest bound."""
    return min(max(priority - PRIORITY_OFFSET, TASK_MIN_PRIORITY), TASK_MAX_PRIORITY)


def _class_path(kind: type[BaseException]) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


# --- Arguments ----------------------------------------------------------------------------


class InvalidTaskArguments(UnstorableValue, TypeError):
    """Task arguments the job's JSON payload cannot carry as they are.

    A ``TypeError``, as Django's own backends raise for unsupported argument types, and an
    ``UnstorableValue``, as everything else here the database would refuse.
    """


def _json_problem(value: Any) -> str | None:
    """Why ``value`` would not come back from JSON as it went in, or ``None``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool | int | str):
            continue
        if isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{item!r} is not a JSON number"
        elif isinstance(item, list | tuple):  # a tuple comes back a list, as Django normalizes
            stack.extend(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return f"the key {key!r} is not a string (JSON would turn it into one)"
                stack.append(child)
        else:
            return f"a {type(item).__name__} is not JSON (pass JSON values: str, int, ...)"
    return json_problem(value)


def task_payload(args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The job payload for a task call: ``{"args": [...], "kwargs": {...}}``.

    Raises ``InvalidTaskArguments`` naming the first argument JSON cannot carry (a
    datetime, a set, a non-string key, NaN, NUL, a lone surrogate, too deep).
    """
    named = [(f"args[{index}]", value) for index, value in enumerate(args)]
    named += [(f"kwargs[{key!r}]", value) for key, value in kwargs.items()]
    for name, value in named:
        problem = _json_problem(value)
        if problem is not None:
            raise InvalidTaskArguments(f"Task argument {name}: {problem.rstrip('.')}.")
    payload: dict[str, Any] = json.loads(json.dumps({"args": list(args), "kwargs": kwargs}))
    return payload


def call_arguments(payload: Any) -> tuple[list[Any], dict[str, Any]]:
    """The args and kwargs a task job's payload holds; ``TypeError`` for another shape
    (a job created through the API with a payload of its own)."""
    if isinstance(payload, dict):
        args, kwargs = payload.get("args", []), payload.get("kwargs", {})
        known = ("args" in payload) + ("kwargs" in payload)
        if len(payload) == known and isinstance(args, list) and isinstance(kwargs, dict):
            return args, kwargs
    raise TypeError('A task job\'s payload must be {"args": [...], "kwargs": {...}}.')


def _call_pair(index: int, call: Any) -> tuple[Sequence[Any], dict[str, Any]]:
    """The args and kwargs of ``enqueue_many``'s call number ``index``: an ``(args,
    kwargs)`` pair with a list or tuple of args and a mapping of string keys."""
    if isinstance(call, list | tuple) and len(call) == 2:
        args, kwargs = call
        if (
            isinstance(args, list | tuple)
            and isinstance(kwargs, Mapping)
            and all(isinstance(key, str) for key in kwargs)
        ):
            return args, dict(kwargs)
    raise InvalidTaskArguments(
        f"calls[{index}]: must be an (args, kwargs) pair: a list or tuple, and a mapping "
        "with string keys.",
        index=index,
    )


# --- Tasks --------------------------------------------------------------------------------


# The stubs declare TaskContext generic and not frozen; at run time it is neither.
@dataclass(frozen=True, slots=True, kw_only=True)
class JobTaskContext(TaskContext):  # type: ignore[type-arg, misc]
    """Django's ``TaskContext`` with the running job: ``attempt`` is the job's attempt
    number (the one ``max_attempts`` counts), ``job`` the handler context (lease, queue,
    timeout), and ``progress``/``cancelled`` report to and read from the job."""

    job: JobContext

    @property
    def attempt(self) -> int:
        return self.job.attempt

    @property
    def cancelled(self) -> bool:
        """Whether a cancel was requested (seen within one heartbeat)."""
        return self.job.cancelled

    @property
    def parent_results(self) -> list[Any]:
        """The return values of the tasks this one depends on, in ``depends_on`` order: a
        chain step's one parent's, a group callback's every member's
        (``JobContext.parent_results``)."""
        return self.job.parent_results

    def progress(self, message: str, data: dict[str, Any] | None = None) -> None:
        """Add a ``progress`` event to the job's timeline; raises ``JobInterrupted``
        (``JobCancelled``, ``JobTimedOut``, ``LeaseLost``) once the attempt must stop."""
        self.job.progress(message, data)

    async def aprogress(self, message: str, data: dict[str, Any] | None = None) -> None:
        """``progress`` for ``async def`` tasks (database access must leave the loop)."""
        await sync_to_async(self.job.progress)(message, data)

    def snooze(self, seconds: float) -> None:
        """Stop this attempt and run the task again in ``seconds``, the attempt not spent:
        raises ``JobSnoozed``, which must propagate (``JobContext.snooze``)."""
        self.job.snooze(seconds)


class TaskHandler:
    """The registry's handler for a task: calls it with the args and kwargs of the job."""

    def __init__(self, task: JobQueueTask) -> None:
        self.task = task

    def __call__(self, context: JobContext) -> Any:
        args, kwargs = call_arguments(context.payload)
        if not self.task.takes_context:
            return self.task.call(*args, **kwargs)
        task_context = JobTaskContext(task_result=_running_result(context, self.task), job=context)
        return self.task.call(task_context, *args, **kwargs)


def registered_task(job_type: str) -> JobQueueTask | None:
    """The task registered for ``job_type``, or ``None`` (no handler, or an @register one)."""
    spec = registry.get_handler(job_type)
    return spec.fn.task if spec is not None and isinstance(spec.fn, TaskHandler) else None


def _register(task: JobQueueTask) -> None:
    registered = registered_task(task.module_path)
    if registered is not None and registered.func is task.func:
        return  # a copy made by .using(): the function is registered already
    if registered is None and registry.get_handler(task.module_path) is not None:
        raise InvalidTask(f"{task.module_path!r} is already the type of an @register handler.")
    description = inspect.getdoc(task.func) or f"django.tasks task {task.module_path}"
    spec = HandlerSpec(
        type=task.module_path,
        fn=TaskHandler(task),
        description=description,
        example_payload={"args": [], "kwargs": {}},
        timeout_seconds=task.timeout_seconds,
        heartbeat=task.heartbeat,
        retry=RetryPolicy.of(
            backoff=task.backoff, retry_on=task.retry_on, give_up_on=task.give_up_on
        ),
    )
    # A second definition of the same path is the module run again: the newest wins.
    registry.add(spec, replace=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class JobQueueTask(Task):  # type: ignore[type-arg]  # Task is not subscriptable at run time
    """Django's ``Task`` with this queue's options, given to ``@task(...)``:

    ``max_attempts``: attempts before the task fails for good; ``timeout_seconds``:
    seconds one attempt may run. ``None`` (the default) takes the backend's OPTIONS for
    the task's queue, then the backend's, then the app settings
    (``JOB_WORKER_MAX_ATTEMPTS_DEFAULT``, ``JOB_WORKER_TIMEOUT_SECONDS``).
    ``metadata``: string keys and values every job of the task carries (a request id:
    ``task.using(metadata={...}).enqueue(...)`` for one call), within the bounds of the
    job's metadata (``jobs.limits``); with tracing on, the trace context joins them.
    ``heartbeat=False``: the worker does not extend the lease of the task's attempts, as
    ``@register(..., heartbeat=False)`` (for demonstrations and for tasks that must prove
    liveness themselves: with ``takes_context=True``, ``context.job.renew()``).
    ``backoff`` (``callable(exception, attempt) -> seconds | None``, ``None``: fail now),
    ``retry_on`` and ``give_up_on`` (tuples of exception classes): the task's retry
    policy (``jobs.registry.RetryPolicy``).
    Creating one registers it as the handler of its module path.
    """

    max_attempts: int | None = None
    timeout_seconds: int | None = None
    # Not hashed: a dict is not hashable, and a task is told apart by its other fields.
    metadata: Mapping[str, str] | None = dataclass_field(default=None, hash=False)
    heartbeat: bool = True
    # Flow control: at most one queued or running job per unique_key (an
    # enqueue while one is active returns that job's result), and the key whose
    # concurrency limit the job's attempts count against.
    unique_key: str | None = None
    concurrency_key: str | None = None
    # Job dependencies, for one call (``task.using(depends_on=[result, ...])``): the ids of
    # the jobs this one waits for, and what it does when one of them fails for good or is
    # cancelled ("cancel" or "run"; ``jobs.services.create_job``).
    depends_on: tuple[str, ...] = ()
    on_parent_failure: str = "cancel"
    backoff: Backoff | None = dataclass_field(default=None, hash=False)
    retry_on: tuple[type[BaseException], ...] | None = None
    give_up_on: tuple[type[BaseException], ...] | None = None

    def __post_init__(self) -> None:
        # Task.__post_init__ by name: super() fails in slots dataclasses before Python 3.14.
        Task.__post_init__(self)
        _register(self)

    def enqueue_many(
        self, calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[TaskResult[..., Any]]:
        """Enqueue this task once per ``(args, kwargs)`` pair of ``calls``, all or nothing
        (``JobQueueBackend.enqueue_many``)."""
        return self._bulk_backend().enqueue_many(self, calls)

    async def aenqueue_many(
        self, calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[TaskResult[..., Any]]:
        """``enqueue_many`` from async code."""
        return await self._bulk_backend().aenqueue_many(self, calls)

    def _bulk_backend(self) -> JobQueueBackend:
        backend = self.get_backend()
        if not isinstance(backend, JobQueueBackend):
            raise InvalidTask(f"The {self.backend!r} backend has no enqueue_many.")
        return backend

    def using(
        self,
        *,
        priority: int | None = None,
        queue_name: str | None = None,
        run_after: datetime | None = None,
        backend: str | None = None,
        max_attempts: int | None = None,
        timeout_seconds: int | None = None,
        metadata: Mapping[str, str] | None = None,
        unique_key: str | None = None,
        concurrency_key: str | None = None,
        depends_on: Iterable[TaskResult[..., Any] | UUID | str] | None = None,
        on_parent_failure: str | None = None,
    ) -> JobQueueTask:
        """Django's ``using()``, plus this queue's options for one call; ``metadata``,
        ``unique_key`` and ``concurrency_key`` replace the task's. ``depends_on`` (task
        results or job ids): the job waits until they succeeded; ``on_parent_failure``
        (``"cancel"``, the default, or ``"run"``) if one fails for good or is cancelled."""
        task: Task[..., Any] = Task.using(
            self, priority=priority, queue_name=queue_name, run_after=run_after, backend=backend
        )
        assert isinstance(task, JobQueueTask)  # Task.using() keeps the class
        if (
            max_attempts is None
            and timeout_seconds is None
            and metadata is None
            and unique_key is None
            and concurrency_key is None
            and depends_on is None
            and on_parent_failure is None
        ):
            return task
        return replace(
            task,
            max_attempts=task.max_attempts if max_attempts is None else max_attempts,
            timeout_seconds=task.timeout_seconds if timeout_seconds is None else timeout_seconds,
            metadata=task.metadata if metadata is None else metadata,
            unique_key=task.unique_key if unique_key is None else unique_key,
            concurrency_key=task.concurrency_key if concurrency_key is None else concurrency_key,
            depends_on=(
                task.depends_on
                if depends_on is None
                else tuple(
                    str(parent.id if isinstance(parent, TaskResult) else parent)
                    for parent in depends_on
                )
            ),
            on_parent_failure=(
                task.on_parent_failure if on_parent_failure is None else on_parent_failure
            ),
        )


def _as_stored(task: JobQueueTask, job: StoredJob) -> JobQueueTask:
    """``task`` with the job's priority, queue and run time, as stored.

    Built without validation: a stored job stays readable after QUEUES changes or when the
    API gave it a queue or priority the backend would refuse.
    """
    priority = task_priority(job.priority)
    # Set only when the job waits past its enqueue time (deferred, or a retry's backoff).
    run_after = job.available_at if job.available_at > job.created_at else None
    if (priority, job.queue, run_after) == (task.priority, task.queue_name, task.run_after):
        return task  # the common case: enqueued with the task's own defaults
    values = {field.name: getattr(task, field.name) for field in fields(task)}
    values.update(priority=priority, queue_name=job.queue, run_after=run_after)
    stored = object.__new__(type(task))
    for name, value in values.items():
        object.__setattr__(stored, name, value)
    return stored


# --- Results ------------------------------------------------------------------------------


class StoredJob(Protocol):
    """What a TaskResult is built from: a ``Job`` or a driver's ``JobRow``."""

    @property
    def id(self) -> UUID: ...
    @property
    def type(self) -> str: ...
    @property
    def payload(self) -> Any: ...
    @property
    def status(self) -> str: ...
    @property
    def priority(self) -> int: ...
    @property
    def available_at(self) -> datetime: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def result(self) -> Any: ...
    @property
    def queue(self) -> str: ...


class StoredEvent(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def worker_id(self) -> str | None: ...
    @property
    def message(self) -> str: ...
    @property
    def data(self) -> Any: ...
    @property
    def created_at(self) -> datetime: ...


def task_error(event: StoredEvent) -> TaskError:
    """The TaskError of an event that ended an attempt: the exception the worker recorded,
    or, for an attempt ended from outside, the class that names why (timed out, lease
    expired, cancelled); the traceback, or the event's message when there is none."""
    data = event.data if isinstance(event.data, dict) else {}
    path = data.get("exception_class")
    if not path:
        if data.get("reason") == "timeout":
            path = _class_path(JobTimedOut)
        elif "expired_worker_id" in data:
            path = _class_path(LeaseLost)
        elif event.type == JobEventType.CANCELLED:
            path = _class_path(JobCancelled)
        elif data.get("reason") == "unstorable_result":
            path = _class_path(UnstorableValue)
        else:
            path = _class_path(Exception)
    return TaskError(exception_class_path=path, traceback=data.get("traceback") or event.message)


def _stored_arguments(payload: Any) -> tuple[list[Any], dict[str, Any]]:
    try:
        return call_arguments(payload)
    except TypeError:  # not a task's payload (written through the API): shown as is
        return [], {"payload": payload}


# The history's events that are not attempt endings: the claims, and the releases that
# give one back.
_CLAIM_EVENT_TYPES = (JobEventType.CLAIMED, JobEventType.RELEASED)


def started_claims(history: Sequence[StoredEvent]) -> list[StoredEvent]:
    """The claims whose attempt started: a ``released`` event gives back the claim just
    before it (a worker shutting down before the handler started; the attempt was not
    spent and the next claim takes its number again)."""
    claims: list[StoredEvent] = []
    for event in history:
        if event.type == JobEventType.CLAIMED:
            claims.append(event)
        elif event.type == JobEventType.RELEASED and claims:
            claims.pop()
    return claims


def build_task_result(
    job: StoredJob, history: Sequence[StoredEvent], *, task: JobQueueTask, backend: str
) -> TaskResult[..., Any]:
    """The TaskResult of a job from its row and ``selectors.attempt_history``.

    ``worker_ids``, ``started_at`` and ``last_attempted_at`` come from the claims (all of
    them, also those before a manual retry, but not a claim released before its handler
    started), ``errors`` from the events that ended an attempt with an error, the rest
    from the row.
    """
    claims = started_claims(history)
    errors = [task_error(event) for event in history if event.type not in _CLAIM_EVENT_TYPES]
    args, kwargs = _stored_arguments(job.payload)
    result: TaskResult[..., Any] = TaskResult(
        task=_as_stored(task, job),
        id=str(job.id),
        status=STATUSES[JobStatus(job.status)],
        enqueued_at=job.created_at,
        started_at=claims[0].created_at if claims else None,
        last_attempted_at=claims[-1].created_at if claims else None,
        finished_at=job.finished_at,
        args=args,
        kwargs=kwargs,
        backend=backend,
        errors=errors,
        worker_ids=[claim.worker_id or "" for claim in claims],
    )
    if job.status == JobStatus.SUCCEEDED:
        object.__setattr__(result, "_return_value", job.result)
    return result


# --- The backend --------------------------------------------------------------------------


class JobQueueBackend(BaseTaskBackend):
    """``django.tasks`` on the job queue: durable, retried, leased, cancellable tasks.

    OPTIONS (all optional): ``MAX_ATTEMPTS`` and ``TIMEOUT_SECONDS``, defaults for tasks
    that set none, and ``QUEUE_OPTIONS``, the same per queue name
    (``{"emails": {"MAX_ATTEMPTS": 10}}``), which win over the backend's.
    """

    task_class = JobQueueTask
    supports_defer = True
    supports_priority = True
    supports_get_result = True
    # Worker threads run no event loop, so Task.call runs a coroutine with asgiref's
    # async_to_sync, which starts a loop for it; its sync_to_async calls (the ORM) come
    # back to the worker thread and its connection. Timeouts abandon it like a thread.
    supports_async_task = True

    def validate_task(self, task: Task[..., Any]) -> None:
        super().validate_task(task)
        if not isinstance(task, JobQueueTask):
            raise InvalidTask(
                f"{task.module_path!r} was not made by this backend's task_class: define it "
                f"with @task(backend={self.alias!r}) so the worker can find it."
            )
        if len(task.module_path) > TYPE_MAX_LENGTH:
            raise InvalidTask(
                f"The module path {task.module_path!r} is longer than the job type's "
                f"{TYPE_MAX_LENGTH} characters."
            )
        if len(task.queue_name) > QUEUE_NAME_MAX_LENGTH or not re.match(
            QUEUE_NAME_PATTERN, task.queue_name
        ):
            raise InvalidTask(
                f"Queue name {task.queue_name!r}: at most {QUEUE_NAME_MAX_LENGTH} letters, "
                "digits and . _ : -, starting with a letter or digit."
            )
        for name, limit in OPTION_LIMITS.items():
            value = getattr(task, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit
            ):
                raise InvalidTask(f"{name} must be a whole number from 1 to {limit}.")
        if task.metadata is not None:
            metadata: object = task.metadata
            if isinstance(metadata, Mapping):
                metadata = dict(metadata)
            problem = metadata_problem(metadata) or json_problem(metadata)
            if problem is not None:
                raise InvalidTask(f"metadata: {problem}")
        if not isinstance(task.heartbeat, bool):
            raise InvalidTask("heartbeat must be True or False.")

    def option(self, task: JobQueueTask, name: str) -> int | None:
        """The task's ``name`` option: its own, else its queue's, else the backend's."""
        value: int | None = getattr(task, OPTION_NAMES[name])
        if value is None:
            value = self.options.get("QUEUE_OPTIONS", {}).get(task.queue_name, {}).get(name)
        if value is None:
            value = self.options.get(name)
        return value

    def enqueue[**P, R](
        self, task: Task[P, R], args: Sequence[Any], kwargs: dict[str, Any]
    ) -> TaskResult[P, R]:
        """Write the task's job in the caller's transaction and return its TaskResult.

        ``task_enqueued`` is sent once the job is committed (at once outside a
        transaction; never if the transaction rolls back), so a receiver only hears of
        jobs a worker can see.
        """
        (result,) = self._enqueue(task, [(args, kwargs)], bulk=False)
        return result

    def enqueue_many[**P, R](
        self, task: Task[P, R], calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[TaskResult[P, R]]:
        """Enqueue one job per ``(args, kwargs)`` of ``calls``, all or nothing; one
        TaskResult per call, in order.

        The task and every call are validated before anything is written (a bad call is
        named ``calls[<index>]``); the jobs are then written by one ``services.create_jobs``
        (one statement on PostgreSQL) in the caller's transaction, each with its
        ``created`` event, and ``task_enqueued`` is sent for each result as ``enqueue``
        sends it: after the commit, never after a rollback.
        """
        pairs = [_call_pair(index, call) for index, call in enumerate(calls)]
        return self._enqueue(task, pairs, bulk=True)

    async def aenqueue_many[**P, R](
        self, task: Task[P, R], calls: Iterable[tuple[Sequence[Any], Mapping[str, Any]]]
    ) -> list[TaskResult[P, R]]:
        """``enqueue_many`` from async code (``aenqueue``'s counterpart)."""
        return await sync_to_async(self.enqueue_many, thread_sensitive=True)(task, calls)

    def _enqueue[**P, R](
        self,
        task: Task[P, R],
        calls: list[tuple[Sequence[Any], dict[str, Any]]],
        *,
        bulk: bool,
    ) -> list[TaskResult[P, R]]:
        """The one enqueue path: validate everything, write every job, announce each."""
        self.validate_task(task)
        assert isinstance(task, JobQueueTask)  # validate_task refuses any other class
        # The options are the task's, so the same for every call.
        max_attempts = self.option(task, "MAX_ATTEMPTS")
        timeout_seconds = self.option(task, "TIMEOUT_SECONDS")
        metadata = None if task.metadata is None else dict(task.metadata)
        specs = []
        for index, (args, kwargs) in enumerate(calls):
            try:
                payload = task_payload(args, kwargs)
            except InvalidTaskArguments as exc:
                if not bulk:
                    raise
                raise InvalidTaskArguments(f"calls[{index}]: {exc}", index=index) from None
            specs.append(
                services.NewJobSpec(
                    type=task.module_path,
                    payload=payload,
                    priority=job_priority(task.priority),
                    available_at=task.run_after,
                    max_attempts=max_attempts,
                    queue=task.queue_name,
                    timeout_seconds=timeout_seconds,
                    metadata=metadata,
                    unique_key=task.unique_key,
                    concurrency_key=task.concurrency_key,
                    depends_on=task.depends_on,
                    on_parent_failure=task.on_parent_failure,
                )
            )
        rows = services.create_jobs(specs)
        return [
            self.enqueued(task, row, args, kwargs)
            for (args, kwargs), (row, _) in zip(calls, rows, strict=True)
        ]

    def enqueued[**P, R](
        self, task: Task[P, R], row: JobRow, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> TaskResult[P, R]:
        """The READY TaskResult of a job just written for ``task``; ``task_enqueued`` is
        sent for it once the caller's transaction commits (never after a rollback)."""
        result: TaskResult[P, R] = TaskResult(
            task=task,
            id=str(row.id),
            status=TaskResultStatus.READY,
            enqueued_at=row.created_at,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=list(args),
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        # One callback per result, each robust: a failing receiver cannot keep the other
        # results from being announced.
        transaction.on_commit(
            partial(task_enqueued.send, type(self), task_result=result), robust=True
        )
        return result

    def get_result(self, result_id: str) -> TaskResult[..., Any]:
        """The task's result as its job and events say now (two queries).

        ``TaskResultDoesNotExist`` for a malformed id, an unknown job, or a job that is not
        a registered task's (an @register handler's, or a type no task is defined for).
        """
        try:
            job_id = UUID(str(result_id))
        except ValueError:
            raise TaskResultDoesNotExist(result_id) from None
        try:
            job, history = selectors.job_with_attempt_history(job_id)
        except JobNotFound:
            raise TaskResultDoesNotExist(result_id) from None
        task = registered_task(job.type)
        if task is None:
            raise TaskResultDoesNotExist(
                f"{result_id}: a {job.type!r} job, which is not a registered task's"
            )
        return build_task_result(job, history, task=task, backend=self.alias)

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """Refuse a project without the jobs app, and OPTIONS the backend would misread
        (system checks, at start-up)."""
        if not apps.is_installed("jobs"):
            return [
                checks.Error(
                    f"TASKS[{self.alias!r}] uses {type(self).__name__}, but the jobs app is "
                    "not installed.",
                    hint="Add 'jobs' to INSTALLED_APPS.",
                    id="jobs.E102",
                )
            ]
        problems = []
        unknown = set(self.options) - {*OPTION_NAMES, "QUEUE_OPTIONS"}
        if unknown:
            problems.append(f"unknown OPTIONS {sorted(unknown)}")
        scopes: list[tuple[str, Any]] = [("OPTIONS", self.options)]
        per_queue = self.options.get("QUEUE_OPTIONS", {})
        if not isinstance(per_queue, dict):
            problems.append("OPTIONS['QUEUE_OPTIONS'] must map queue names to options")
            per_queue = {}
        for queue, options in per_queue.items():
            where = f"OPTIONS['QUEUE_OPTIONS'][{queue!r}]"
            if self.queues and queue not in self.queues:
                problems.append(f"{where}: {queue!r} is not in QUEUES")
            if not isinstance(options, dict) or set(options) - set(OPTION_NAMES):
                problems.append(f"{where} may only set {sorted(OPTION_NAMES)}")
                continue
            scopes.append((where, options))
        for where, options in scopes:
            for name, field in OPTION_NAMES.items():
                value = options.get(name)
                limit = OPTION_LIMITS[field]
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit
                ):
                    problems.append(f"{where}[{name!r}] must be a whole number from 1 to {limit}")
        return [
            checks.Error(f"TASKS[{self.alias!r}]: {problem}.", id="jobs.E101")
            for problem in problems
        ]


# --- The worker's side: Django's task signals around each attempt -------------------------


@dataclass(frozen=True)
class _Running:
    result: TaskResult[..., Any]  # as the attempt started
    sender: type[BaseTaskBackend]


_running: dict[tuple[UUID, int], _Running] = {}
_running_lock = threading.Lock()


_senders: dict[str, type[BaseTaskBackend]] = {}


def _backend_class(task: JobQueueTask) -> type[BaseTaskBackend]:
    """The class Django's task signals are sent by: the task's backend's. Cached per alias
    because ``get_backend()`` goes through a thread-local lookup on every call."""
    sender = _senders.get(task.backend)
    if sender is None:
        sender = _senders[task.backend] = type(task.get_backend())
    return sender


def forget_senders(*, setting: str, **kwargs: Any) -> None:
    """``setting_changed`` receiver: a new ``TASKS`` may name other backend classes."""
    if setting == "TASKS":
        _senders.clear()


def _running_result(context: JobContext, task: JobQueueTask) -> TaskResult[..., Any]:
    with _running_lock:
        running = _running.get((context.job_id, context.attempt))
    if running is not None:
        return running.result
    # attempt_started's receiver failed (it logged why): read the job now.
    job, history = selectors.job_with_attempt_history(context.job_id)
    return build_task_result(job, history, task=task, backend=task.backend)


@dataclass(frozen=True)
class _Claim:
    """The claimed event a first attempt's history holds, as the claimed row tells it."""

    worker_id: str | None
    created_at: datetime
    type: str = JobEventType.CLAIMED
    message: str = ""
    data: Any = None


def _history_at_claim(job: JobRow) -> list[Any]:
    """The attempt history of a job just claimed by this worker.

    A first attempt whose ``available_at`` is still its ``created_at`` was never claimed
    before (a retry, a lease expiry and a manual retry all move ``available_at`` past the
    creation): its history is this claim, which the row holds (the claim sets
    ``updated_at`` to the event's time), so the common case costs no query.
    """
    if job.attempts == 1 and job.available_at == job.created_at:
        return [_Claim(worker_id=job.locked_by, created_at=job.updated_at)]
    return list(selectors.attempt_history(job.id))


def on_attempt_started(sender: object, *, job: JobRow, **kwargs: Any) -> None:
    """``attempt_started`` receiver (connected by ``JobsConfig.ready``): a task's attempt
    starts, so build its RUNNING TaskResult and send ``task_started``; the result is kept
    for the task's context and ``task_finished``."""
    task = registered_task(job.type)
    if task is None:
        return
    result = build_task_result(job, _history_at_claim(job), task=task, backend=task.backend)
    sender = _backend_class(task)
    with _running_lock:
        _running[(job.id, job.attempts)] = _Running(result, sender)
    task_started.send(sender, task_result=result)


def on_attempt_finished(
    sender: object, *, job: JobRow, outcome: str, row: JobRow | None, **kwargs: Any
) -> None:
    """``attempt_finished`` receiver (connected by ``JobsConfig.ready``): a task's attempt
    ended, so send ``task_finished`` once the job is finished (SUCCESSFUL, or FAILED for
    good or cancelled). A failed attempt that will be retried sends nothing: the task goes
    back to READY and the next attempt starts again."""
    with _running_lock:
        running = _running.pop((job.id, job.attempts), None)
    task = registered_task(job.type)
    if task is None or row is None or row.status not in FINISHED_STATUSES:
        return
    if outcome == "succeeded" and running is not None:
        # A success adds no event a TaskResult reads: as Django's ImmediateBackend does, the
        # result task_started was sent with becomes the finished one.
        result, sender = running.result, running.sender
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(result, "finished_at", row.finished_at)
        object.__setattr__(result, "_return_value", row.result)
    else:
        history = selectors.attempt_history(job.id)
        result = build_task_result(row, history, task=task, backend=task.backend)
        sender = _backend_class(task)
    task_finished.send(sender, task_result=result)
