"""The domain errors services and selectors raise; ``jobs.api.errors`` maps them to HTTP."""

from __future__ import annotations

from uuid import UUID


class JobQueueError(Exception):
    """Base class of the domain errors the API maps to HTTP responses."""


class JobNotFound(JobQueueError):
    def __init__(self, job_id: UUID | str) -> None:
        super().__init__(f"Job {job_id} does not exist.")
        self.job_id = job_id


class WorkflowNotFound(JobQueueError):
    def __init__(self, workflow_id: UUID | str) -> None:
        super().__init__(f"Workflow {workflow_id} does not exist.")
        self.workflow_id = workflow_id


class InvalidTransition(JobQueueError):
    def __init__(self, message: str, *, current_status: str) -> None:
        super().__init__(message)
        self.current_status = current_status


class EmptySelection(JobQueueError):
    """A bulk action without ids or filters would select every job; it is refused."""

    def __init__(self) -> None:
        super().__init__(
            "Give ids or at least one filter (status, type, queue): "
            "an empty selection would act on every job."
        )


class DuplicateIdempotencyKey(JobQueueError):
    """One bulk create named the same idempotency key twice; nothing was written."""

    def __init__(self, key: str, first: int, again: int) -> None:
        super().__init__(f"Idempotency key {key!r} is also used by item {first}.")
        self.key = key
        self.first = first
        self.index = again


class ScheduleNotFound(JobQueueError):
    """No schedule of this name is declared in ``JOB_SCHEDULES``."""

    def __init__(self, name: str) -> None:
        super().__init__(f"Schedule {name!r} is not declared in JOB_SCHEDULES.")
        self.name = name


class ScheduleInvalid(JobQueueError):
    """A schedule of ``JOB_SCHEDULES`` that cannot run as declared (the system checks
    refuse it at a worker's start; a process that runs no checks meets it here)."""

    def __init__(self, name: str, problems: str) -> None:
        super().__init__(f"Schedule {name!r} cannot run: {problems}.")
        self.name = name


class UniqueKeyHeld(InvalidTransition):
    """A retry would make a second active job of a ``unique_key`` another queued or running
    job holds; nothing was written."""

    def __init__(self, *, current_status: str, unique_key: str, held_by: UUID) -> None:
        super().__init__(
            f"Job {held_by} is active with unique_key {unique_key!r}; retry this one once "
            "it has finished.",
            current_status=current_status,
        )
        self.unique_key = unique_key
        self.held_by = held_by


class InvalidDependencies(JobQueueError, ValueError):
    """``depends_on`` names too many jobs, a job twice, or a job that does not exist, or
    comes with a ``unique_key`` (which only queued and running jobs hold); ``index`` is
    the spec's in a bulk create. Nothing was written."""

    def __init__(self, message: str, *, index: int = 0) -> None:
        super().__init__(message)
        self.index = index


class InvalidWorkflow(JobQueueError, ValueError):
    """A workflow that cannot be written as given: ``problems`` maps each field, named as
    the bulk create names them (``jobs[2].depends_on``, ``name``, ``jobs``), to its
    reasons. Nothing was written."""

    def __init__(self, problems: dict[str, list[str]]) -> None:
        first = next(iter(problems.items()), ("", [""]))
        super().__init__(f"{first[0]}: {first[1][0]}" if first[0] else "Invalid workflow.")
        self.problems = problems
