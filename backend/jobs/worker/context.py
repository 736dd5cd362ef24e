"""What a running handler sees: its ``JobContext``, and the interruptions that stop it.

A handler is ``fn(context) -> result``. Its return value becomes the job's ``result`` and
must be JSON-serialisable; raising an exception fails the attempt (retried with backoff
while attempts remain). The worker keeps the attempt's lease alive by itself (a heartbeat
per process) unless the handler opted out (``register(..., heartbeat=False)``);
``context.renew()`` is there for those, and for a handler that wants a ``lease_renewed``
event. ``context.progress()`` adds timeline events. Both raise a ``JobInterrupted`` once
the attempt must stop (cancelled, timed out, or lost): an attempt that no longer owns its
job (its lease ran out and cleanup requeued or failed the job, another worker claimed
it) gets ``LeaseLost`` and writes nothing, rather than a return as if it had written.
``context.cancelled`` says whether a cancel was requested, for handlers that poll.

Handlers import these from ``jobs.handlers``, their documented home; the exceptions say
so in their ``__module__`` too, because the worker records an exception by its class path
(``TaskResult.errors``), and the paths recorded must not depend on where they are defined.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from .. import selectors, services
from ..models import DEFAULT_QUEUE

PUBLIC_MODULE = "jobs.handlers"


class JobInterrupted(Exception):
    """The attempt must stop; the worker records how it ended."""

    __module__ = PUBLIC_MODULE


class LeaseLost(JobInterrupted):
    """The worker no longer owns the attempt; nothing more of it is written."""

    __module__ = PUBLIC_MODULE


class JobTimedOut(JobInterrupted):
    """The attempt ran past its timeout and was already recorded as failed."""

    __module__ = PUBLIC_MODULE


class JobCancelled(JobInterrupted):
    """A cancel was requested; the worker ends the attempt as cancelled."""

    __module__ = PUBLIC_MODULE


class JobSnoozed(JobInterrupted):
    """Raised by ``snooze()``: the worker puts the job back to ``queued`` for ``seconds``,
    its attempt not spent."""

    __module__ = PUBLIC_MODULE

    def __init__(self, seconds: float) -> None:
        super().__init__(f"snoozed for {seconds} s")
        self.seconds = seconds


@dataclass
class AttemptState:
    """What the worker's heartbeat learned about a running attempt (set from its thread)."""

    cancel_requested: bool = False
    timed_out: bool = False
    lost: bool = False


def _call[T](write: Callable[[], T]) -> T:
    return write()


@dataclass
class JobContext:
    """What a running handler sees of its job and of the worker running it."""

    job_id: UUID
    type: str
    payload: dict[str, Any]
    attempt: int
    worker_id: str
    lease_seconds: int
    queue: str = DEFAULT_QUEUE
    timeout_seconds: int | None = None
    state: AttemptState = field(default_factory=AttemptState, repr=False)
    # The worker passes a wrapper that retries a write through a lost connection.
    retrying: Callable[[Callable[[], Any]], Any] = field(default=_call, repr=False)
    _parent_results: list[Any] | None = field(default=None, repr=False)

    @property
    def cancelled(self) -> bool:
        """Whether a cancel was requested for this job (seen within one heartbeat)."""
        return self.state.cancel_requested

    @property
    def parent_results(self) -> list[Any]:
        """The stored results of the jobs this one depends on, in its ``depends_on`` order
        (a chain step's: its one parent's, in a list; a group's callback: each member's);
        ``None`` for a parent without a result (one that failed, under
        ``on_parent_failure="run"``). Read once per attempt, on first use."""
        if self._parent_results is None:
            self._parent_results = selectors.parent_results(self.job_id)
        return self._parent_results

    def check(self) -> None:
        """Raise the ``JobInterrupted`` that applies, if the attempt must stop."""
        where = f"job {self.job_id} attempt {self.attempt}"
        if self.state.timed_out:
            raise JobTimedOut(f"{where} ran past its {self.timeout_seconds} s timeout")
        if self.state.lost:
            raise LeaseLost(f"{where} is no longer ours")
        if self.state.cancel_requested:
            raise JobCancelled(f"{where} was cancelled")

    def renew(self) -> None:
        """Extend the lease now (and write ``lease_renewed``); raise ``JobInterrupted``
        if the attempt must stop.

        Only the attempt that owns the job renews: one that lost it (its lease ran out and
        cleanup requeued or failed the job, or another worker claimed it) raises
        ``LeaseLost`` and writes nothing; so does every later ``renew()``, ``progress()``
        and ``check()`` of the attempt."""
        self._write_as_owner(
            lambda: services.renew_lease(
                job_id=self.job_id,
                worker_id=self.worker_id,
                attempt=self.attempt,
                lease_seconds=self.lease_seconds,
            )
        )

    def progress(self, message: str, data: dict[str, Any] | None = None) -> None:
        """Add a ``progress`` event; raise ``JobInterrupted`` if the attempt must stop,
        ``LeaseLost`` (writing nothing) once it no longer owns the job, as ``renew()``."""
        self._write_as_owner(
            lambda: services.record_progress(
                job_id=self.job_id,
                worker_id=self.worker_id,
                attempt=self.attempt,
                message=message,
                data=data,
            )
        )

    def snooze(self, seconds: float) -> None:
        """Stop this attempt and run the job again in ``seconds``, the attempt not spent
        (the next claim has the same number): raises ``JobSnoozed``, which the worker
        records as a ``snoozed`` event; a handler must let it propagate. ``seconds`` is
        checked first: a finite number from 0 to ``jobs.limits.RETRY_DELAY_MAX_SECONDS``,
        else ``ValueError``."""
        problem = services.delay_problem(seconds)
        if problem is not None:
            raise ValueError(f"snooze seconds {problem}")
        raise JobSnoozed(seconds)

    def _write_as_owner(self, write: Callable[[], object]) -> None:
        """Run one of the attempt's guarded writes. A write that matched no row (``None``
        or ``False``) means the attempt is no longer ours: it is marked lost and stops."""
        self.check()
        if not self.retrying(write):
            self.state.lost = True
            self.check()
