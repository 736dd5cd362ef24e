"""Workflows on real worker processes (``manage.py run_job_workers``, whose maintenance
thread settles the waiting jobs): results passed along a chain, a group of 1,000 and its
one callback with two processes racing and with one of them killed -9, the policies when
a parent fails for good, and a manual retry that resumes a workflow to its end."""

from __future__ import annotations

import signal

import pytest
from django.db.models import Max

from harness import wait_until
from jobs import services
from jobs.models import FINISHED_STATUSES, Job, JobEvent
from jobs.workflows import chain, group, step
from tests import example_tasks
from tests.helpers import WorkerProcess, stop_all

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TASKS = "tests.example_tasks"
Status = Job.Status
# Short leases and passes: a killed worker's jobs come back within seconds.
FAST = {
    "JOB_HANDLER_MODULES": TASKS,
    "JOB_WORKER_LEASE_SECONDS": "2",
    "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": "1",
    "JOB_WORKER_BACKOFF_BASE_SECONDS": "1",
}


def job(result) -> Job:
    return Job.objects.get(pk=result.id)


def workers(tmp_path, count: int, threads: int = 4) -> list[WorkerProcess]:
    return [
        WorkerProcess(tmp_path / f"worker-{n}.log", "--threads", str(threads), **FAST)
        for n in range(count)
    ]


def test_a_chain_built_with_chain_passes_each_result_to_the_next_step(tmp_path):
    run = chain(
        step(example_tasks.add, 1, 2),
        step(example_tasks.plus_parent, 10),
        step(example_tasks.plus_parent, 100),
    ).enqueue()
    (worker,) = workers(tmp_path, 1, threads=2)
    try:
        wait_until(lambda: job(run.results[-1]).status in FINISHED_STATUSES, 30, "the chain's end")
    finally:
        assert stop_all([worker]) == [0]
    steps = [job(result) for result in run.results]
    assert [(s.status, s.result) for s in steps] == [
        (Status.SUCCEEDED, 3),
        (Status.SUCCEEDED, 13),
        (Status.SUCCEEDED, 113),
    ]
    assert steps[0].finished_at <= steps[1].claimed_at
    assert steps[1].finished_at <= steps[2].claimed_at


def assert_one_callback_after_every_member(run, members: int) -> Job:
    """The group's callback ran exactly once (one job, one claim, one success), claimed
    after its last member finished, and read every member's result."""
    *firsts, callback = run.results
    assert len(firsts) == members
    done = job(callback)
    assert done.status == Status.SUCCEEDED
    assert done.attempts == 1
    assert JobEvent.objects.filter(job_id=done.pk, type=JobEvent.Type.CLAIMED).count() == 1
    assert Job.objects.filter(type=done.type).count() == 1
    member_jobs = Job.objects.filter(pk__in=[result.id for result in firsts])
    assert member_jobs.filter(status=Status.SUCCEEDED).count() == members
    last_member = member_jobs.aggregate(last=Max("finished_at"))["last"]
    assert last_member <= done.claimed_at
    return done


def test_a_group_of_1000_runs_one_callback_after_its_last_member_with_two_workers(tmp_path):
    run = group(*(step(example_tasks.add, n, 0) for n in range(1000))).then(example_tasks.collect)
    racing = workers(tmp_path, 2)
    try:
        for worker in racing:
            wait_until(lambda w=worker: w.log().count("action=thread_started") == 4, 30, "threads")
        run = run.enqueue()
        wait_until(lambda: job(run.results[-1]).status in FINISHED_STATUSES, 120, "the callback")
    finally:
        assert stop_all(racing) == [0, 0]
    done = assert_one_callback_after_every_member(run, 1000)
    assert done.result == {"count": 1000, "sum": sum(range(1000))}
    # Both processes ran members: the race was real.
    claimers = set(Job.objects.filter(workflow_id=run.id).values_list("claimed_by", flat=True))
    assert len({claimer.split(":")[1] for claimer in claimers}) == 2


