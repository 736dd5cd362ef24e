"""A dependency chain on real worker processes: ``manage.py run_job_workers`` settles the
waiting jobs itself (its maintenance thread), so each step runs after the one before."""

from __future__ import annotations

import pytest

from harness import wait_until
from jobs.models import Job
from tests.factories import fresh, queued_job
from tests.helpers import WorkerProcess, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HANDLERS = "tests.fault_handlers"


def test_a_three_step_chain_runs_in_order_on_a_real_worker(tmp_path):
    first = queued_job("fault.sleep", payload={"seconds": 0.2})
    second = queued_job("fault.sleep", payload={"seconds": 0.2}, depends_on=[first.pk])
    third = queued_job("fault.noop", depends_on=[second.pk], priority=100)
    assert [fresh(job).status for job in (second, third)] == [Job.Status.WAITING] * 2
    # Two threads: an idle one would claim a step early if waiting were claimable.
    worker = WorkerProcess(tmp_path / "worker.log", "--threads", "2", JOB_HANDLER_MODULES=HANDLERS)
    try:
        wait_until(lambda: fresh(third).status == Job.Status.SUCCEEDED, 30, "the chain to finish")
    finally:
        assert stop_all([worker]) == [0]
    steps = [fresh(job) for job in (first, second, third)]
    assert [job.status for job in steps] == [Job.Status.SUCCEEDED] * 3
    # Each step was claimed only after the one before it finished.
    assert steps[0].finished_at <= steps[1].claimed_at
    assert steps[1].finished_at <= steps[2].claimed_at
