"""Job dependencies on every driver: a job created with ``depends_on`` waits, is queued once
its parents succeeded, and follows its ``on_parent_failure`` policy when one did not."""

import time
import uuid

import pytest
from django.db import IntegrityError, transaction

from jobs import drivers, errors, services
from jobs.drivers import Completion, Owner
from jobs.limits import DEPENDS_ON_MAX
from jobs.models import Job, JobDependency, JobEvent
from tests.factories import WORKER, cancelled_job, failed_job, fresh, queued_job, succeeded_job

pytestmark = pytest.mark.django_db

Status = Job.Status


@pytest.fixture(params=[driver.name for driver in drivers.available_drivers()], autouse=True)
def driver(request):
    (chosen,) = [d for d in drivers.available_drivers() if d.name == request.param]
    with drivers.use_driver(chosen):
        yield chosen


def claim_next(worker_id: str = WORKER) -> Job | None:
    claimed = services.claim_next_job(worker_id=worker_id)
    return None if claimed is None else fresh(claimed)


def run_to_success(job: Job) -> None:
    """Claim ``job`` (it must be the next one) and complete it."""
    claimed = claim_next()
    assert claimed is not None and claimed.pk == job.pk
    assert services.complete_job(job_id=job.pk, worker_id=WORKER, attempt=claimed.attempts)


def fan_out(parent: Job, count: int) -> list[uuid.UUID]:
    """``count`` children of ``parent`` in one bulk create (one created_at for all)."""
    spec = services.NewJobSpec(type="demo.success", depends_on=(parent.pk,))
    return [row.id for row, _ in services.create_jobs([spec] * count)]


def test_a_job_with_unfinished_parents_waits_and_is_not_claimable():
    parent = queued_job(priority=0)
    child = queued_job(depends_on=[parent.pk], priority=100)
    assert child.status == Status.WAITING
    assert claim_next().pk == parent.pk
    assert claim_next() is None


def test_a_job_whose_parents_already_succeeded_is_queued_at_once():
    parent = succeeded_job()
    child = queued_job(depends_on=[parent.pk])
    assert child.status == Status.QUEUED


def test_the_child_is_queued_after_its_last_parent_succeeds():
    first, second = queued_job(priority=10), queued_job(priority=5)
    child = queued_job(depends_on=[first.pk, second.pk], priority=100)
    run_to_success(first)
    services.settle_waiting_jobs()
    assert fresh(child).status == Status.WAITING
    run_to_success(second)
    assert services.settle_waiting_jobs() == (1, 0)
    assert claim_next().pk == child.pk


def test_the_settler_reads_a_bounded_window_a_pass_and_reaches_every_waiting_job(monkeypatch):
    from jobs.worker.maintenance import dependencies

    monkeypatch.setattr(dependencies, "WINDOWS_PER_PASS", 1)
    unfinished = queued_job(priority=0)
    blocked = [queued_job(depends_on=[unfinished.pk]) for _ in range(4)]
    parent = queued_job(priority=100)
    last = queued_job(depends_on=[parent.pk])
    run_to_success(parent)
    settler = dependencies.DependencySettler(batch_size=2)
    # Windows of two, oldest first: the four blocked jobs, then the settleable one.
    assert settler.run_once() == (0, 0)
    assert settler.run_once() == (0, 0)
    assert fresh(last).status == Status.WAITING
    assert settler.run_once() == (1, 0)
    assert fresh(last).status == Status.QUEUED
    assert settler.resume_after is None  # the last waiting job: the next pass starts over
    assert {fresh(job).status for job in blocked} == {Status.WAITING}


def test_a_fan_out_larger_than_a_window_is_queued_in_one_pass():
    from jobs.worker.maintenance import dependencies

    parent = queued_job()
    children = fan_out(parent, 300)
    run_to_success(parent)
    # Windows of 2 x 10 jobs: fifteen windows that each settle jobs, where a pass used to
    # stop after its first window whatever it did.
    settler = dependencies.DependencySettler(batch_size=10, pass_seconds=30)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dependencies, "WINDOWS_PER_PASS", 2)
        started = time.monotonic()
        assert settler.run_once() == (300, 0)
    assert time.monotonic() - started < 30
    assert settler.windows >= 15
    assert set(Job.objects.filter(pk__in=children).values_list("status", flat=True)) == {
        Status.QUEUED
    }


def test_a_pass_stopped_by_its_time_bound_while_settling_comes_back_at_once(monkeypatch):
    from jobs.worker.maintenance import dependencies

    monkeypatch.setattr(dependencies, "WINDOWS_PER_PASS", 1)
    parent = queued_job()
    fan_out(parent, 30)
    run_to_success(parent)
    settler = dependencies.DependencySettler(batch_size=10, pass_seconds=0)
    settler.run(time.monotonic())
    assert (settler.windows, settler.more) == (1, True)
    assert settler.next_due(time.monotonic()) <= time.monotonic()
    assert Job.objects.filter(status=Status.WAITING).count() == 20


