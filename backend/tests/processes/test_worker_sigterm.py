"""A real ``run_job_workers`` process stopped by SIGTERM: the job in flight finishes, none
is claimed after the signal, and the process exits 0."""

import signal

import pytest

from harness import wait_until
from jobs.models import Job
from tests.factories import queued_job
from tests.helpers import WorkerProcess, handlers_begun

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status


@pytest.mark.slow
def test_worker_process_exits_zero_on_sigterm_after_finishing_in_flight_job(tmp_path):
    job = queued_job("demo.slow", payload={"sleep_seconds": 1.5})
    worker = WorkerProcess(tmp_path / "worker.log", "--threads", "2", JOB_WORKER_LOG_LEVEL="DEBUG")
    try:
        wait_until(lambda: handlers_begun(worker, "demo.slow") == 1, 20, "the handler to begin")
        worker.signal(signal.SIGTERM)
        worker.wait_for_log("action=shutdown_requested")
        late = queued_job("demo.success", payload={"sleep_seconds": 0})
        assert worker.wait(timeout=30) == 0
    finally:
        worker.kill()
    job.refresh_from_db()
    late.refresh_from_db()
    assert job.status == Status.SUCCEEDED
    assert late.status == Status.QUEUED
    log = worker.log()
    assert "action=worker_stopped" in log
    assert f"action=finished job_id={job.pk}" in log