def test_a_worker_killed_mid_group_still_leaves_one_callback(tmp_path):
    run = group(*(step(example_tasks.nap, 0.03, 1) for _ in range(1000))).then(
        example_tasks.collect
    )
    victim, survivor = workers(tmp_path, 2)
    try:
        for worker in (victim, survivor):
            wait_until(lambda w=worker: w.log().count("action=thread_started") == 4, 30, "threads")
        run = run.enqueue()
        wait_until(
            lambda: Job.objects.filter(workflow_id=run.id, status=Status.SUCCEEDED).count() >= 300,
            60,
            "a third of the group",
        )
        victim.proc.send_signal(signal.SIGKILL)
        assert victim.wait(timeout=10) == -signal.SIGKILL
        wait_until(lambda: job(run.results[-1]).status in FINISHED_STATUSES, 120, "the callback")
        assert stop_all([survivor]) == [0]
    finally:
        victim.kill()
        survivor.kill()
    done = assert_one_callback_after_every_member(run, 1000)
    assert done.result == {"count": 1000, "sum": 1000}
    # The victim died holding members: their leases ran out and the survivor ran them.
    rescued = JobEvent.objects.filter(job__workflow_id=run.id, type=JobEvent.Type.TIMEOUT_REQUEUED)
    assert rescued.exists()


def test_a_parent_failed_for_good_cancels_its_dependent_by_default(tmp_path):
    failing = example_tasks.always_fails.using(max_attempts=1)
    run = chain(step(failing, "boom"), example_tasks.collect).enqueue()
    (worker,) = workers(tmp_path, 1, threads=2)
    try:
        wait_until(lambda: job(run.results[-1]).status in FINISHED_STATUSES, 30, "the dependent")
    finally:
        assert stop_all([worker]) == [0]
    parent, dependent = (job(result) for result in run.results)
    assert (parent.status, dependent.status) == (Status.FAILED, Status.CANCELLED)
    cancelled = JobEvent.objects.get(job_id=dependent.pk, type=JobEvent.Type.CANCELLED)
    assert cancelled.data["parent_id"] == str(parent.pk)
    assert dependent.attempts == 0


def test_a_callback_on_finish_runs_after_a_member_failed_for_good(tmp_path):
    failing = example_tasks.always_fails.using(max_attempts=1)
    run = group(step(failing, "boom"), step(example_tasks.add, 1, 1)).then(
        example_tasks.collect, on="finish"
    )
    run = run.enqueue()
    (worker,) = workers(tmp_path, 1, threads=2)
    try:
        wait_until(lambda: job(run.results[-1]).status in FINISHED_STATUSES, 30, "the callback")
    finally:
        assert stop_all([worker]) == [0]
    failed, added, callback = (job(result) for result in run.results)
    assert (failed.status, added.status) == (Status.FAILED, Status.SUCCEEDED)
    assert callback.status == Status.SUCCEEDED
    # The failed member has no result: None, in the group's order.
    assert callback.result == {"count": 2, "sum": 2}
    assert failed.finished_at <= callback.claimed_at


def test_a_manual_retry_of_the_failed_step_resumes_the_workflow_to_its_end(tmp_path):
    flag = tmp_path / "fail"
    flag.write_text("")
    run = chain(
        step(example_tasks.fail_while_exists, str(flag)),
        step(example_tasks.plus_parent, 10),
        step(example_tasks.plus_parent, 100),
    ).enqueue()
    (worker,) = workers(tmp_path, 1, threads=2)
    try:
        wait_until(
            lambda: job(run.results[-1]).status == Status.CANCELLED, 30, "the chain cancelled"
        )
        assert job(run.results[0]).status == Status.FAILED
        flag.unlink()
        services.retry_job(job_id=run.results[0].id)
        wait_until(lambda: job(run.results[-1]).status == Status.SUCCEEDED, 30, "the chain's end")
    finally:
        assert stop_all([worker]) == [0]
    assert [job(result).result for result in run.results] == [5, 15, 115]
