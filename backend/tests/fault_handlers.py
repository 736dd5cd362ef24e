"""Handlers for the fault tests' worker processes, loaded with
``JOB_HANDLER_MODULES=tests.fault_handlers``; never imported by the test process.

Besides the handlers, importing this module connects one ``attempt_started`` receiver that
stands for a bug in the worker itself on jobs of type ``fault.worker_bug`` (see there).
"""

import sys
import time
from pathlib import Path
from typing import Any

from jobs.handlers import JobContext, register
from jobs.models import JobEvent
from jobs.signals import attempt_started


@register("fault.noop", description="Does nothing and succeeds (queue overhead only).")
def noop(context: JobContext) -> dict[str, int]:
    return {"attempt": context.attempt}


@register("fault.sleep", description="Sleeps payload.seconds in one go, never checking in.")
def sleep(context: JobContext) -> dict[str, float]:
    seconds = float(context.payload["seconds"])
    time.sleep(seconds)
    return {"slept": seconds}


@register(
    "fault.cooperative",
    description="Checks in every 50 ms for payload.seconds, so a cancel stops it at once.",
)
def cooperative(context: JobContext) -> dict[str, bool]:
    deadline = time.monotonic() + float(context.payload["seconds"])
    while time.monotonic() < deadline:
        context.check()
        time.sleep(0.05)
    return {"ran_out": True}


@register("fault.exit", description="Calls sys.exit() as a careless handler might.")
def exit_the_process(context: JobContext) -> None:
    sys.exit()


@register(
    "fault.rendezvous",
    description="Reports its arrival, then waits (10 s at most) until payload.size jobs of "
    "its type have arrived; returns whether they met while it was still running.",
)
def rendezvous(context: JobContext) -> dict[str, bool]:
    context.progress("arrived")
    arrived = JobEvent.objects.filter(
        job__type=context.type, type=JobEvent.Type.PROGRESS, message="arrived"
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if arrived.count() >= int(context.payload["size"]):
            return {"met": True}
        time.sleep(0.02)
    return {"met": False}


def _wait_for(marker: Path) -> None:
    deadline = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


@register(
    "fault.pause_between_writes",
    description="Reports progress, then before each of its next two writes (a progress "
    "event, a lease renewal) waits (20 s at most) for a file: payload.marker + '.1', '.2'.",
)
def pause_between_writes(context: JobContext) -> dict[str, bool]:
    marker = context.payload["marker"]
    context.progress("paused")
    _wait_for(Path(f"{marker}.1"))
    context.progress("resumed")
    _wait_for(Path(f"{marker}.2"))
    context.renew()
    return {"ok": True}


class InjectedWorkerBug(BaseException):
    """Stands for a bug in the worker's own code: it escapes the attempt boundary and
    kills the thread. (A receiver's ``Exception`` would be caught by ``send_robust``.)"""


def break_the_worker(sender: Any, job: Any, worker_id: str, **kwargs: Any) -> None:
    if job.type == "fault.worker_bug":
        raise InjectedWorkerBug(f"injected worker bug on job {job.id}")


attempt_started.connect(break_the_worker, dispatch_uid="fault_handlers.break_the_worker")


@register(
    "fault.worker_bug",
    description="Never runs: the attempt_started receiver above kills its thread first.",
)
def worker_bug(context: JobContext) -> None:
    raise AssertionError("the injected worker bug should have killed the thread first")
