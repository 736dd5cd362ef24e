"""The demo job types (``demo.*``): what the dashboard's create form offers out of the box.

Registered when the ``jobs.demo`` app is ready; a project that installs only ``jobs`` has
none of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from jobs.handlers import JobContext, register


def _number(payload: dict[str, Any], key: str, default: float) -> float:
    value = payload.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"payload.{key} must be a non-negative number")
    return float(value)


# The sleeping demos differ only in how they treat their lease while they sleep.
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
    """Sleep in one go without checking in (no renewal, no progress, no check)."""
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


# The spec's demo.timeout: it opts out of the heartbeat, so its lease runs out while it
# sleeps, as a dead worker's would, and expired-lease cleanup takes the job back.
@register("demo.timeout", example_payload={"sleep_seconds": 45}, heartbeat=False)
def demo_timeout(context: JobContext) -> dict[str, Any]:
    """Sleeps without lease renewal to demonstrate expired lease cleanup: past its lease,
    cleanup requeues the job (timeout_requeued), or fails it on its last attempt, and the
    late completion changes nothing."""
    return _sleeping_demo(
        context,
        default=45,
        started="Sleeping without renewing the lease",
        sleep=_sleep_without_renewing,
    )


# Not in the spec: the per-job timeout, which demo.timeout showed while the heartbeat kept
# every lease alive. A handler that hangs (a call without a timeout of its own) keeps its
# lease through the heartbeat; its attempt's time limit ends it.
@register("demo.hang", example_payload={"sleep_seconds": 45}, timeout_seconds=10)
def demo_hang(context: JobContext) -> dict[str, Any]:
    """Hangs past its timeout (10 s unless the job sets timeout_seconds) without checking
    in, so the worker records the attempt as timed out and retries it, discarding its
    late result."""
    return _sleeping_demo(
        context, default=45, started="Hanging past the timeout", sleep=_sleep_without_renewing
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
