"""Job handlers: the one place to import what writing one takes.

    from jobs.handlers import JobContext, register

    @register("reports.build", description="Builds a report", timeout_seconds=600)
    def build(context: JobContext) -> dict[str, str]:
        context.progress("Started", {"report": context.payload["name"]})
        ...
        return {"url": url}

A handler is ``fn(context) -> result``: its return value becomes the job's ``result``; an
exception fails the attempt (retried with backoff while attempts remain); a
``JobInterrupted`` (``JobCancelled``, ``JobTimedOut``, ``LeaseLost``) from the context says
the attempt must stop. See ``jobs.worker.context``.

The registry lives in ``jobs.registry`` and the context in ``jobs.worker.context``; this
module re-exports both. It registers nothing itself: the demo handlers are the optional
app ``jobs.demo``.
"""

from __future__ import annotations

from .registry import (
    Handler,
    HandlerSpec,
    RetryPolicy,
    add,
    get_handler,
    handler_specs,
    register,
    registered_types,
)
from .worker.context import (
    AttemptState,
    JobCancelled,
    JobContext,
    JobInterrupted,
    JobSnoozed,
    JobTimedOut,
    LeaseLost,
)

__all__ = [
    "AttemptState",
    "Handler",
    "HandlerSpec",
    "JobCancelled",
    "JobContext",
    "JobInterrupted",
    "JobSnoozed",
    "JobTimedOut",
    "LeaseLost",
    "RetryPolicy",
    "add",
    "get_handler",
    "handler_specs",
    "register",
    "registered_types",
]
