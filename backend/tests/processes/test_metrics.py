"""Prometheus metrics: the API's /metrics read from the database, each worker process's own
metrics fed by jobs.signals, both linted by promtool; and, end to end, a real Prometheus
scraping a real API and a real worker process."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from harness import (
    PROMETHEUS,
    free_port,
    metric_samples,
    prometheus_query,
    prometheus_server,
    promtool_check_metrics,
    serve_api,
    wait_until,
)
from jobs import metrics, signals
from tests.conftest import IN_CI
from tests.factories import queued_job, running_job, succeeded_job, user_with
from tests.helpers import WorkerProcess, production_child_env, worker_runner


def sample(samples, name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]


# --- /metrics: the queue, from the database ---------------------------------------------


@pytest.mark.django_db
def test_metrics_count_live_jobs_by_queue_and_type_and_finished_ones_by_status():
    now = timezone.now()
    queued_job(queue="mail", available_at=now - timedelta(seconds=90))
    queued_job(queue="mail", available_at=now + timedelta(hours=1))  # not due
    queued_job("demo.fail", queue="mail")
    running_job(lease_seconds=-5)  # its lease ran out 5 s ago
    running_job("demo.success")
    succeeded_job()
    response = APIClient().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = response.content
    promtool_check_metrics(text)
    got = metric_samples(text)
    assert sample(got, "jobqueue_jobs", status="queued", queue="mail", type="demo.success") == 2
    assert sample(got, "jobqueue_jobs", status="queued", queue="mail", type="demo.fail") == 1
    assert sample(got, "jobqueue_jobs", status="running", queue="default", type="demo.slow") == 1
    assert sample(got, "jobqueue_jobs_lease_overdue", queue="default", type="demo.slow") == 1
    assert sample(got, "jobqueue_jobs_lease_overdue", queue="default", type="demo.success") == 0
    # The oldest due job waited 90 s (the one scheduled in an hour does not count).
    assert 90 <= sample(got, "jobqueue_queue_oldest_due_age_seconds", queue="mail") < 120
    assert sample(got, "jobqueue_queue_oldest_due_age_seconds", queue="default") == 0
    assert sample(got, "jobqueue_jobs_finished", status="succeeded") == 1
    assert sample(got, "jobqueue_jobs_finished", status="failed") == 0
    assert sample(got, "jobqueue_jobs_finished_estimated") == 0
    # Never a job or worker id among the labels.
    labels = {name for (_, pairs) in got for name, _ in pairs}
    assert labels == {"status", "queue", "type"}


# The Accept headers of Prometheus 2 (Debian 12's 2.42) and of Prometheus 3.
PROMETHEUS_2_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
PROMETHEUS_3_ACCEPT = (
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
    "application/openmetrics-text;version=0.0.1;q=0.5,"
    "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "accept",
    [None, "*/*", "text/plain", "text/plain; version=0.0.4", "text/plain, */*;q=0.1"],
    ids=["no-accept", "any", "text-plain", "text-plain-0.0.4", "curl-like"],
)
def test_metrics_answer_the_classic_text_format_to_any_other_accept_header(accept):
    queued_job()
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    response = APIClient().get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    got = metric_samples(response.content)
    assert sample(got, "jobqueue_jobs", status="queued", queue="default", type="demo.success") == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "accept", [PROMETHEUS_2_ACCEPT, PROMETHEUS_3_ACCEPT], ids=["prometheus-2", "prometheus-3"]
)
def test_metrics_answer_openmetrics_to_prometheus(accept):
    queued_job()
    response = APIClient().get("/metrics", HTTP_ACCEPT=accept)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("application/openmetrics-text; version=1.0.0;")
    assert response.content.endswith(b"# EOF\n")
    assert b'jobqueue_jobs{queue="default",status="queued",type="demo.success"} 1' in (
        response.content
    )


@pytest.mark.django_db
def test_metrics_errors_stay_json_whatever_the_accept_header(monkeypatch):
    from django.db import OperationalError

    def refuse(**kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(metrics.selectors, "live_jobs", refuse)
    response = APIClient().get("/metrics", HTTP_ACCEPT="text/plain")
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "The database is unavailable; try again shortly."}


# Production: /metrics needs a token like the API (test_security.py's route table).


# --- each worker process ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_worker_metrics_count_attempts_by_outcome_and_time_them(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    queued_job(payload={"sleep_seconds": 0}, queue="q")
    queued_job(payload={"sleep_seconds": 0}, queue="q")
    queued_job("demo.fail", max_attempts=2, queue="q")
    runner = worker_runner(queues=("q",), burst=True)
    recorded = metrics.WorkerMetrics(runner)
    recorded.connect()
    try:
        runner.run()
        signals.database_error.send_robust(None, component="thread", error=OSError("gone"))
    finally:
        recorded.disconnect()
    text = recorded.text()
    promtool_check_metrics(text)
    got = metric_samples(text)
    attempts = "jobqueue_worker_attempts_total"
    assert sample(got, attempts, queue="q", type="demo.success", outcome="succeeded") == 2
    assert sample(got, attempts, queue="q", type="demo.fail", outcome="retry_scheduled") == 1
    assert sample(got, attempts, queue="q", type="demo.fail", outcome="failed") == 1
    duration = "jobqueue_worker_attempt_duration_seconds_count"
    assert sample(got, duration, queue="q", type="demo.fail") == 2
    wait = "jobqueue_worker_queue_wait_seconds_count"
    assert sample(got, wait, queue="q", type="demo.success") == 2
    assert sample(got, "jobqueue_worker_database_errors_total", component="thread") == 1
    # Drained and stopped: no thread is busy.
    assert sample(got, "jobqueue_worker_threads", state="busy") == 0
    assert "process_cpu_seconds_total" in {name for name, _ in got}


@pytest.mark.django_db(transaction=True)
def test_busy_threads_are_counted_while_they_run():
    queued_job("demo.slow", payload={"sleep_seconds": 1})
    runner = worker_runner(threads=2)
    recorded = metrics.WorkerMetrics(runner)
    runner.start()
    try:
        wait_until(lambda: runner.in_flight.snapshot(), 10, "the job to start")
        got = metric_samples(recorded.text())
        assert sample(got, "jobqueue_worker_threads", state="busy") == 1
        assert sample(got, "jobqueue_worker_threads", state="idle") == 1
    finally:
        runner.stop()
        runner.wait()


# --- a real Prometheus, a real API, a real worker process -----------------------------------


@pytest.fixture
def prometheus_installed():
    if not PROMETHEUS.exists():
        if IN_CI:
            pytest.fail("Debian's prometheus package is required in CI (make test installs it)")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_prometheus_scrapes_the_api_and_a_worker_process(prometheus_installed, tmp_path):
    # The API's rule: reading the queue takes the view_job permission.
    token = Token.objects.create(user=user_with("view_job", username="prometheus")).key
    (tmp_path / "token").write_text(token)
    for _ in range(4):
        queued_job(payload={"sleep_seconds": 0})
    for _ in range(2):
        queued_job("demo.fail", max_attempts=2)
    for _ in range(3):
        queued_job(queue="held")  # no worker serves it
    worker_port = free_port()
    api_env = production_child_env(DJANGO_SECURE_SSL_REDIRECT="false")
    with serve_api(tmp_path / "api.log", api_env) as api:
        worker = WorkerProcess(
            tmp_path / "worker.log",
            "--queues",
            "default",
            "--threads",
            "2",
            JOB_WORKER_METRICS_PORT=str(worker_port),
            JOB_WORKER_BACKOFF_BASE_SECONDS="0",
        )
        try:
            worker.wait_for_log("action=metrics_listening")
            scrape = [
                {
                    "job_name": "api",
                    "static_configs": [{"targets": [f"127.0.0.1:{api.port}"]}],
                    "authorization": {"type": "Token", "credentials_file": str(tmp_path / "token")},
                },
                {
                    "job_name": "worker",
                    "static_configs": [{"targets": [f"127.0.0.1:{worker_port}"]}],
                },
            ]
            with prometheus_server(tmp_path / "prometheus.log", scrape) as prometheus:

                def value(query: str, number: float) -> bool:
                    return prometheus_query(prometheus, query) == {(): number}

                expectations = [
                    ('sum(up{job=~"api|worker"})', 2),
                    (
                        'sum(jobqueue_worker_attempts_total{type="demo.success",outcome="succeeded"})',
                        4,
                    ),
                    (
                        'sum(jobqueue_worker_attempts_total{type="demo.fail",outcome="retry_scheduled"})',
                        2,
                    ),
                    ('sum(jobqueue_worker_attempts_total{type="demo.fail",outcome="failed"})', 2),
                    ("sum(jobqueue_worker_attempt_duration_seconds_count)", 8),
                    ('sum(jobqueue_worker_queue_wait_seconds_count{type="demo.fail"})', 4),
                    ('sum(jobqueue_worker_queue_wait_seconds_bucket{le="+Inf"})', 8),
                    ('sum(jobqueue_jobs{status="queued",queue="held",type="demo.success"})', 3),
                    ('sum(jobqueue_jobs_finished{status="succeeded"})', 4),
                    ('sum(jobqueue_jobs_finished{status="failed"})', 2),
                ]
                for query, number in expectations:
                    try:
                        wait_until(
                            lambda q=query, n=number: value(q, n), 20, f"{query} == {number}"
                        )
                    except AssertionError as error:
                        _, targets = prometheus.json("GET", "/api/v1/targets", https=False)
                        health = [
                            (t["labels"]["job"], t["health"], t["lastError"])
                            for t in targets["data"]["activeTargets"]
                        ]
                        raise AssertionError(f"{error}; targets: {health}") from None
                busy = prometheus_query(prometheus, 'jobqueue_worker_threads{state="busy"}')
                assert list(busy.values()) == [0.0]
            # promtool lints what both endpoints serve.
            status, _, body = api.request("GET", "/metrics", token=token, https=False)
            assert status == 200
            promtool_check_metrics(body)
            from urllib.request import urlopen

            with urlopen(f"http://127.0.0.1:{worker_port}/metrics", timeout=10) as response:
                promtool_check_metrics(response.read())
        finally:
            worker.signal()
            assert worker.wait() == 0, worker.log()