def test_an_idle_pass_comes_back_a_second_later():
    from jobs.worker.maintenance import dependencies

    queued_job(depends_on=[queued_job().pk])
    settler = dependencies.DependencySettler(batch_size=10)
    now = time.monotonic()
    settler.run(now)
    assert not settler.more
    assert settler.next_due(now) == now + dependencies.SETTLE_INTERVAL_SECONDS


def test_a_window_that_settles_nothing_ends_the_pass(monkeypatch):
    from jobs.worker.maintenance import dependencies

    monkeypatch.setattr(dependencies, "WINDOWS_PER_PASS", 3)
    unfinished = queued_job()
    blocked = fan_out(unfinished, 10)
    settler = dependencies.DependencySettler(batch_size=2, pass_seconds=30)
    assert settler.run_once() == (0, 0)
    assert settler.windows == 1
    # It looked at one window of 3 x 2 (the bulk create's jobs share a created_at, so by
    # id) and resumes after it.
    assert settler.resume_after is not None
    assert settler.resume_after[1] == sorted(blocked, key=lambda pk: pk.hex)[5]


def test_the_child_is_queued_after_a_batched_completion_of_its_parent():
    parent = queued_job()
    child = queued_job(depends_on=[parent.pk])
    claimed = claim_next()
    services.complete_jobs(
        completions=[Completion(Owner(parent.pk, WORKER, claimed.attempts), None)]
    )
    services.settle_waiting_jobs()
    assert claim_next().pk == child.pk


def test_a_parent_failed_for_good_cancels_the_child_with_an_event_naming_it():
    parent = failed_job()
    child = queued_job(depends_on=[parent.pk])
    child = fresh(child)
    assert child.status == Status.CANCELLED
    event = child.events.order_by("-id").first()
    assert event.type == JobEvent.Type.CANCELLED
    assert event.data == {"parent_id": str(parent.pk), "parent_status": Status.FAILED}


def test_a_cancelled_parent_cancels_the_waiting_child():
    parent = queued_job()
    child = queued_job(depends_on=[parent.pk])
    services.cancel_job(job_id=parent.pk)
    assert services.settle_waiting_jobs() == (0, 1)
    assert fresh(child).status == Status.CANCELLED


def test_the_run_policy_runs_the_child_once_every_parent_finished():
    failed, pending = failed_job(), queued_job(priority=10)
    child = queued_job(depends_on=[failed.pk, pending.pk], on_parent_failure="run")
    assert child.status == Status.WAITING
    run_to_success(pending)
    assert services.settle_waiting_jobs() == (1, 0)
    assert fresh(child).status == Status.QUEUED


def test_a_waiting_job_can_be_cancelled():
    child = queued_job(depends_on=[queued_job().pk])
    services.cancel_job(job_id=child.pk)
    assert fresh(child).status == Status.CANCELLED


def test_a_manual_retry_of_the_parent_brings_its_cancelled_dependents_back_to_waiting():
    parent = failed_job()
    child = queued_job(depends_on=[parent.pk])
    assert child.status == Status.CANCELLED
    services.retry_job(job_id=parent.pk)
    services.settle_waiting_jobs()
    assert fresh(child).status == Status.WAITING


def test_a_job_cannot_depend_on_itself():
    job = queued_job()
    with pytest.raises(IntegrityError), transaction.atomic():
        JobDependency.objects.create(job_id=job.pk, parent_id=job.pk)


def test_unknown_parents_are_refused_and_nothing_is_written():
    with pytest.raises(errors.InvalidDependencies, match="No such job"):
        services.create_job(type="demo.success", depends_on=[uuid.uuid4()])
    assert not Job.objects.exists()


def test_more_parents_than_the_bound_are_refused():
    ids = [uuid.uuid4() for _ in range(DEPENDS_ON_MAX + 1)]
    with pytest.raises(errors.InvalidDependencies, match="At most"):
        services.create_job(type="demo.success", depends_on=ids)


def test_depends_on_with_a_unique_key_is_refused():
    parent = queued_job()
    with pytest.raises(errors.InvalidDependencies, match="unique_key"):
        services.create_job(type="demo.success", depends_on=[parent.pk], unique_key="k")


def test_deleting_a_parent_deletes_its_edges():
    parent = cancelled_job()
    child = queued_job(depends_on=[queued_job().pk, parent.pk], on_parent_failure="run")
    Job.objects.filter(pk=parent.pk).delete()
    assert JobDependency.objects.filter(job_id=child.pk).count() == 1
