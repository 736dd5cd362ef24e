"""One trace from a request through the queue to every attempt, across processes: a Django
view enqueues inside its own server span (this process, the SDK's in-memory exporter), a
real ``run_job_workers`` process on PostgreSQL runs the jobs and exports its spans with the
SDK's OTLP/HTTP exporter (config/telemetry.py, as in production) to a receiver this test
starts (``harness.otlp_receiver``)."""

from __future__ import annotations

import os

import pytest
from opentelemetry.trace import SpanKind

from harness import otlp_receiver
from jobs.models import Job, JobEvent
from tests.helpers import WorkerProcess

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.urls("tests.processes.tracing_urls"),
]

CONSUMER, ERROR, UNSET = 5, 2, 0  # OTLP's enums: span kind, status code


def run_worker(tmp_path, endpoint: str) -> str:
    """Drain the queue with a real worker process exporting to ``endpoint``; its log."""
    worker = WorkerProcess(
        tmp_path / "worker.log",
        "--burst",
        JOB_TRACING="true",
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
        JOB_WORKER_BACKOFF_BASE_SECONDS="0",
        JOB_HANDLER_MODULES="tests.example_tasks",
    )
    assert worker.wait(timeout=60) == 0, worker.log()
    return worker.log()


def what_happened(job_id: str, received, log: str) -> str:
    """For a failure's message: the job's events, the spans received and the worker's log
    lines about the job or the export (a CI run once received one span of two attempts)."""
    events = list(
        JobEvent.objects.filter(job_id=job_id).values_list(
            "type", "attempt", "worker_id", "message"
        )
    )
    spans = [(s.name, s.attributes.get("messaging.message.id"), s.status_code) for s in received]
    lines = [line for line in log.splitlines() if job_id in line or "xport" in line]
    return f"events={events}\nspans={spans}\nlog:\n" + "\n".join(lines[-40:])


def hex_ids(span) -> tuple[str, str]:
    return f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}"


def test_a_request_its_jobs_and_every_attempt_share_one_trace(client, spans, tmp_path):
    caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    answer = client.get(
        "/enqueue/handler/", HTTP_TRACEPARENT=caller, HTTP_X_REQUEST_ID="req-77"
    ).json()
    flaky_id, task_id = answer["ids"]
    # The request's span continues the caller's trace; each enqueue is a producer span in it.
    assert answer["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    producers = {
        span.attributes["messaging.message.id"]: span
        for span in spans.get_finished_spans()
        if span.kind == SpanKind.PRODUCER
    }
    assert set(producers) == {flaky_id, task_id}
    for producer in producers.values():
        assert f"{producer.parent.span_id:016x}" == answer["span_id"]
    assert Job.objects.get(pk=flaky_id).metadata["request_id"] == "req-77"

    with otlp_receiver() as receiver:
        log = run_worker(tmp_path, receiver.endpoint)
        received = receiver.spans

    consumers = [span for span in received if span.kind == CONSUMER]
    assert {span.service_name for span in received} == {"job-queue-worker"}
    by_job = {
        pk: sorted(
            (s for s in consumers if s.attributes["messaging.message.id"] == pk),
            key=lambda s: s.attributes["job_queue.job.attempt"],
        )
        for pk in (flaky_id, task_id)
    }
    for pk, attempts in by_job.items():
        trace_id, span_id = hex_ids(producers[pk])
        assert trace_id == answer["trace_id"]
        assert [(s.trace_id, s.parent_span_id) for s in attempts] == [(trace_id, span_id)] * len(
            attempts
        )
    # The flaky handler: one span per attempt, the first failed and retried, the second fine.
    assert len(by_job[flaky_id]) == 2, what_happened(flaky_id, received, log)
    first, second = by_job[flaky_id]
    assert first.name == second.name == "process default"
    assert (first.status_code, first.status_message) == (
        ERROR,
        "Flaky failure on attempt 1 (succeeds at 2)",
    )
    assert [name for name, _ in first.events] == ["exception", "job_queue.retry_scheduled"]
    assert first.events[0][1]["exception.type"] == "RuntimeError"
    assert first.attributes["job_queue.attempt.outcome"] == "retry_scheduled"
    assert (second.status_code, second.events) == (UNSET, [])
    assert second.attributes["job_queue.job.attempt"] == 2
    assert first.attributes["job_queue.worker.id"].split(":")[1] != str(os.getpid())
    # The task: one attempt, succeeded.
    (task,) = by_job[task_id]
    assert task.attributes["job_queue.job.type"] == "tests.example_tasks.add"
    assert (task.status_code, task.attributes["job_queue.attempt.outcome"]) == (UNSET, "succeeded")
    assert Job.objects.get(pk=flaky_id).status == Job.Status.SUCCEEDED


def test_a_bulk_enqueue_links_each_job_and_each_attempt_follows_its_own(client, spans, tmp_path):
    answer = client.get("/enqueue/bulk/").json()
    finished = spans.get_finished_spans()
    creates = {
        s.attributes["messaging.message.id"]: s for s in finished if s.name == "create default"
    }
    (send,) = [s for s in finished if s.name == "send default"]
    assert send.kind == SpanKind.CLIENT
    assert [link.context for link in send.links] == [creates[pk].context for pk in answer["ids"]]

    with otlp_receiver() as receiver:
        run_worker(tmp_path, receiver.endpoint)
        received = receiver.spans

    consumers = {s.attributes["messaging.message.id"]: s for s in received if s.kind == CONSUMER}
    assert set(consumers) == set(answer["ids"])
    for pk, consumer in consumers.items():
        assert (consumer.trace_id, consumer.parent_span_id) == hex_ids(creates[pk])
        assert consumer.trace_id == answer["trace_id"]
