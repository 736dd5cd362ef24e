"""OpenTelemetry spans around enqueue and every attempt (jobs.tracing), read from the SDK's
in-memory exporter, with real worker threads in this process. The same trace across a
real worker process is processes/test_tracing.py's."""

import threading
import time

import pytest
from opentelemetry import baggage, context, propagate, trace
from opentelemetry.trace import SpanKind, StatusCode

from harness import wait_until
from jobs import services
from jobs.models import Job
from jobs.worker import WorkerRunner
from tests import example_tasks
from tests.factories import fresh, queued_job
from tests.helpers import run_workers_in_burst, worker_config

pytestmark = pytest.mark.django_db(transaction=True)

tracer = trace.get_tracer("jobs.tests")


def only(spans, name):
    (span,) = [span for span in spans.get_finished_spans() if span.name == name]
    return span


def consumers(spans):
    """The consumer spans, by attempt."""
    found = [span for span in spans.get_finished_spans() if span.kind == SpanKind.CONSUMER]
    return sorted(found, key=lambda span: span.attributes["job_queue.job.attempt"])


def traceparent(span) -> str:
    ids = span.context
    return f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{ids.trace_flags:02x}"


def event_names(span) -> list[str]:
    return [event.name for event in span.events]


@pytest.fixture
def no_backoff(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0


def test_a_job_enqueued_in_a_request_runs_in_a_consumer_span_of_the_same_trace(
    spans, register_handler
):
    seen = {}

    def handler(job_context):
        # What instrumented clients see: the current span, the headers an HTTP client
        # would send, the producer's baggage; and a span of their own nests under it.
        seen["current"] = trace.get_current_span().get_span_context()
        seen["headers"] = {}
        propagate.inject(seen["headers"])
        seen["tenant"] = baggage.get_baggage("tenant")
        with tracer.start_as_current_span("SELECT 1", kind=SpanKind.CLIENT):
            pass
        return "ok"

    register_handler("test.traced", handler)
    with tracer.start_as_current_span("POST /orders/", kind=SpanKind.SERVER) as server:
        token = context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            job, _ = services.create_job(type="test.traced", metadata={"request_id": "r-1"})
        finally:
            context.detach(token)
    runner = run_workers_in_burst()

    send, process, query = only(spans, "send default"), *consumers(spans), only(spans, "SELECT 1")
    assert send.kind == SpanKind.PRODUCER
    assert send.parent.span_id == server.get_span_context().span_id
    assert send.attributes == {
        "messaging.system": "job_queue",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": "default",
        "messaging.message.id": str(job.id),
        "job_queue.job.type": "test.traced",
    }
    assert fresh(job).metadata == {
        "request_id": "r-1",
        "traceparent": traceparent(send),
        "baggage": "tenant=acme",
    }
    assert process.name == "process default"
    assert process.context.trace_id == server.get_span_context().trace_id
    assert process.parent.span_id == send.context.span_id
    assert process.attributes == {
        "messaging.system": "job_queue",
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.destination.name": "default",
        "messaging.message.id": str(job.id),
        "job_queue.job.type": "test.traced",
        "job_queue.job.attempt": 1,
        "job_queue.job.max_attempts": 3,
        "job_queue.worker.id": runner.threads[0].worker_id,
        "job_queue.attempt.outcome": "succeeded",
    }
    assert process.status.status_code == StatusCode.UNSET
    assert seen["current"] == process.context
    assert seen["headers"]["traceparent"] == traceparent(process)
    assert seen["tenant"] == "acme"
    assert query.parent.span_id == process.context.span_id


def test_a_failing_then_succeeding_job_has_one_consumer_span_per_attempt(spans, no_backoff):
    job = queued_job("demo.flaky", payload={"fail_until_attempt": 2})
    run_workers_in_burst()

    send = only(spans, "send default")
    first, second = consumers(spans)
    assert [first.parent.span_id, second.parent.span_id] == [send.context.span_id] * 2
    assert first.status.status_code == StatusCode.ERROR
    assert first.status.description == "Flaky failure on attempt 1 (succeeds at 2)"
    assert first.attributes["job_queue.attempt.outcome"] == "retry_scheduled"
    assert event_names(first) == ["exception", "job_queue.retry_scheduled"]
    exception = first.events[0].attributes
    assert exception["exception.type"] == "RuntimeError"
    assert exception["exception.message"] == "Flaky failure on attempt 1 (succeeds at 2)"
    assert "demo_flaky" in exception["exception.stacktrace"]
    retry = first.events[1].attributes
    assert retry["job_queue.retry.delay_seconds"] == 0
    assert second.status.status_code == StatusCode.UNSET
    assert second.attributes["job_queue.job.attempt"] == 2
    assert second.attributes["job_queue.attempt.outcome"] == "succeeded"
    assert event_names(second) == []
    assert fresh(job).status == Job.Status.SUCCEEDED


def test_an_attempt_failing_for_good_is_an_error_without_a_retry(spans):
    queued_job("demo.fail", payload={"error": "broken"}, max_attempts=1)
    queued_job("no.such.type", max_attempts=1)
    run_workers_in_burst()

    failed, unknown = sorted(consumers(spans), key=lambda s: s.attributes["job_queue.job.type"])
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.status.description == "broken"
    assert failed.attributes["job_queue.attempt.outcome"] == "failed"
    assert event_names(failed) == ["exception"]
    assert unknown.status.description.startswith("No handler or task is registered")
    assert unknown.events[0].attributes["exception.type"] == "LookupError"


def test_a_timed_out_attempt_ends_its_span_at_the_timeout(spans, register_handler):
    returned = threading.Event()
    register_handler("test.sleepy", lambda job_context: time.sleep(1.5) or returned.set())
    job = queued_job("test.sleepy", timeout_seconds=1, max_attempts=2)
    run_workers_in_burst(lease_seconds=3)
    wait_until(returned.is_set, 10, "the abandoned handler to return")

    (span,) = consumers(spans)
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == "Timed out after 1 s"
    assert span.attributes["job_queue.attempt.outcome"] == "timeout"
    assert event_names(span) == ["job_queue.timeout", "job_queue.retry_scheduled"]
    # Ended by the maintenance thread at the deadline, not when the handler returned.
    assert (span.end_time - span.start_time) / 1e9 < 1.45
    assert fresh(job).status == Job.Status.QUEUED


def test_a_cancelled_attempt_records_the_cancellation(spans, register_handler):
    def cooperative(job_context):
        while True:
            job_context.check()
            time.sleep(0.05)

    register_handler("test.cooperative", cooperative)
    job = queued_job("test.cooperative")
    runner = WorkerRunner(worker_config(lease_seconds=3))
    main = threading.Thread(target=runner.run)
    main.start()
    try:
        wait_until(lambda: fresh(job).status == Job.Status.RUNNING, 10, "claim")
        services.cancel_job(job_id=job.pk)
        wait_until(lambda: fresh(job).status == Job.Status.CANCELLED, 10, "cancelled")
    finally:
        runner.stop()
        main.join(timeout=60)

    (span,) = consumers(spans)
    assert span.attributes["job_queue.attempt.outcome"] == "cancelled"
    assert event_names(span) == ["exception", "job_queue.cancelled"]
    assert span.events[0].attributes["exception.type"] == "jobs.handlers.JobCancelled"
    assert span.status.status_code == StatusCode.ERROR


def test_a_task_enqueued_with_metadata_carries_it_beside_the_trace_context(spans):
    with tracer.start_as_current_span("GET /", kind=SpanKind.SERVER):
        result = example_tasks.add.using(metadata={"request_id": "r-2"}).enqueue(2, 3)
    run_workers_in_burst()

    send = only(spans, "send default")
    (process,) = consumers(spans)
    assert Job.objects.get(pk=result.id).metadata == {
        "request_id": "r-2",
        "traceparent": traceparent(send),
    }
    assert send.attributes["job_queue.job.type"] == "tests.example_tasks.add"
    assert process.parent.span_id == send.context.span_id
    assert process.attributes["job_queue.attempt.outcome"] == "succeeded"


def test_an_async_task_runs_with_the_consumer_span_current_in_its_coroutine(spans):
    example_tasks.async_traced.enqueue()
    run_workers_in_burst()

    (process,) = consumers(spans)
    coroutine, call = only(spans, "coroutine call"), only(spans, "sync_to_async call")
    assert coroutine.parent.span_id == process.context.span_id
    assert call.parent.span_id == coroutine.context.span_id
    assert process.attributes["job_queue.attempt.outcome"] == "succeeded"


def test_bulk_enqueue_gives_each_job_a_create_span_the_send_span_links(spans):
    with tracer.start_as_current_span("POST /bulk/", kind=SpanKind.SERVER) as server:
        results = example_tasks.add.enqueue_many([((n, n), {}) for n in range(3)])
    run_workers_in_burst()

    ids = [result.id for result in results]
    finished = spans.get_finished_spans()
    creates = {
        span.attributes["messaging.message.id"]: span
        for span in finished
        if span.name == "create default"
    }
    send = only(spans, "send default")
    assert set(creates) == set(ids)
    assert send.kind == SpanKind.CLIENT
    assert send.attributes["messaging.batch.message_count"] == 3
    assert [(link.context, dict(link.attributes)) for link in send.links] == [
        (creates[pk].context, {"messaging.message.id": pk}) for pk in ids
    ]
    for span in [send, *creates.values()]:
        assert span.parent.span_id == server.get_span_context().span_id
    for pk in ids:
        assert creates[pk].kind == SpanKind.PRODUCER
        assert Job.objects.get(pk=pk).metadata == {"traceparent": traceparent(creates[pk])}
    for process in consumers(spans):
        create = creates[process.attributes["messaging.message.id"]]
        assert process.parent.span_id == create.context.span_id
        assert process.context.trace_id == server.get_span_context().trace_id


def test_payload_metadata_and_result_are_recorded_only_when_asked(spans, settings):
    queued_job("demo.success", payload={"sleep_seconds": 0}, metadata={"request_id": "r-3"})
    run_workers_in_burst()
    recorded = [
        name
        for span in spans.get_finished_spans()
        for name in span.attributes
        if name.startswith(
            ("job_queue.job.payload", "job_queue.job.metadata", "job_queue.job.result")
        )
    ]
    assert recorded == []

    spans.clear()
    settings.JOB_TRACING_RECORD = ["payload", "metadata", "result"]
    queued_job("demo.success", payload={"sleep_seconds": 0}, metadata={"request_id": "r-3"})
    run_workers_in_burst()
    send, (process,) = only(spans, "send default"), consumers(spans)
    for span in (send, process):
        assert span.attributes["job_queue.job.payload"] == '{"sleep_seconds":0}'
        assert span.attributes["job_queue.job.metadata.request_id"] == "r-3"
    # The trace context is the span's own relation, not an attribute.
    assert "job_queue.job.metadata.traceparent" not in process.attributes
    assert process.attributes["job_queue.job.result"] == '{"ok":true,"slept_seconds":0.0}'


def test_tracing_off_writes_no_span_and_no_trace_context(spans, settings):
    settings.JOB_TRACING = False
    with tracer.start_as_current_span("GET /") as server:
        job = queued_job("demo.success", payload={"sleep_seconds": 0})
    run_workers_in_burst()
    assert [span.context for span in spans.get_finished_spans()] == [server.get_span_context()]
    assert fresh(job).metadata == {}


def test_metadata_of_another_shape_starts_a_trace_of_its_own(spans):
    job = queued_job("demo.success", payload={"sleep_seconds": 0})
    Job.objects.filter(pk=job.pk).update(metadata=["not", "an", "object"])  # a raw write
    run_workers_in_burst()

    (process,) = consumers(spans)
    assert process.parent is None
    assert process.attributes["job_queue.attempt.outcome"] == "succeeded"
    assert fresh(job).status == Job.Status.SUCCEEDED
