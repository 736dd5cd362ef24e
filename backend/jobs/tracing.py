"""OpenTelemetry spans around the queue, through the official API (``opentelemetry-api``,
the ``otel`` extra), carried from producer to consumer in the job's own metadata.

* **Producer** (``sending``, around ``services.create_jobs``): one job is a ``send`` span
  (kind PRODUCER) whose context is the job's creation context; a bulk create makes one
  ``create`` span (PRODUCER) per job, each the creation context of its job, and one
  ``send`` span (CLIENT) linking every one of them, as the messaging semantic conventions
  ask for batches. The context is injected into each job's metadata by the global
  propagator (W3C ``traceparent``, ``tracestate`` and ``baggage`` by default) before the
  row is written, in the same statement.
* **Consumer** (``attempt``, around the handler in the worker thread): one ``process``
  span (kind CONSUMER) per attempt, whose parent is the context extracted from the
  metadata, current in the thread while the handler runs (so the spans of its database
  and HTTP calls nest under it; ``async def`` tasks see it through asgiref's context
  copy). The span ends when the attempt's outcome is recorded (``attempt_finished``,
  also from the maintenance thread for a timeout), with the outcome's status and events
  (``job_queue.retry_scheduled``, ``job_queue.timeout``, ``job_queue.cancelled``).

Attributes follow the messaging semantic conventions (``messaging.system``,
``messaging.destination.name`` = queue, ``messaging.message.id`` = job id,
``messaging.operation.type``/``.name``), plus ``job_queue.job.type``,
``job_queue.job.attempt`` and ``job_queue.worker.id``. ``JOB_TRACING_RECORD`` adds the
payload, the result or the metadata; none of them by default.

Off (``JOB_TRACING`` false, the default) nothing of OpenTelemetry is imported and each
call site costs a global lookup. The spans go wherever the process's tracer provider
sends them: the app configures no SDK (a project does, or ``opentelemetry-instrument``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from django.core.signals import setting_changed

from .conf import app_settings
from .limits import METADATA_VALUE_MAX_LENGTH
from .signals import attempt_finished

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

    from .drivers import JobRow, NewJob

# messaging.system: this queue is no system the conventions list, so its own name.
SYSTEM = "job_queue"
INSTRUMENTATION_NAME = "jobs"
# What JOB_TRACING_RECORD may add to the spans (jobs.E009 refuses anything else).
RECORDABLE = ("payload", "result", "metadata")
# Span events of the consumer span.
RETRY_SCHEDULED = "job_queue.retry_scheduled"
TIMEOUT = "job_queue.timeout"
CANCELLED = "job_queue.cancelled"
LEASE_LOST = "job_queue.lease_lost"

_OFF = nullcontext()


class _State:
    """Tracing as the settings say now: the tracer and what to record, or off."""

    def __init__(self, tracer: Tracer | None, record: frozenset[str]) -> None:
        self.tracer = tracer
        self.record = record


_state: _State | None = None
_state_lock = threading.Lock()
# The consumer spans of the attempts running in this process, by (job id, attempt): the
# worker thread starts each, the attempt_finished receiver ends it.
_open: dict[tuple[Any, int], Span] = {}
_open_lock = threading.Lock()


def _current() -> _State:
    state = _state
    return state if state is not None else _configure()


def _configure() -> _State:
    """Read the settings once (again after ``override_settings``); import OpenTelemetry
    and listen for attempt endings only when tracing is on."""
    global _state
    with _state_lock:
        if _state is not None:
            return _state
        if app_settings.JOB_TRACING is True:
            from opentelemetry import trace

            tracer: Tracer | None = trace.get_tracer(INSTRUMENTATION_NAME)
            attempt_finished.connect(_on_attempt_finished, dispatch_uid=__name__)
        else:
            tracer = None
            attempt_finished.disconnect(dispatch_uid=__name__)
        _state = _State(tracer, frozenset(app_settings.JOB_TRACING_RECORD))
        return _state


def _forget(*, setting: str, **kwargs: Any) -> None:
    global _state
    if setting in ("JOB_TRACING", "JOB_TRACING_RECORD"):
        with _state_lock:
            _state = None


setting_changed.connect(_forget, dispatch_uid="jobs.tracing.forget")


def enabled() -> bool:
    """Whether the settings turn tracing on (``JOB_TRACING``)."""
    return _current().tracer is not None


# --- Producer ------------------------------------------------------------------------------


def sending(jobs: list[NewJob]) -> AbstractContextManager[list[NewJob]]:
    """Around writing ``jobs``: the producer span(s), and the jobs with the creation
    context in their metadata. Off, ``jobs`` as they are."""
    state = _current()
    if state.tracer is None:
        return nullcontext(jobs)
    return _sending(state.tracer, state.record, jobs)


@contextmanager
def _sending(tracer: Tracer, record: frozenset[str], jobs: list[NewJob]) -> Iterator[list[NewJob]]:
    from opentelemetry import trace
    from opentelemetry.trace import Link, SpanKind

    if len(jobs) == 1:
        (job,) = jobs
        attributes = _job_attributes(job, "send", record)
        with tracer.start_as_current_span(
            f"send {job.queue}", kind=SpanKind.PRODUCER, attributes=attributes
        ):
            yield [_with_context(job, None)]
        return
    # A batch: each job gets a creation context of its own (a "create" span), and the
    # "send" span, the one covering the write, links to every one of them.
    traced, links = [], []
    for job in jobs:
        span = tracer.start_span(
            f"create {job.queue}",
            kind=SpanKind.PRODUCER,
            attributes=_job_attributes(job, "create", record),
        )
        traced.append(_with_context(job, trace.set_span_in_context(span)))
        span.end()
        links.append(Link(span.get_span_context(), {"messaging.message.id": str(job.id)}))
    queues = {job.queue for job in jobs}
    send: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.batch.message_count": len(jobs),
    }
    name = "send"
    if len(queues) == 1:  # the conventions name a send by its destination, if one
        (queue,) = queues
        send["messaging.destination.name"] = queue
        name = f"send {queue}"
    with tracer.start_as_current_span(name, kind=SpanKind.CLIENT, links=links, attributes=send):
        yield traced


def _with_context(job: NewJob, context: Any) -> NewJob:
    """``job`` whose metadata carries ``context`` (the current one when ``None``); a value
    longer than metadata allows is left out rather than refused."""
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    if not carrier:
        return job  # no valid span (no SDK configured): nothing to carry
    carrier = {k: v for k, v in carrier.items() if len(v) <= METADATA_VALUE_MAX_LENGTH}
    return replace(job, metadata={**job.metadata, **carrier})


# --- Consumer ------------------------------------------------------------------------------


def attempt(job: JobRow, worker_id: str) -> AbstractContextManager[object]:
    """Around running ``job``'s handler in the worker thread: its consumer span, current
    in the thread. The span ends when the attempt's outcome is recorded
    (``attempt_finished``). Off, nothing."""
    state = _current()
    if state.tracer is None:
        return _OFF
    return _attempt(state.tracer, state.record, job, worker_id)


@contextmanager
def _attempt(tracer: Tracer, record: frozenset[str], job: JobRow, worker_id: str) -> Iterator[None]:
    from opentelemetry import context, propagate, trace
    from opentelemetry.trace import SpanKind

    # From the job's metadata only, never the thread's context: a job without a trace
    # context starts a trace of its own, and so does one whose metadata a raw write left
    # in another shape (the column does not enforce it).
    metadata: object = job.metadata
    parent = propagate.extract(metadata if isinstance(metadata, dict) else {})
    attributes = _job_attributes(job, "process", record)
    attributes["job_queue.job.attempt"] = job.attempts
    attributes["job_queue.job.max_attempts"] = job.max_attempts
    attributes["job_queue.worker.id"] = worker_id
    span = tracer.start_span(
        f"process {job.queue}", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    )
    with _open_lock:
        _open[job.id, job.attempts] = span
    # The extracted context stays current too, so the producer's baggage reaches the handler.
    token = context.attach(trace.set_span_in_context(span, parent))
    try:
        yield
    except BaseException as exc:
        # The attempt's outcome (status, events) is set when it is recorded; a timed-out
        # attempt's span ended already, when the maintenance thread recorded the timeout.
        if span.is_recording():
            span.record_exception(exc, escaped=True)
        raise
    finally:
        context.detach(token)


def _on_attempt_finished(
    sender: object,
    *,
    job: JobRow,
    outcome: str,
    row: JobRow | None,
    error: str | None,
    **kwargs: Any,
) -> None:
    """End the attempt's consumer span with its outcome: the status (error unless it
    succeeded), the events, and the result if recorded."""
    from opentelemetry.trace import StatusCode

    with _open_lock:
        span = _open.pop((job.id, job.attempts), None)
    if span is None:
        return
    span.set_attribute("job_queue.attempt.outcome", outcome)
    if outcome == "timeout":
        span.add_event(TIMEOUT, {"job_queue.error": error or ""})
    if row is not None and row.status == "queued" and outcome != "snoozed":
        delay = (row.available_at - row.updated_at).total_seconds()
        span.add_event(
            RETRY_SCHEDULED,
            {
                "job_queue.retry.available_at": row.available_at.isoformat(),
                "job_queue.retry.delay_seconds": max(delay, 0.0),
            },
        )
    elif row is not None and row.status == "cancelled":
        span.add_event(CANCELLED)
    elif outcome in ("lease_lost", "stale"):
        span.add_event(LEASE_LOST)
        error = error or "The attempt was no longer this worker's; its outcome was not recorded"
    if outcome == "succeeded":
        if "result" in _current().record and row is not None:
            span.set_attribute("job_queue.job.result", _json(row.result))
    elif outcome != "snoozed":  # a snooze is the handler's choice, no error
        span.set_status(StatusCode.ERROR, error or outcome)
    span.end()


# --- Attributes ----------------------------------------------------------------------------


def _job_attributes(job: NewJob | JobRow, operation: str, record: frozenset[str]) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.destination.name": job.queue,
        "messaging.message.id": str(job.id),
        "job_queue.job.type": job.type,
    }
    if record:
        if "payload" in record:
            attributes["job_queue.job.payload"] = _json(job.payload)
        metadata: object = job.metadata
        if "metadata" in record and isinstance(metadata, dict):
            attributes.update(
                (f"job_queue.job.metadata.{key}", value)
                for key, value in metadata.items()
                if key not in _propagation_fields()
            )
    return attributes


def _propagation_fields() -> Sequence[str] | set[str]:
    from opentelemetry import propagate

    return propagate.get_global_textmap().fields


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)
