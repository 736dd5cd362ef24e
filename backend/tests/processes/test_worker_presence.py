"""Workers seen alive: a real ``run_job_workers`` process, idle, is listed by
``GET /api/workers/`` within one heartbeat interval of its start, is gone within one
interval of ``kill -9``, and at once after a clean stop. The heartbeat interval is 1 s, so
each bound is a second (plus the slack of a loaded machine); figures print with ``-s``.
"""

from __future__ import annotations

import signal
import time

import pytest
from rest_framework.test import APIClient

from harness import wait_until
from tests.helpers import WorkerProcess, figures

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

INTERVAL = 1.0
# Scheduling delays on a loaded shared machine, added to every bound.
SLACK = 1.5


@pytest.fixture
def worker(tmp_path):
    process = WorkerProcess(
        tmp_path / "worker.log",
        "--threads",
        "2",
        JOB_WORKER_LEASE_SECONDS="3",
        JOB_WORKER_HEARTBEAT_SECONDS=str(int(INTERVAL)),
    )
    yield process
    process.kill()


def listed_pids() -> list[int]:
    response = APIClient().get("/api/workers/")
    assert response.status_code == 200
    return [process["pid"] for process in response.json()["processes"]]


def test_an_idle_worker_is_listed_within_one_interval_and_gone_within_one_after_kill_9(worker):
    worker.wait_for_log("action=maintenance_started")
    started = time.monotonic()
    wait_until(lambda: worker.proc.pid in listed_pids(), INTERVAL + SLACK, "the worker listed")
    appeared = time.monotonic() - started
    # Its threads are named once they serve (the next check-in after they start).
    wait_until(
        lambda: any(
            p["pid"] == worker.proc.pid and p["threads_live"] == 2
            for p in APIClient().get("/api/workers/").json()["processes"]
        ),
        INTERVAL + SLACK,
        "its two threads",
    )
    worker.signal(signal.SIGKILL)
    assert worker.wait(timeout=10) == -signal.SIGKILL
    killed = time.monotonic()
    wait_until(lambda: worker.proc.pid not in listed_pids(), INTERVAL + SLACK, "the worker gone")
    figures(
        "worker presence",
        interval_s=INTERVAL,
        listed_after_s=round(appeared, 2),
        gone_after_kill_s=round(time.monotonic() - killed, 2),
    )


def test_a_worker_stopped_cleanly_is_gone_at_once(worker):
    wait_until(lambda: worker.proc.pid in listed_pids(), 20, "the worker listed")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    assert worker.proc.pid not in listed_pids()
