"""Job handlers: a registry from job type to function, the context a handler gets, and
the demo handlers.

A handler is ``fn(context) -> result``. Its return value becomes the job's ``result`` and
must be JSON-serialisable; raising an exception fails the attempt (retried with backoff
while attempts remain). Long handlers call ``context.renew()`` to keep their lease and
``context.progress()`` to add timeline events.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from . import services


class LeaseLost(Exception):
    """The worker no longer owns the attempt; the handler should stop."""


@dataclass
class JobContext:
    """What a running handler sees of its job and of the worker running it."""

    job_id: UUID
    type: str
    payload: dict[str, Any]
    attempt: int
    worker_id: str
    lease_seconds: int

    def renew(self) -> None:
        """Extend the lease; raise ``LeaseLost`` if another worker now owns the job."""
        renewed = services.renew_lease(
            job_id=self.job_id,
            worker_id=self.worker_id,
            attempt=self.attempt,
            lease_seconds=self.lease_seconds,
        )
        if renewed is None:
            raise LeaseLost(f"job {self.job_id} attempt {self.attempt} is no longer ours")

    def progress(self, message: str, data: dict[str, Any] | None = None) -> None:
        """Add a ``progress`` event; raise ``LeaseLost`` if the attempt is no longer ours."""
        if not services.record_progress(
            job_id=self.job_id,
            worker_id=self.worker_id,
            attempt=self.attempt,
            message=message,
            data=data,
        ):
            raise LeaseLost(f"job {self.job_id} attempt {self.attempt} is no longer ours")


Handler = Callable[[JobContext], Any]


@dataclass(frozen=True)
class HandlerSpec:
    type: str
    fn: Handler
    description: str
    example_payload: dict[str, Any]


_REGISTRY: dict[str, HandlerSpec] = {}


def register(
    type: str, *, description: str | None = None, example_payload: dict[str, Any] | None = None
) -> Callable[[Handler], Handler]:
    """Decorator registering ``fn`` as the handler of ``type``.

    ``description`` (what ``GET /api/config/`` shows) defaults to the function's docstring;
    ``python -OO`` strips docstrings, so registering there needs it spelled out.
    """

    def decorator(fn: Handler) -> Handler:
        if type in _REGISTRY:
            raise ValueError(f"a handler for {type!r} is already registered")
        text = description or inspect.getdoc(fn)
        if not text:
            raise ValueError(f"the handler for {type!r} needs a description or a docstring")
        _REGISTRY[type] = HandlerSpec(type, fn, text, example_payload or {})
        return fn

    return decorator


def get_handler(type: str) -> HandlerSpec | None:
    return _REGISTRY.get(type)


def registered_types() -> list[str]:
    return sorted(_REGISTRY)


def handler_specs() -> list[HandlerSpec]:
    return [_REGISTRY[name] for name in registered_types()]


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
    """Sleep in one go and say nothing: past the lease, cleanup requeues the job."""
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


@register("demo.timeout", example_payload={"sleep_seconds": 45})
def demo_timeout(context: JobContext) -> dict[str, Any]:
    """Sleeps past its lease without renewing, so lease cleanup requeues it."""
    return _sleeping_demo(
        context,
        default=context.lease_seconds + 15,
        started="Sleeping without renewing the lease",
        sleep=_sleep_without_renewing,
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
