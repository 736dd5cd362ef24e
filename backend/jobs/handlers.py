"""Job handlers: a registry from job type to function, the context a handler gets, and
the demo handlers.

A handler is ``fn(context) -> result``. Its return value becomes the job's ``result`` and
must be JSON-serialisable; raising an exception fails the attempt (retried with backoff
while attempts remain). Long handlers call ``context.renew()`` to keep their lease and
``context.progress()`` to add timeline events.
"""

from __future__ import annotations

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
    type: str, *, description: str, example_payload: dict[str, Any] | None = None
) -> Callable[[Handler], Handler]:
    """Decorator registering ``fn`` as the handler of ``type``."""

    def decorator(fn: Handler) -> Handler:
        if type in _REGISTRY:
            raise ValueError(f"a handler for {type!r} is already registered")
        _REGISTRY[type] = HandlerSpec(type, fn, description, example_payload or {})
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


@register(
    "demo.success",
    description="Sleeps briefly, renews its lease, reports progress, then succeeds.",
    example_payload={"sleep_seconds": 1},
)
def demo_success(context: JobContext) -> dict[str, Any]:
    seconds = _number(context.payload, "sleep_seconds", 1)
    context.progress("Started", {"sleep_seconds": seconds})
    time.sleep(seconds)
    context.renew()
    context.progress("Finished sleeping", {"slept_seconds": seconds})
    return {"ok": True, "slept_seconds": seconds}


@register(
    "demo.fail",
    description="Reports progress, then raises an intentional error (retried with backoff).",
    example_payload={"error": "Intentional demo failure"},
)
def demo_fail(context: JobContext) -> None:
    error = context.payload.get("error", "Intentional demo failure")
    context.progress("About to fail", {"error": str(error)})
    raise RuntimeError(str(error))


@register(
    "demo.slow",
    description="Works for longer, renewing its lease and reporting progress as it goes.",
    example_payload={"sleep_seconds": 10},
)
def demo_slow(context: JobContext) -> dict[str, Any]:
    seconds = _number(context.payload, "sleep_seconds", 10)
    context.progress("Started slow work", {"sleep_seconds": seconds})
    _sleep_renewing(context, seconds)
    return {"ok": True, "slept_seconds": seconds}


@register(
    "demo.timeout",
    description="Sleeps past its lease without renewing, so lease cleanup requeues it.",
    example_payload={"sleep_seconds": 45},
)
def demo_timeout(context: JobContext) -> dict[str, Any]:
    default = context.lease_seconds + 15
    seconds = _number(context.payload, "sleep_seconds", default)
    context.progress("Sleeping without renewing the lease", {"sleep_seconds": seconds})
    time.sleep(seconds)
    return {"ok": True, "slept_seconds": seconds}


@register(
    "demo.flaky",
    description="Fails until the configured attempt, then succeeds.",
    example_payload={"fail_until_attempt": 2},
)
def demo_flaky(context: JobContext) -> dict[str, Any]:
    fail_until = int(_number(context.payload, "fail_until_attempt", 2))
    if context.attempt < fail_until:
        context.progress("Failing on purpose", {"attempt": context.attempt})
        raise RuntimeError(f"Flaky failure on attempt {context.attempt} (succeeds at {fail_until})")
    context.progress("Succeeding", {"attempt": context.attempt})
    return {"ok": True, "succeeded_on_attempt": context.attempt}
