"""Job handlers: a registry from job type to function, the context a handler gets, and
the demo handlers.

A handler is ``fn(context) -> result``. Its return value becomes the job's ``result`` and
must be JSON-serialisable; raising an exception fails the attempt (retried with backoff
while attempts remain). The worker keeps the attempt's lease alive by itself (a heartbeat
per process); ``context.renew()`` is still there for a handler that wants a
``lease_renewed`` event. ``context.progress()`` adds timeline events. Both raise a
``JobInterrupted`` once the attempt must stop (cancelled, timed out, or lost), and
``context.cancelled`` says whether a cancel was requested, for handlers that poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from . import services
from .models import DEFAULT_QUEUE
from .registry import (
    Handler,
    HandlerSpec,
    add,
    get_handler,
    handler_specs,
    register,
    registered_types,
)

__all__ = [
    "AttemptState",
    "Handler",
    "HandlerSpec",
    "JobCancelled",
    "JobContext",
    "JobInterrupted",
    "JobTimedOut",
    "LeaseLost",
    "add",
    "get_handler",
    "handler_specs",
    "register",
    "registered_types",
]


class JobInterrupted(Exception):
    """The attempt must stop; the worker records how it ended."""


class LeaseLost(JobInterrupted):
    """The worker no longer owns the attempt; nothing more of it is written."""


class JobTimedOut(JobInterrupted):
    """The attempt ran past its timeout and was already recorded as failed."""


class JobCancelled(JobInterrupted):
    """A cancel was requested; the worker ends the attempt as cancelled."""


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

    @property
    def cancelled(self) -> bool:
        """Whether a cancel was requested for this job (seen within one heartbeat)."""
        return self.state.cancel_requested

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
        if the attempt must stop."""
        self._write_as_owner(
            lambda: services.renew_lease(
                job_id=self.job_id,
                worker_id=self.worker_id,
                attempt=self.attempt,
                lease_seconds=self.lease_seconds,
            )
        )

    def progress(self, message: str, data: dict[str, Any] | None = None) -> None:
        """Add a ``progress`` event; raise ``JobInterrupted`` if the attempt must stop."""
        self._write_as_owner(
            lambda: services.record_progress(
                job_id=self.job_id,
                worker_id=self.worker_id,
                attempt=self.attempt,
                message=message,
                data=data,
            )
        )

    def _write_as_owner(self, write: Callable[[], object]) -> None:
        """Run one of the attempt's guarded writes. A write that matched no row (``None``
        or ``False``) means the attempt is no longer ours: it is marked lost and stops."""
        self.check()
        if not self.retrying(write):
            self.state.lost = True
            self.check()


# --- Demo handlers ----------------------------------------------------------------------


def _number(payload: dict[str, Any], key: str, default: float) -> float:
    value = payload.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"payload.{key} must be a non-negative number")
    return float(value)


# The three sleeping demos differ only in how they treat their lease while they sleep.
Sleep = Callable[[JobContext, float], None]


def _sleeping_demo(
    context: JobContext, *, default: float, started: str, sleep: Sleep
) -> dict[str, Any]:
    """Read ``payload.sleep_seconds``, report it, sleep the given way, return what was slept."""
    seconds = _number(context.payload, "sleep_seconds", default)
    context.progress(started, {"sleep_seconds": seconds})
    sleep(context, seconds)
    return {"ok": True, "slept_seconds": seconds}


def _sleep_then_renew(context: JobContext, seconds: float) -> None:
    """Sleep in one go, then renew the lease (lost if the sleep outlasted it)."""
    time.sleep(seconds)
    context.renew()
    context.progress("Finished sleeping", {"slept_seconds": seconds})


def _sleep_renewing(context: JobContext, seconds: float) -> None:
    """Sleep in steps, renewing the lease and reporting progress at each step."""
    step = max(min(context.lease_seconds / 3, 5.0), 0.05)
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        time.sleep(min(step, remaining))
        context.renew()
        context.progress(
            "Still working",
            {"elapsed_seconds": round(seconds - max(deadline - time.monotonic(), 0), 2)},
        )


def _sleep_without_renewing(context: JobContext, seconds: float) -> None:
    """Sleep in one go without checking in: past its timeout the attempt is ended."""
    time.sleep(seconds)


@register("demo.success", example_payload={"sleep_seconds": 1})
def demo_success(context: JobContext) -> dict[str, Any]:
    """Sleeps briefly, renews its lease, reports progress, then succeeds."""
    return _sleeping_demo(context, default=1, started="Started", sleep=_sleep_then_renew)


@register("demo.fail", example_payload={"error": "Intentional demo failure"})
def demo_fail(context: JobContext) -> None:
    """Reports progress, then raises an intentional error (retried with backoff)."""
    error = context.payload.get("error", "Intentional demo failure")
    context.progress("About to fail", {"error": str(error)})
    raise RuntimeError(str(error))


@register("demo.slow", example_payload={"sleep_seconds": 10})
def demo_slow(context: JobContext) -> dict[str, Any]:
    """Works for longer, renewing its lease and reporting progress as it goes."""
    return _sleeping_demo(context, default=10, started="Started slow work", sleep=_sleep_renewing)


@register("demo.timeout", example_payload={"sleep_seconds": 45}, timeout_seconds=10)
def demo_timeout(context: JobContext) -> dict[str, Any]:
    """Sleeps past its timeout (10 s unless the job sets timeout_seconds) without checking
    in, so the worker records the attempt as timed out and retries it."""
    return _sleeping_demo(
        context, default=45, started="Sleeping past the timeout", sleep=_sleep_without_renewing
    )


@register("demo.flaky", example_payload={"fail_until_attempt": 2})
def demo_flaky(context: JobContext) -> dict[str, Any]:
    """Fails until the configured attempt, then succeeds."""
    fail_until = int(_number(context.payload, "fail_until_attempt", 2))
    if context.attempt < fail_until:
        context.progress("Failing on purpose", {"attempt": context.attempt})
        raise RuntimeError(f"Flaky failure on attempt {context.attempt} (succeeds at {fail_until})")
    context.progress("Succeeding", {"attempt": context.attempt})
    return {"ok": True, "succeeded_on_attempt": context.attempt}
