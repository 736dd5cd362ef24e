"""``django.tasks`` tasks for the backend's tests, on this project's default backend
(``jobs.backends.JobQueueBackend``). Imported by the tests that use them; worker
processes load them with ``JOB_HANDLER_MODULES=tests.example_tasks``."""

from __future__ import annotations

from typing import Any

from django.tasks import task

# Keys the test process adds to make ``fail_while_flagged`` fail (in-process workers only).
FLAGS: set[str] = set()


@task
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@task(takes_context=True, max_attempts=3)
def flaky(context: Any, succeed_on: int) -> dict[str, int]:
    """Fails until attempt ``succeed_on``, reporting progress on each attempt."""
    context.progress("Attempt started", {"attempt": context.attempt})
    if context.attempt < succeed_on:
        raise RuntimeError(f"failing on attempt {context.attempt}")
    return {"succeeded_on": context.attempt}


@task(max_attempts=2)
def always_fails(message: str) -> None:
    raise ValueError(message)


@task(max_attempts=1)
def fail_while_flagged(flag: str) -> str:
    if flag in FLAGS:
        raise RuntimeError(f"{flag} is flagged")
    return flag


@task
async def async_add(a: int, b: int) -> int:
    return a + b


@task(takes_context=True)
async def async_progress(context: Any, note: str) -> int:
    await context.aprogress(note)
    return context.attempt


@task(priority=-100, queue_name="tasks-test", timeout_seconds=30, max_attempts=7)
def configured() -> None:
    """A task with every option set by its decorator."""


@task(metadata={"team": "billing"})
def tagged() -> None:
    """A task whose jobs carry metadata of its own."""


@task
async def async_traced() -> str:
    """Opens a span in the coroutine and one in a sync_to_async call it awaits, as
    instrumented clients would (the tracing tests read their parents)."""
    from asgiref.sync import sync_to_async
    from opentelemetry import trace

    tracer = trace.get_tracer("jobs.tests")

    def query() -> None:
        with tracer.start_as_current_span("sync_to_async call"):
            pass

    with tracer.start_as_current_span("coroutine call"):
        await sync_to_async(query)()
    return "traced"


@task(takes_context=True, heartbeat=False, max_attempts=1)
def proves_liveness(context: Any, steps: int) -> int:
    """Opts out of the heartbeat and renews its own lease at each step."""
    for _ in range(steps):
        context.job.renew()
    return steps


@task(takes_context=True)
def plus_parent(context: Any, n: int) -> int:
    """Its one parent's return value plus ``n``: a chain step."""
    (parent,) = context.parent_results
    return int(parent) + n


@task(takes_context=True)
def collect(context: Any) -> dict[str, int]:
    """How many parents it has and the sum of their return values: a group's callback."""
    results = context.parent_results
    return {"count": len(results), "sum": sum(result or 0 for result in results)}


@task
def nap(seconds: float, value: int = 1) -> int:
    """Sleeps ``seconds``, then returns ``value``."""
    import time

    time.sleep(seconds)
    return value


@task(max_attempts=1)
def fail_while_exists(path: str) -> int:
    """Fails for good while ``path`` exists (a flag worker processes can see), else 5."""
    import os

    if os.path.exists(path):
        raise RuntimeError(f"{path} exists")
    return 5
