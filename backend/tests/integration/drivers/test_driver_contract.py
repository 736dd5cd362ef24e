"""The driver contract: every transition, guard and event of jobs/services.py, run once per
database driver (River's riverdrivertest is the model).

On PostgreSQL each test runs twice, on ``PostgresDriver`` (named SQL statements) and on
``OrmDriver``; on SQLite once, on ``OrmDriver``. ``test_drivers.py`` replays one scenario on
each driver and compares what they wrote.
"""

import functools
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from jobs import drivers, errors, selectors, services
from jobs.drivers import Completion, Owner
from jobs.drivers.orm import job_row
from jobs.models import Job, JobEvent
from jobs.storable import UnstorableValue
from tests.factories import complete_and_claim, fresh, queued_job, timeline, workflow

pytestmark = pytest.mark.django_db

Status = Job.Status
Event = JobEvent.Type


@pytest.fixture(params=[driver.name for driver in drivers.available_drivers()], autouse=True)
def driver(request):
    (chosen,) = [d for d in drivers.available_drivers() if d.name == request.param]
    with drivers.use_driver(chosen):
        yield chosen


def claim(worker_id: str = "worker-a", **kwargs) -> Job:
    job = services.claim_next_job(worker_id=worker_id, **kwargs)
    assert job is not None
    return fresh(job)


# --- create -------------------------------------------------------------------------------


def test_create_job_writes_queued_job_and_created_event():
    job = queued_job("demo.success", payload={"sleep_seconds": 1})
    assert job.status == Status.QUEUED
    assert job.payload == {"sleep_seconds": 1}
    assert job.attempts == 0
    assert timeline(job) == [Event.CREATED]
    event = job.events.get()
    assert event.data == {"type": "demo.success"}
    assert event.attempt == 0


def test_create_job_defaults_available_at_to_now_and_max_attempts_to_setting(settings):
    settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT = 7
    now = timezone.now()
    job, created = services.create_job(type="demo.success", now=now)
    assert created
    assert job.available_at == now
    assert job.max_attempts == 7
    assert job.priority == 50


def test_create_job_with_existing_idempotency_key_returns_existing_job():
    first, created_first = services.create_job(type="demo.success", idempotency_key="k-1")
    again, created_again = services.create_job(
        type="demo.fail", payload={"x": 1}, idempotency_key="k-1"
    )
    assert created_first and not created_again
    assert again.pk == first.pk
    assert again.type == "demo.success"
    assert Job.objects.count() == 1
    assert JobEvent.objects.count() == 1


def test_jobs_without_idempotency_key_are_never_deduplicated():
    services.create_job(type="demo.success")
    services.create_job(type="demo.success")
    assert Job.objects.count() == 2


# --- claim --------------------------------------------------------------------------------


def test_claim_marks_job_running_with_lease_and_claimed_event():
    job = queued_job()
    now = timezone.now()
    claimed = services.claim_next_job(worker_id="worker-a", lease_seconds=30, now=now)
    assert claimed is not None and claimed.pk == job.pk
    assert claimed.status == Status.RUNNING
    assert claimed.attempts == 1
    assert claimed.locked_by == "worker-a"
    assert claimed.locked_until == now + timedelta(seconds=30)
    job = fresh(job)
    assert (job.status, job.attempts, job.locked_by) == (Status.RUNNING, 1, "worker-a")
    assert timeline(job) == [Event.CREATED, Event.CLAIMED]
    event = job.events.get(type=Event.CLAIMED)
    assert (event.attempt, event.worker_id) == (1, "worker-a")


def test_claim_returns_none_when_queue_is_empty():
    assert services.claim_next_job(worker_id="worker-a") is None


def test_claim_skips_jobs_that_are_not_yet_available():
    now = timezone.now()
    queued_job(available_at=now + timedelta(minutes=5))
    assert services.claim_next_job(worker_id="worker-a", now=now) is None
    later = services.claim_next_job(worker_id="worker-a", now=now + timedelta(minutes=6))
    assert later is not None


def test_claim_order_is_priority_then_available_at_then_created_at():
    now = timezone.now()
    low = queued_job(priority=10, available_at=now - timedelta(minutes=9))
    old = queued_job(priority=50, available_at=now - timedelta(minutes=5))
    newer = queued_job(priority=50, available_at=now - timedelta(minutes=1))
    same_time_b = queued_job(priority=50, available_at=now - timedelta(minutes=1))
    high = queued_job(priority=90, available_at=now)
    order = [claim(now=now).pk for _ in range(5)]
    assert order == [high.pk, old.pk, newer.pk, same_time_b.pk, low.pk]


def test_a_batched_claim_gives_the_nth_job_in_claim_order_to_the_nth_worker_id():
    now = timezone.now()
    low = queued_job(priority=10, available_at=now - timedelta(minutes=9))
    old = queued_job(priority=50, available_at=now - timedelta(minutes=5))
    newer = queued_job(priority=50, available_at=now - timedelta(minutes=1))
    high = queued_job(priority=90, available_at=now)
    queued_job(available_at=now + timedelta(minutes=5))  # not due
    workers = ["worker-a", "worker-b", "worker-c"]
    claimed = services.claim_jobs(worker_ids=workers, lease_seconds=30, now=now).claimed
    assert [(row.id, row.locked_by) for row in claimed] == [
        (high.pk, "worker-a"),
        (old.pk, "worker-b"),
        (newer.pk, "worker-c"),
    ]
    for row, worker in zip(claimed, workers, strict=True):
        job = fresh(row)
        assert (job.status, job.attempts, job.locked_by) == (Status.RUNNING, 1, worker)
        assert job.locked_until == now + timedelta(seconds=30)
        assert timeline(job) == [Event.CREATED, Event.CLAIMED]
        event = job.events.get(type=Event.CLAIMED)
        assert (event.attempt, event.worker_id) == (1, worker)
        assert event.wait_ms is not None
    rest = services.claim_jobs(worker_ids=workers, now=now).claimed
    assert [row.id for row in rest] == [low.pk]


def test_a_worker_id_that_repeats_owns_as_many_jobs_each_its_own_attempt_in_claim_order():
    now = timezone.now()
    later = queued_job(priority=10, available_at=now - timedelta(minutes=1))
    first = queued_job(priority=90, available_at=now - timedelta(minutes=1))
    middle = queued_job(priority=50, available_at=now - timedelta(minutes=2))
    last = queued_job(priority=10, available_at=now - timedelta(minutes=9))
    entries = ["worker-a", "worker-b", "worker-a", "worker-b", "worker-a"]
    claimed = services.claim_jobs(worker_ids=entries, lease_seconds=30, now=now).claimed
    # Four jobs for five entries, handed out in claim order to the entries in turn.
    owned = {w: [row.id for row in claimed if row.locked_by == w] for w in set(entries)}
    assert owned == {"worker-a": [first.pk, last.pk], "worker-b": [middle.pk, later.pk]}
    for row in claimed:
        job = fresh(row)
        assert (job.status, job.attempts, job.claimed_by) == (Status.RUNNING, 1, row.locked_by)
        assert timeline(job) == [Event.CREATED, Event.CLAIMED]


def test_a_fetch_committed_asynchronously_writes_its_successes_and_its_claims():
    queued_job()
    running = claim("worker-c")
    waiting = queued_job()
    fetched = services.claim_jobs(
        worker_ids=["worker-c"],
        completions=[Completion(Owner(running.pk, "worker-c", 1), '{"n": 3}')],
        synchronous_commit=False,
    )
    assert [row.id for row in fetched.completed] == [running.pk]
    assert [row.id for row in fetched.claimed] == [waiting.pk]
    assert fresh(running).status == Status.SUCCEEDED
    assert fresh(waiting).status == Status.RUNNING


def test_a_lean_claim_writes_no_claimed_event_and_the_row_says_who_claimed_it_and_when():
    job = queued_job()
    now = timezone.now()
    (row,) = services.claim_jobs(worker_ids=["worker-a"], now=now, lean=True).claimed
    assert (row.id, row.claimed_by, row.claimed_at) == (job.pk, "worker-a", now)
    job = fresh(job)
    assert (job.status, job.attempts, job.claimed_by, job.claimed_at) == (
        Status.RUNNING,
        1,
        "worker-a",
        now,
    )
    assert timeline(job) == [Event.CREATED]


def test_a_lean_completion_writes_no_succeeded_event_and_keeps_who_ran_the_job():
    job = queued_job()
    (row,) = services.claim_jobs(worker_ids=["worker-a"], lean=True).claimed
    services.complete_jobs(
        completions=[Completion(Owner(row.id, "worker-a", 1), '{"n": 1}')], lean=True
    )
    job = fresh(job)
    assert (job.status, job.result, job.claimed_by, job.locked_by) == (
        Status.SUCCEEDED,
        {"n": 1},
        "worker-a",
        None,
    )
    assert job.finished_at is not None and job.finished_at >= job.claimed_at
    assert timeline(job) == [Event.CREATED]


def test_a_lean_attempt_that_fails_still_writes_its_failure():
    job = queued_job(max_attempts=2)
    (row,) = services.claim_jobs(worker_ids=["worker-a"], lean=True).claimed
    services.fail_jobs(failures=[services.AttemptFailure(Owner(row.id, "worker-a", 1), "boom")])
    job = fresh(job)
    assert (job.status, job.last_error) == (Status.QUEUED, "boom")
    assert timeline(job) == [Event.CREATED, Event.RETRY_SCHEDULED]


def test_a_fetch_at_a_concurrency_limit_claims_the_slots_its_own_successes_free():
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    queued_job(queue="emails"), queued_job(queue="emails")
    running = [claim(worker_id, queue="emails") for worker_id in ("worker-a", "worker-b")]
    waiting = [queued_job(queue="emails") for _ in range(3)]
    fetched = services.claim_jobs(
        worker_ids=["worker-a", "worker-b"],
        queue="emails",
        completions=[Completion(Owner(job.pk, job.locked_by, 1), None) for job in running],
    )
    assert len(fetched.completed) == 2
    # The limit is full until these successes commit, and they commit with the claims.
    assert len(fetched.claimed) == 2
    assert {row.id for row in fetched.claimed} < {job.pk for job in waiting}
    assert Job.objects.filter(queue="emails", status=Status.RUNNING).count() == 2


def test_a_batched_claim_of_an_empty_queue_claims_nothing():
    assert services.claim_jobs(worker_ids=["worker-a", "worker-b"]).claimed == []


def test_released_unstarted_attempts_are_queued_again_without_spending_the_attempt():
    first, second = queued_job(), queued_job()
    now = timezone.now()
    claimed = services.claim_jobs(worker_ids=["worker-a", "worker-b"], now=now).claimed
    assert len(claimed) == 2
    owners = [Owner(row.id, row.locked_by or "", row.attempts) for row in claimed]
    released = services.release_unstarted_jobs(owners=owners, now=now)
    assert sorted(row.id for row in released) == sorted([first.pk, second.pk])
    for job in (fresh(first), fresh(second)):
        assert (job.status, job.attempts, job.locked_by, job.locked_until) == (
            Status.QUEUED,
            0,
            None,
            None,
        )
        assert job.available_at <= now  # due at once: no lease to wait for
        assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.RELEASED]
        event = job.events.get(type=Event.RELEASED)
        assert event.attempt == 1 and event.worker_id in {"worker-a", "worker-b"}
    again = claim("worker-c")
    assert again.attempts == 1
    assert selectors.job_attempts(again.pk)[0]["worker_id"] == "worker-c"
    assert len(selectors.job_attempts(again.pk)) == 1


@pytest.mark.parametrize(
    "transition",
    [
        lambda owner: services.release_unstarted_jobs(owners=[owner]),
        lambda owner: services.fail_jobs(failures=[services.AttemptFailure(owner, "boom")]),
        lambda owner: services.complete_jobs(completions=[Completion(owner, None)]),
    ],
    ids=["release", "failure", "success"],
)
def test_a_transition_returns_the_whole_row_it_left(transition):
    (member,) = workflow({"ref": "only"}).jobs
    (row,) = services.claim_jobs(worker_ids=["worker-a"]).claimed
    assert row.id == member.id
    (left,) = transition(Owner(row.id, "worker-a", 1))
    assert (left.workflow_id, left.ref) == (member.workflow_id, "only")
    assert left == job_row(fresh(member))


def test_a_release_by_a_stale_owner_changes_nothing(stolen_job):
    before = stolen_job.events.count()
    assert services.release_unstarted_jobs(owners=[Owner(stolen_job.pk, "worker-a", 1)]) == []
    _unchanged(stolen_job, before)


def test_claim_clears_previous_error_and_result(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    queued_job(max_attempts=2)
    first = claim()
    services.fail_job(job_id=first.pk, worker_id="worker-a", attempt=1, error="boom")
    second = claim()
    assert second.attempts == 2
    assert second.last_error == ""
    assert second.result is None


# --- complete / fail ----------------------------------------------------------------------


def test_complete_marks_succeeded_with_result_and_finish_time():
    queued_job()
    job = claim()
    now = timezone.now()
    done = services.complete_job(
        job_id=job.pk, worker_id="worker-a", attempt=1, result={"ok": True}, now=now
    )
    assert done is not None
    done = fresh(done)
    assert done.status == Status.SUCCEEDED
    assert done.result == {"ok": True}
    assert done.finished_at == now
    assert timeline(done) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]


def test_fail_with_attempts_left_requeues_with_backoff_and_retry_scheduled_event():
    queued_job(max_attempts=3)
    job = claim()
    now = timezone.now()
    retried = services.fail_job(
        job_id=job.pk, worker_id="worker-a", attempt=1, error="boom", now=now
    )
    assert retried is not None
    retried = fresh(retried)
    assert retried.status == Status.QUEUED
    assert retried.available_at == now + timedelta(seconds=5)
    assert retried.last_error == "boom"
    event = retried.events.order_by("-id").first()
    assert event.type == Event.RETRY_SCHEDULED
    assert event.message == "boom"
    assert event.data["delay_seconds"] == 5


def test_fail_on_last_attempt_marks_failed():
    queued_job(max_attempts=1)
    job = claim()
    now = timezone.now()
    failed = services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="x", now=now)
    assert failed is not None
    failed = fresh(failed)
    assert failed.status == Status.FAILED
    assert failed.finished_at == now
    assert failed.last_error == "x"
    assert timeline(failed)[-1] == Event.FAILED
    assert failed.events.order_by("-id").first().data == {"error": "x"}


def test_failed_retry_is_claimed_again_only_after_its_backoff():
    queued_job(max_attempts=3)
    job = claim()
    now = timezone.now()
    services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="x", now=now)
    assert services.claim_next_job(worker_id="worker-b", now=now + timedelta(seconds=4)) is None
    again = services.claim_next_job(worker_id="worker-b", now=now + timedelta(seconds=5))
    assert again is not None and again.attempts == 2


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(1, 5), (2, 10), (3, 20), (4, 40), (5, 80), (6, 160), (7, 300), (8, 300), (1000, 300)],
)
def test_backoff_ladder_doubles_from_base_and_caps_at_max(attempt, expected):
    assert services.backoff_delay_seconds(attempt, base_seconds=5, max_seconds=300) == expected


def test_backoff_reads_settings(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 2
    settings.JOB_WORKER_BACKOFF_MAX_SECONDS = 7
    assert [services.backoff_delay_seconds(a) for a in (1, 2, 3, 4)] == [2, 4, 7, 7]


# --- ownership ----------------------------------------------------------------------------


@pytest.fixture
def stolen_job(settings):
    """Worker A claimed attempt 1, its lease expired, cleanup requeued, B claimed attempt 2."""
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    queued_job(max_attempts=3)
    now = timezone.now()
    a = services.claim_next_job(worker_id="worker-a", lease_seconds=10, now=now)
    later = now + timedelta(seconds=11)
    assert services.cleanup_expired_jobs(now=later).requeued == 1
    b = services.claim_next_job(worker_id="worker-b", lease_seconds=10, now=later)
    assert b is not None and b.pk == a.pk and b.attempts == 2
    return fresh(b)


def _unchanged(job: Job, events_before: int) -> None:
    job_now = Job.objects.get(pk=job.pk)
    assert job_now.status == Status.RUNNING
    assert (job_now.locked_by, job_now.attempts) == ("worker-b", 2)
    assert job_now.locked_until == job.locked_until
    assert job_now.result is None and job_now.last_error == ""
    assert JobEvent.objects.filter(job=job).count() == events_before


def test_stale_worker_cannot_complete_old_attempt(stolen_job):
    before = stolen_job.events.count()
    assert (
        services.complete_job(job_id=stolen_job.pk, worker_id="worker-a", attempt=1, result=1)
        is None
    )
    _unchanged(stolen_job, before)


def test_a_batchs_stale_completion_changes_nothing_and_the_others_complete(stolen_job):
    before = stolen_job.events.count()
    others = [queued_job() for _ in range(2)]
    claimed = [claim("worker-c") for _ in others]
    now = timezone.now()
    completions = [
        Completion(Owner(claimed[0].pk, "worker-c", 1), '{"n": 0}'),
        Completion(Owner(stolen_job.pk, "worker-a", 1), '{"stale": true}'),
        Completion(Owner(claimed[1].pk, "worker-c", 1), None),
    ]
    rows = services.complete_jobs(completions=completions, now=now)
    assert sorted(row.id for row in rows) == sorted(job.pk for job in claimed)
    _unchanged(stolen_job, before)
    first, second = fresh(claimed[0]), fresh(claimed[1])
    assert (first.status, first.result, first.finished_at) == (Status.SUCCEEDED, {"n": 0}, now)
    assert (second.status, second.result) == (Status.SUCCEEDED, None)
    for job in (first, second):
        assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
        ended = job.events.get(type=Event.SUCCEEDED)
        assert (ended.worker_id, ended.attempt) == ("worker-c", 1)
        assert ended.run_ms is not None and ended.wait_ms is not None


def test_a_fetch_completes_its_batch_but_the_stale_one_and_claims_in_the_same_commit(
    stolen_job,
):
    before = stolen_job.events.count()
    queued_job()
    running = claim("worker-c")
    waiting = [queued_job() for _ in range(2)]
    fetched = services.claim_jobs(
        completions=[
            Completion(Owner(running.pk, "worker-c", 1), '{"n": 1}'),
            Completion(Owner(stolen_job.pk, "worker-a", 1), '{"stale": true}'),
        ],
        worker_ids=["worker-d", "worker-e"],
    )
    completed, claimed = fetched.completed, fetched.claimed
    assert [row.id for row in completed] == [running.pk]
    assert [(row.id, row.locked_by) for row in claimed] == [
        (waiting[0].pk, "worker-d"),
        (waiting[1].pk, "worker-e"),
    ]
    _unchanged(stolen_job, before)
    done = fresh(running)
    assert (done.status, done.result) == (Status.SUCCEEDED, {"n": 1})
    assert timeline(done) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
    for job, worker_id in zip(waiting, ["worker-d", "worker-e"], strict=True):
        row = fresh(job)
        assert (row.status, row.locked_by, row.attempts) == (Status.RUNNING, worker_id, 1)
        assert timeline(row) == [Event.CREATED, Event.CLAIMED]


def test_a_fetch_of_one_completes_its_own_success_and_claims_for_the_same_worker():
    queued_job()
    running = claim("worker-c")
    waiting = queued_job()
    fetched = services.claim_jobs(
        worker_ids=["worker-c"],
        completions=[Completion(Owner(running.pk, "worker-c", 1), '{"n": 2}')],
    )
    ((completed,), (claimed,)) = fetched.completed, fetched.claimed
    assert (completed.id, claimed.id, claimed.locked_by) == (running.pk, waiting.pk, "worker-c")
    done = fresh(running)
    assert (done.status, done.result) == (Status.SUCCEEDED, {"n": 2})
    assert timeline(done) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]
    assert timeline(fresh(waiting)) == [Event.CREATED, Event.CLAIMED]


def test_a_fetch_of_one_with_a_stale_success_changes_nothing_of_it_and_still_claims(
    stolen_job,
):
    before = stolen_job.events.count()
    waiting = queued_job()
    fetched = services.claim_jobs(
        worker_ids=["worker-a"],
        completions=[Completion(Owner(stolen_job.pk, "worker-a", 1), '{"stale": true}')],
    )
    assert fetched.completed == []
    ((claimed,),) = (fetched.claimed,)
    assert (claimed.id, claimed.locked_by) == (waiting.pk, "worker-a")
    _unchanged(stolen_job, before)


def test_stale_worker_cannot_fail_old_attempt(stolen_job):
    before = stolen_job.events.count()
    assert (
        services.fail_job(job_id=stolen_job.pk, worker_id="worker-a", attempt=1, error="late")
        is None
    )
    _unchanged(stolen_job, before)


def test_stale_worker_cannot_renew_old_attempt(stolen_job):
    before = stolen_job.events.count()
    assert services.renew_lease(job_id=stolen_job.pk, worker_id="worker-a", attempt=1) is None
    _unchanged(stolen_job, before)


def test_stale_worker_cannot_record_progress_for_old_attempt(stolen_job):
    before = stolen_job.events.count()
    assert not services.record_progress(
        job_id=stolen_job.pk, worker_id="worker-a", attempt=1, message="late"
    )
    _unchanged(stolen_job, before)


def test_same_worker_id_with_wrong_attempt_cannot_write(stolen_job):
    before = stolen_job.events.count()
    assert (
        services.complete_job(job_id=stolen_job.pk, worker_id="worker-b", attempt=1, result=1)
        is None
    )
    _unchanged(stolen_job, before)


def test_current_owner_can_still_complete_after_stale_attempts(stolen_job):
    services.complete_job(job_id=stolen_job.pk, worker_id="worker-a", attempt=1, result="old")
    done = services.complete_job(
        job_id=stolen_job.pk, worker_id="worker-b", attempt=2, result="new"
    )
    assert done is not None
    done = fresh(done)
    assert (done.status, done.result) == (Status.SUCCEEDED, "new")


def test_completed_job_cannot_be_completed_or_failed_again():
    queued_job()
    job = claim()
    services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1, result=1)
    assert services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1) is None
    assert services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="e") is None
    assert Job.objects.get(pk=job.pk).status == Status.SUCCEEDED


# --- lease renewal and progress -----------------------------------------------------------


def test_renew_lease_moves_locked_until_forward_and_writes_event():
    queued_job()
    now = timezone.now()
    job = services.claim_next_job(worker_id="worker-a", lease_seconds=30, now=now)
    later = now + timedelta(seconds=20)
    new_until = services.renew_lease(
        job_id=job.pk, worker_id="worker-a", attempt=1, lease_seconds=30, now=later
    )
    assert new_until == later + timedelta(seconds=30)
    job = fresh(job)
    assert job.locked_until == new_until
    assert timeline(job)[-1] == Event.LEASE_RENEWED


def test_record_progress_appends_event_and_leaves_job_unchanged():
    queued_job()
    job = claim()
    before = Job.objects.filter(pk=job.pk).values().get()
    assert services.record_progress(
        job_id=job.pk, worker_id="worker-a", attempt=1, message="half way", data={"pct": 50}
    )
    assert Job.objects.filter(pk=job.pk).values().get() == before
    event = job.events.order_by("-id").first()
    assert (event.type, event.message, event.data) == (Event.PROGRESS, "half way", {"pct": 50})
    assert (event.attempt, event.worker_id) == (1, "worker-a")


# --- cleanup ------------------------------------------------------------------------------


def test_cleanup_requeues_expired_lease_with_backoff_when_attempts_remain():
    queued_job(max_attempts=2)
    now = timezone.now()
    job = services.claim_next_job(worker_id="worker-a", lease_seconds=10, now=now)
    later = now + timedelta(seconds=11)
    result = services.cleanup_expired_jobs(now=later, worker_id="cleaner")
    assert (result.requeued, result.failed) == (1, 0)
    job = fresh(job)
    assert job.status == Status.QUEUED
    assert job.available_at == later + timedelta(seconds=5)
    event = job.events.order_by("-id").first()
    assert event.type == Event.TIMEOUT_REQUEUED
    assert event.worker_id == "cleaner"
    assert event.data["expired_worker_id"] == "worker-a"


def test_cleanup_fails_expired_lease_on_last_attempt():
    queued_job(max_attempts=1)
    now = timezone.now()
    job = services.claim_next_job(worker_id="worker-a", lease_seconds=10, now=now)
    later = now + timedelta(seconds=11)
    result = services.cleanup_expired_jobs(now=later)
    assert (result.requeued, result.failed) == (0, 1)
    job = fresh(job)
    assert job.status == Status.FAILED
    assert job.finished_at == later
    assert "Lease expired" in job.last_error
    assert timeline(job)[-1] == Event.FAILED


def test_cleanup_boundary_second_to_last_attempt_requeues_last_attempt_fails(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    queued_job(max_attempts=2)
    now = timezone.now()
    services.claim_next_job(worker_id="a", lease_seconds=1, now=now)
    now += timedelta(seconds=2)
    assert services.cleanup_expired_jobs(now=now).requeued == 1
    services.claim_next_job(worker_id="b", lease_seconds=1, now=now)
    now += timedelta(seconds=2)
    assert services.cleanup_expired_jobs(now=now).failed == 1


def test_cleanup_ignores_leases_that_have_not_expired():
    queued_job()
    now = timezone.now()
    services.claim_next_job(worker_id="worker-a", lease_seconds=10, now=now)
    assert services.cleanup_expired_jobs(now=now + timedelta(seconds=9)).total == 0
    assert Job.objects.get().status == Status.RUNNING


def test_cleanup_handles_at_most_batch_size_jobs_per_pass():
    now = timezone.now()
    for _ in range(5):
        queued_job(now=now)
        assert services.claim_next_job(worker_id="worker-a", lease_seconds=1, now=now)
    later = now + timedelta(seconds=2)
    assert services.cleanup_expired_jobs(now=later, batch_size=3).total == 3
    assert services.cleanup_expired_jobs(now=later, batch_size=3).total == 2
    assert services.cleanup_expired_jobs(now=later, batch_size=3).total == 0


# --- manual retry -------------------------------------------------------------------------


def test_retry_job_requeues_failed_job_with_fresh_attempts():
    queued_job(max_attempts=1)
    job = claim()
    services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="boom")
    now = timezone.now()
    retried = services.retry_job(job_id=job.pk, now=now)
    retried = fresh(retried)
    assert retried.status == Status.QUEUED
    assert retried.attempts == 0
    assert retried.available_at == now
    assert retried.last_error == "" and retried.result is None
    event = retried.events.order_by("-id").first()
    assert event.type == Event.MANUAL_RETRY
    assert event.data == {
        "previous_status": "failed",
        "previous_attempts": 1,
        "previous_error": "boom",
    }
    again = claim(worker_id="worker-b")
    assert again.attempts == 1


@pytest.mark.parametrize("state", ["queued", "running", "succeeded"])
def test_retry_job_refuses_jobs_that_are_neither_failed_nor_cancelled(state):
    job = queued_job()
    if state != "queued":
        claim()
    if state == "succeeded":
        services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1)
    with pytest.raises(errors.InvalidTransition) as excinfo:
        services.retry_job(job_id=job.pk)
    assert excinfo.value.current_status == state
    assert state in str(excinfo.value)
    assert not job.events.filter(type=Event.MANUAL_RETRY).exists()


def test_retry_job_of_unknown_id_raises_not_found():
    with pytest.raises(errors.JobNotFound):
        services.retry_job(job_id="00000000-0000-0000-0000-000000000000")


# --- atomicity ----------------------------------------------------------------------------


@pytest.fixture
def failing_event_insert():
    """Make the database refuse inserting events of one type, to prove atomicity."""
    created = []

    def install(event_type: str) -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    "CREATE FUNCTION refuse_event() RETURNS trigger AS $$ BEGIN "
                    "RAISE EXCEPTION 'event refused'; END $$ LANGUAGE plpgsql"
                )
                cursor.execute(
                    "CREATE TRIGGER refuse_event BEFORE INSERT ON jobs_jobevent FOR EACH ROW "
                    f"WHEN (NEW.type = '{event_type}') EXECUTE FUNCTION refuse_event()"
                )
            else:
                cursor.execute(
                    "CREATE TRIGGER refuse_event BEFORE INSERT ON jobs_jobevent "
                    f"WHEN NEW.type = '{event_type}' "
                    "BEGIN SELECT RAISE(ABORT, 'event refused'); END"
                )
        created.append(event_type)

    yield install
    if created:
        with connection.cursor() as cursor:
            cursor.execute(
                "DROP TRIGGER IF EXISTS refuse_event"
                + (" ON jobs_jobevent" if connection.vendor == "postgresql" else "")
            )
            if connection.vendor == "postgresql":
                cursor.execute("DROP FUNCTION IF EXISTS refuse_event()")


# Transactional: each service call must be atomic on its own, not inside a test transaction.
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "step", ["claimed", "succeeded", "retry_scheduled", "created", "fused-claimed"]
)
def test_state_change_is_rolled_back_when_its_event_cannot_be_written(failing_event_insert, step):
    job = None if step == "created" else queued_job(max_attempts=2)
    if step in {"succeeded", "retry_scheduled", "fused-claimed"}:
        claim()
    if step == "fused-claimed":
        queued_job()  # the next claim: its refused event must undo the completion too
    snapshot = list(Job.objects.values().order_by("pk"))
    events = JobEvent.objects.count()
    failing_event_insert(step.removeprefix("fused-"))
    with pytest.raises(Exception, match="event refused"):
        if step == "created":
            services.create_job(type="demo.success")
        elif step == "claimed":
            services.claim_next_job(worker_id="worker-b")
        elif step == "succeeded":
            services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1)
        elif step == "fused-claimed":
            complete_and_claim(job, worker_id="worker-a")
        else:
            services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="e")
    assert list(Job.objects.values().order_by("pk")) == snapshot
    assert JobEvent.objects.count() == events


@pytest.mark.parametrize(
    "result",
    [
        {"value": float("nan")},
        {"when": object()},
        {"nul": "a\x00b"},
        ["lone \ud800 surrogate"],
        {"key \udfff": 1},
        functools.reduce(lambda inner, _: [inner], range(100), []),
    ],
    ids=["nan", "object", "nul", "surrogate", "surrogate-key", "too-deep"],
)
def test_complete_refuses_a_result_the_database_cannot_store_and_writes_nothing(result):
    queued_job()
    job = claim()
    events = job.events.count()
    with pytest.raises(UnstorableValue):
        services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1, result=result)
    job = fresh(job)
    assert job.status == Status.RUNNING
    assert job.events.count() == events


# --- the row each transition returns --------------------------------------------------------


def test_every_transition_returns_the_row_it_committed(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    created, _ = services.create_job(type="demo.success", payload={"n": [1, "two"]})
    assert created == job_row(fresh(created))
    claimed = services.claim_next_job(worker_id="worker-a")
    assert claimed == job_row(fresh(claimed))
    retried = services.fail_job(job_id=claimed.pk, worker_id="worker-a", attempt=1, error="e")
    assert retried == job_row(fresh(retried))
    again = services.claim_next_job(worker_id="worker-a")
    done = services.complete_job(
        job_id=again.pk, worker_id="worker-a", attempt=2, result={"deep": {"list": [None]}}
    )
    assert done == job_row(fresh(done))
    assert done.result == {"deep": {"list": [None]}}


def test_manual_retry_returns_the_row_it_committed():
    queued_job(max_attempts=1)
    job = claim()
    services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="boom")
    retried = services.retry_job(job_id=job.pk)
    assert retried == job_row(fresh(retried))


def test_retry_job_requeues_a_cancelled_job_and_clears_its_cancel_request():
    job = queued_job()
    services.cancel_job(job_id=job.pk)
    retried = fresh(services.retry_job(job_id=job.pk))
    assert (retried.status, retried.cancel_requested_at, retried.finished_at) == (
        Status.QUEUED,
        None,
        None,
    )
    assert retried.events.order_by("-id").first().data["previous_status"] == "cancelled"


# --- queues -----------------------------------------------------------------------------------


def test_claim_takes_only_jobs_of_the_queue_it_asks_for():
    emails = queued_job(queue="emails", priority=1)
    default = queued_job(priority=99)
    assert services.claim_next_job(worker_id="w", queue="emails").pk == emails.pk
    assert services.claim_next_job(worker_id="w", queue="emails") is None
    assert services.claim_next_job(worker_id="w").pk == default.pk


def test_active_queues_lists_the_queues_with_queued_jobs_in_name_order():
    queued_job(queue="reports")
    queued_job(queue="emails")
    queued_job(queue="emails")
    queued_job(queue="done", max_attempts=1)
    services.claim_next_job(worker_id="w", queue="done")
    assert selectors.active_queues() == ["emails", "reports"]


def test_not_yet_due_jobs_of_a_higher_priority_do_not_hide_due_ones():
    now = timezone.now()
    for _ in range(3):
        queued_job(priority=100, available_at=now + timedelta(days=1))
    low = queued_job(priority=1, available_at=now - timedelta(seconds=1))
    middle = queued_job(priority=50, available_at=now - timedelta(seconds=1))
    assert [claim(now=now).pk for _ in range(2)] == [middle.pk, low.pk]
    assert services.claim_next_job(worker_id="w", now=now) is None


# --- failure details and timeouts -------------------------------------------------------------


def test_fail_keeps_the_exception_class_and_traceback_in_the_event():
    queued_job(max_attempts=1)
    job = claim()
    details = services.ErrorDetails(
        exception_class="builtins.KeyError", traceback="Traceback ...\nKeyError: 'x'\n"
    )
    services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="'x'", details=details)
    event = fresh(job).events.order_by("-id").first()
    assert event.data == {
        "error": "'x'",
        "exception_class": "builtins.KeyError",
        "traceback": "Traceback ...\nKeyError: 'x'\n",
    }


def test_fail_escapes_text_the_database_cannot_store():
    queued_job(max_attempts=1)
    job = claim()
    services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="a\x00b\ud800c")
    job = fresh(job)
    assert job.status == Status.FAILED
    assert job.last_error == "a\\u0000b\\ud800c"
    assert job.events.order_by("-id").first().message == job.last_error


def test_time_out_retries_with_backoff_like_a_failure_and_says_why():
    queued_job(max_attempts=2)
    job = claim()
    now = timezone.now()
    services.time_out_job(
        job_id=job.pk, worker_id="worker-a", attempt=1, timeout_seconds=2, now=now
    )
    job = fresh(job)
    assert (job.status, job.last_error) == (Status.QUEUED, "Timed out after 2 s")
    assert job.available_at == now + timedelta(seconds=5)
    event = job.events.order_by("-id").first()
    assert (event.type, event.data["reason"]) == (Event.RETRY_SCHEDULED, "timeout")


def test_time_out_of_the_last_attempt_fails_the_job():
    queued_job(max_attempts=1)
    job = claim()
    services.time_out_job(job_id=job.pk, worker_id="worker-a", attempt=1, timeout_seconds=7)
    assert fresh(job).status == Status.FAILED
    assert timeline(job)[-1] == Event.FAILED


def test_time_out_by_a_stale_worker_changes_nothing(stolen_job):
    before = stolen_job.events.count()
    assert (
        services.time_out_job(
            job_id=stolen_job.pk, worker_id="worker-a", attempt=1, timeout_seconds=1
        )
        is None
    )
    _unchanged(stolen_job, before)


# --- heartbeat --------------------------------------------------------------------------------


def test_heartbeat_extends_every_owned_lease_without_an_event():
    now = timezone.now()
    queued_job(now=now)
    queued_job(now=now)
    a = services.claim_next_job(worker_id="a", lease_seconds=10, now=now)
    b = services.claim_next_job(worker_id="b", lease_seconds=10, now=now)
    events = JobEvent.objects.count()
    later = now + timedelta(seconds=5)
    beats = services.heartbeat(
        attempts=[drivers.Owner(a.pk, "a", 1), drivers.Owner(b.pk, "b", 1)],
        lease_seconds=30,
        now=later,
    )
    assert {beat.job_id for beat in beats} == {a.pk, b.pk}
    assert not any(beat.cancel_requested for beat in beats)
    assert {fresh(a).locked_until, fresh(b).locked_until} == {later + timedelta(seconds=30)}
    assert JobEvent.objects.count() == events


def test_heartbeat_leaves_out_attempts_the_process_no_longer_owns(stolen_job):
    until = stolen_job.locked_until
    beats = services.heartbeat(attempts=[drivers.Owner(stolen_job.pk, "worker-a", 1)])
    assert beats == []
    assert fresh(stolen_job).locked_until == until


def test_heartbeat_looks_at_watched_attempts_without_moving_their_leases(stolen_job):
    now = timezone.now()
    queued_job(now=now)
    watched = services.claim_next_job(worker_id="c", lease_seconds=10, now=now)
    services.cancel_job(job_id=watched.pk, now=now)
    events = JobEvent.objects.count()
    beats = services.heartbeat(
        attempts=[],
        watch=[drivers.Owner(watched.pk, "c", 1), drivers.Owner(stolen_job.pk, "worker-a", 1)],
        lease_seconds=30,
        now=now + timedelta(seconds=5),
    )
    assert [(beat.job_id, beat.cancel_requested) for beat in beats] == [(watched.pk, True)]
    assert fresh(watched).locked_until == watched.locked_until
    assert JobEvent.objects.count() == events


def test_heartbeat_reports_a_cancel_request():
    queued_job()
    job = claim()
    services.cancel_job(job_id=job.pk)
    (beat,) = services.heartbeat(attempts=[drivers.Owner(job.pk, "worker-a", 1)])
    assert beat.cancel_requested


# --- cancellation -----------------------------------------------------------------------------


def test_cancel_of_a_queued_job_finishes_it_at_once():
    job = queued_job()
    now = timezone.now()
    cancelled = services.cancel_job(job_id=job.pk, now=now)
    assert cancelled == job_row(fresh(job))
    assert (cancelled.status, cancelled.finished_at) == (Status.CANCELLED, now)
    assert timeline(job) == [Event.CREATED, Event.CANCELLED]
    assert services.claim_next_job(worker_id="w") is None


def test_cancel_of_a_running_job_only_requests_it():
    queued_job()
    job = claim()
    now = timezone.now()
    requested = services.cancel_job(job_id=job.pk, now=now)
    assert (requested.status, requested.cancel_requested_at) == (Status.RUNNING, now)
    assert (requested.locked_by, requested.attempts) == ("worker-a", 1)
    assert timeline(job)[-1] == Event.CANCEL_REQUESTED
    again = services.cancel_job(job_id=job.pk)
    assert again.cancel_requested_at == now
    assert timeline(job).count(Event.CANCEL_REQUESTED) == 1


@pytest.mark.parametrize("ending", ["fail", "time_out", "lease_expiry"])
def test_a_requested_cancel_ends_the_attempt_as_cancelled_whatever_attempts_remain(ending):
    queued_job(max_attempts=5)
    now = timezone.now()
    job = fresh(services.claim_next_job(worker_id="worker-a", lease_seconds=5, now=now))
    services.cancel_job(job_id=job.pk, now=now)
    later = now + timedelta(seconds=6)
    owner = {"job_id": job.pk, "worker_id": "worker-a", "attempt": 1}
    if ending == "fail":
        services.fail_job(**owner, error="JobCancelled: stopped", now=later)
    elif ending == "time_out":
        services.time_out_job(**owner, timeout_seconds=3, now=later)
    else:
        assert services.cleanup_expired_jobs(now=later).total == 1
    job = fresh(job)
    assert (job.status, job.finished_at, job.locked_by) == (Status.CANCELLED, later, None)
    assert timeline(job)[-1] == Event.CANCELLED


def test_a_handler_that_finishes_despite_a_cancel_request_succeeds():
    queued_job()
    job = claim()
    services.cancel_job(job_id=job.pk)
    done = services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1, result=1)
    assert (done.status, done.result) == (Status.SUCCEEDED, 1)
    assert done.cancel_requested_at is not None


@pytest.mark.parametrize("state", ["succeeded", "failed", "cancelled"])
def test_cancel_of_a_finished_job_is_refused_with_its_status(state):
    job = queued_job(max_attempts=1)
    if state == "cancelled":
        services.cancel_job(job_id=job.pk)
    else:
        claim()
        if state == "succeeded":
            services.complete_job(job_id=job.pk, worker_id="worker-a", attempt=1)
        else:
            services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="x")
    events = job.events.count()
    with pytest.raises(errors.InvalidTransition) as excinfo:
        services.cancel_job(job_id=job.pk)
    assert excinfo.value.current_status == state
    assert job.events.count() == events


def test_cancel_of_an_unknown_job_raises_not_found():
    with pytest.raises(errors.JobNotFound):
        services.cancel_job(job_id="00000000-0000-0000-0000-000000000000")


def test_cancel_jobs_by_filter_cancels_queued_and_asks_running_once_each():
    for _ in range(3):
        queued_job("demo.slow")
    queued_job("demo.fail")
    queued_job("demo.slow", queue="other")
    running = claim()  # one demo.slow
    outcome = services.cancel_jobs(type="slow", queue="default")
    assert (outcome.cancelled, outcome.cancel_requested) == (2, 1)
    assert fresh(running).cancel_requested_at is not None
    assert Job.objects.filter(status=Status.CANCELLED, type="demo.slow").count() == 2
    assert Job.objects.filter(status=Status.QUEUED).count() == 2  # demo.fail, other queue
    assert JobEvent.objects.filter(type__in=[Event.CANCELLED, Event.CANCEL_REQUESTED]).count() == 3
    again = services.cancel_jobs(type="slow", queue="default")
    assert (again.cancelled, again.cancel_requested) == (0, 0)


def test_cancel_jobs_by_ids_touches_only_those():
    first, second, third = queued_job(), queued_job(), queued_job()
    outcome = services.cancel_jobs(ids=[first.pk, third.pk])
    assert outcome.cancelled == 2
    assert [fresh(job).status for job in (first, second, third)] == [
        Status.CANCELLED,
        Status.QUEUED,
        Status.CANCELLED,
    ]


def test_the_type_filter_treats_like_wildcards_as_text():
    queued_job("demo.success")
    assert services.cancel_jobs(type="demo_success").cancelled == 0
    assert services.cancel_jobs(type="%").cancelled == 0
    assert services.cancel_jobs(type="DEMO.SUC").cancelled == 1


@pytest.mark.parametrize("action", ["cancel_jobs", "retry_jobs"])
def test_bulk_actions_refuse_an_empty_selection(action):
    queued_job()
    with pytest.raises(errors.EmptySelection):
        getattr(services, action)()
    with pytest.raises(errors.EmptySelection):
        getattr(services, action)(status="", type="", queue="")
    assert Job.objects.get().status == Status.QUEUED


def test_retry_jobs_requeues_failed_and_cancelled_ones_and_skips_the_rest():
    failed = queued_job(max_attempts=1)
    claim()
    services.fail_job(job_id=failed.pk, worker_id="worker-a", attempt=1, error="x")
    cancelled = queued_job()
    services.cancel_job(job_id=cancelled.pk)
    queued = queued_job()
    assert services.retry_jobs(type="demo").retried == 2
    assert {fresh(job).status for job in (failed, cancelled, queued)} == {Status.QUEUED}
    assert JobEvent.objects.filter(type=Event.MANUAL_RETRY).count() == 2
    assert services.retry_jobs(ids=[failed.pk, cancelled.pk, queued.pk]).retried == 0


def _finished_with_key(key: str, status: str = Status.FAILED) -> Job:
    """A job of ``unique_key`` ``key`` that failed for good (or was cancelled)."""
    job = queued_job(unique_key=key, max_attempts=1)
    if status == Status.CANCELLED:
        services.cancel_job(job_id=job.pk)
    else:
        claimed = claim()
        assert claimed is not None and claimed.id == job.pk
        services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="x")
    return fresh(job)


def test_retrying_a_job_whose_unique_key_an_active_job_holds_names_the_holder():
    failed = _finished_with_key("nightly-report")
    holder = queued_job(unique_key="nightly-report")
    before = failed.events.count()
    with pytest.raises(errors.UniqueKeyHeld) as raised:
        services.retry_job(job_id=failed.pk)
    assert (raised.value.held_by, raised.value.unique_key) == (holder.pk, "nightly-report")
    assert raised.value.current_status == Status.FAILED
    assert (fresh(failed).status, failed.events.count()) == (Status.FAILED, before)


def test_a_bulk_retry_retries_the_others_and_reports_the_jobs_held_back():
    held = _finished_with_key("k1")
    free = _finished_with_key("k2")
    holder = queued_job(unique_key="k1")
    outcome = services.retry_jobs(ids=[held.pk, free.pk])
    assert (outcome.retried, outcome.held_count) == (1, 1)
    assert [(h.job_id, h.unique_key, h.held_by) for h in outcome.held] == [
        (held.pk, "k1", holder.pk)
    ]
    assert (fresh(held).status, fresh(free).status) == (Status.FAILED, Status.QUEUED)


def test_of_several_selected_jobs_of_one_key_the_newest_is_retried():
    older = _finished_with_key("k", Status.CANCELLED)
    newer = _finished_with_key("k", Status.CANCELLED)
    outcome = services.retry_jobs(ids=[older.pk, newer.pk])
    assert outcome.retried == 1
    assert [(h.job_id, h.held_by) for h in outcome.held] == [(older.pk, newer.pk)]
    assert (fresh(older).status, fresh(newer).status) == (Status.CANCELLED, Status.QUEUED)


# --- what the database cannot store -------------------------------------------------------------


@pytest.mark.parametrize("payload", [{"a": "\x00"}, {"\ud800": 1}, {"a": ["\udc00"]}])
def test_create_refuses_a_payload_the_database_cannot_store_and_writes_nothing(payload):
    with pytest.raises(UnstorableValue, match="payload"):
        services.create_job(type="demo.success", payload=payload)
    assert not Job.objects.exists() and not JobEvent.objects.exists()


def test_progress_refuses_data_it_cannot_store_and_escapes_its_message():
    queued_job()
    job = claim()
    owner = {"job_id": job.pk, "worker_id": "worker-a", "attempt": 1}
    with pytest.raises(UnstorableValue):
        services.record_progress(**owner, message="m", data={"x": "\x00"})
    assert services.record_progress(**owner, message="half\x00way")
    assert fresh(job).events.order_by("-id").first().message == "half\\u0000way"


# --- complete and claim in one go --------------------------------------------------------------


def test_a_fetch_of_one_completes_then_claims_from_the_queue():
    queued_job(queue="q", priority=9)
    job = claim(queue="q")
    nxt = queued_job(queue="q")
    queued_job(queue="other")
    done, claimed = complete_and_claim(job, worker_id="worker-a", result={"n": 1}, queue="q")
    assert (done.status, done.result) == (Status.SUCCEEDED, {"n": 1})
    assert (claimed.pk, claimed.status, claimed.locked_by) == (nxt.pk, Status.RUNNING, "worker-a")
    assert done == job_row(fresh(done)) and claimed == job_row(fresh(claimed))
    assert timeline(job)[-1] == Event.SUCCEEDED
    assert timeline(nxt) == [Event.CREATED, Event.CLAIMED]


def test_a_fetch_of_one_with_nothing_due_only_completes():
    queued_job()
    job = claim()
    done, claimed = complete_and_claim(job, worker_id="worker-a")
    assert done.status == Status.SUCCEEDED and claimed is None


def test_a_stale_completion_writes_nothing_but_the_claim_still_happens(stolen_job):
    before = stolen_job.events.count()
    other = queued_job()
    done, claimed = complete_and_claim(stolen_job, worker_id="worker-a", result="late")
    assert done is None and claimed.pk == other.pk
    _unchanged(stolen_job, before)


# --- bulk create --------------------------------------------------------------------------------


def test_create_jobs_writes_every_job_and_one_created_event_each_in_order():
    specs = [
        services.NewJobSpec(type="demo.success", payload={"n": n}, queue="q") for n in range(5)
    ]
    results = services.create_jobs(specs)
    assert [created for _, created in results] == [True] * 5
    assert [row.payload for row, _ in results] == [{"n": n} for n in range(5)]
    assert all(row == job_row(fresh(row)) for row, _ in results)
    assert JobEvent.objects.filter(type=Event.CREATED).count() == 5
    assert all(timeline(row) == [Event.CREATED] for row, _ in results)


def test_create_jobs_returns_existing_jobs_for_known_keys_without_writing_them():
    first, _ = services.create_job(type="demo.success", idempotency_key="known")
    results = services.create_jobs(
        [
            services.NewJobSpec(type="demo.fail", idempotency_key="known"),
            services.NewJobSpec(type="demo.fail", idempotency_key="new"),
        ]
    )
    assert [(row.type, created) for row, created in results] == [
        ("demo.success", False),
        ("demo.fail", True),
    ]
    assert results[0][0].pk == first.pk
    assert Job.objects.count() == 2 and JobEvent.objects.count() == 2


def test_create_jobs_refuses_a_key_used_twice_and_writes_nothing():
    specs = [services.NewJobSpec(type="demo.success", idempotency_key=key) for key in "aba"]
    with pytest.raises(errors.DuplicateIdempotencyKey) as excinfo:
        services.create_jobs(specs)
    assert (excinfo.value.first, excinfo.value.index) == (0, 2)
    assert not Job.objects.exists()


def test_create_jobs_is_all_or_nothing_when_one_payload_cannot_be_stored():
    specs = [services.NewJobSpec(type="demo.success", payload={"n": n}) for n in range(3)]
    specs.append(services.NewJobSpec(type="demo.success", payload={"bad": "\x00"}))
    with pytest.raises(UnstorableValue) as excinfo:
        services.create_jobs(specs)
    assert excinfo.value.index == 3
    assert not Job.objects.exists() and not JobEvent.objects.exists()


def test_create_jobs_of_nothing_writes_nothing():
    assert services.create_jobs([]) == []
    assert not Job.objects.exists()


# --- what the events carry for the per-type and per-worker reads --------------------------------


def _event(job, type):
    return JobEvent.objects.filter(job_id=job.pk, type=type).order_by("-id").first()


def test_every_event_carries_its_job_type():
    now = timezone.now()
    job = queued_job("demo.flaky", max_attempts=2, now=now)
    claim(now=now)
    owner = {"job_id": job.pk, "worker_id": "worker-a", "attempt": 1}
    services.record_progress(**owner, message="m", now=now)
    services.renew_lease(**owner, now=now)
    services.cancel_job(job_id=job.pk, now=now)
    services.fail_job(**owner, error="x", now=now)
    services.retry_job(job_id=job.pk, now=now)
    services.cancel_job(job_id=job.pk, now=now)
    types = set(JobEvent.objects.values_list("type", flat=True))
    assert types >= {Event.CREATED, Event.CLAIMED, Event.PROGRESS, Event.LEASE_RENEWED}
    assert types >= {Event.CANCEL_REQUESTED, Event.CANCELLED, Event.MANUAL_RETRY}
    assert set(JobEvent.objects.values_list("job_type", flat=True)) == {"demo.flaky"}


def test_a_claim_records_the_queue_wait_since_the_job_was_due():
    now = timezone.now()
    job = queued_job(available_at=now - timedelta(seconds=3), now=now - timedelta(seconds=10))
    claim(now=now)
    # Due 3 s ago (available_at), though created 10 s ago.
    assert (_event(job, Event.CLAIMED).wait_ms, _event(job, Event.CLAIMED).run_ms) == (3000, None)
    late = queued_job(available_at=now - timedelta(seconds=60), now=now - timedelta(seconds=2))
    claim(now=now)
    # Created after it was due: the wait counts from its creation.
    assert _event(late, Event.CLAIMED).wait_ms == 2000


def test_the_event_ending_an_attempt_carries_its_run_time_and_queue_wait(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 1
    now = timezone.now()
    job = queued_job(max_attempts=3, available_at=now, now=now)
    claim(now=now + timedelta(milliseconds=250))
    owner = {"job_id": job.pk, "worker_id": "worker-a"}
    services.fail_job(**owner, attempt=1, error="x", now=now + timedelta(seconds=2))
    retried = _event(job, Event.RETRY_SCHEDULED)
    assert (retried.wait_ms, retried.run_ms) == (250, 1750)
    # The second attempt is timed from its own claim; its wait from its retry time.
    claim(now=now + timedelta(seconds=3, milliseconds=500))
    services.complete_job(**owner, attempt=2, now=now + timedelta(seconds=4))
    done = _event(job, Event.SUCCEEDED)
    assert (done.attempt, done.wait_ms, done.run_ms) == (2, 500, 500)


def test_lease_expiry_and_a_requested_cancel_are_timed_like_any_attempt_end():
    now = timezone.now()
    expired = queued_job(max_attempts=2, now=now)
    claim(now=now, lease_seconds=1)
    services.cleanup_expired_jobs(now=now + timedelta(seconds=5))
    assert _event(expired, Event.TIMEOUT_REQUEUED).run_ms == 5000
    cancelled = queued_job(priority=99, now=now)
    claim(now=now)
    services.cancel_job(job_id=cancelled.pk, now=now)
    services.fail_job(job_id=cancelled.pk, worker_id="worker-a", attempt=1, error="stop", now=now)
    assert _event(cancelled, Event.CANCELLED).run_ms == 0


def test_cancelling_a_queued_job_ends_no_attempt_so_it_has_no_run_time(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 60
    now = timezone.now()
    job = queued_job(max_attempts=2, now=now)
    claim(now=now)
    services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error="x", now=now)
    services.cancel_job(job_id=job.pk, now=now + timedelta(seconds=1))
    event = _event(job, Event.CANCELLED)
    assert event.attempt == 1 and (event.wait_ms, event.run_ms) == (None, None)


def test_type_samples_take_the_newest_attempts_percentiles_and_newest_failure(driver):
    now = timezone.now()
    for n, run_ms in enumerate([500, 100, 400, 200, 300]):  # oldest first
        at = now - timedelta(minutes=10 - n)
        job = queued_job("demo.success", queue="samples", now=at - timedelta(seconds=n))
        claim(queue="samples", now=at)
        services.complete_job(
            job_id=job.pk,
            worker_id="worker-a",
            attempt=1,
            now=at + timedelta(milliseconds=run_ms),
        )
    for n, error in enumerate(["older", "newest"]):
        at = now - timedelta(minutes=5 - n)
        job = queued_job("demo.fail", queue="samples", max_attempts=1, now=at)
        claim(queue="samples", now=at)
        services.fail_job(job_id=job.pk, worker_id="worker-a", attempt=1, error=error, now=at)
    start = now - timedelta(minutes=30)
    ok, bad, idle = driver.type_samples(
        ["demo.success", "demo.fail", "demo.slow"], start=start, end=now, size=4
    )
    # The newest four runs are 100, 400, 200, 300 ms; the waits 1..4 s.
    assert (ok.job_type, ok.attempts, ok.run_p50_ms, ok.run_p95_ms) == (
        "demo.success",
        4,
        200,
        400,
    )
    assert (ok.wait_p50_ms, ok.wait_p95_ms, ok.last_error) == (2000, 4000, None)
    assert (bad.attempts, bad.run_p95_ms, bad.last_error) == (2, 0, "newest")
    assert bad.last_error_at == now - timedelta(minutes=4)
    assert (idle.attempts, idle.run_p50_ms, idle.last_error_job_id) == (0, None, None)
    (late,) = driver.type_samples(
        ["demo.success"], start=now - timedelta(minutes=7), end=now, size=10
    )
    assert (late.attempts, late.run_p50_ms) == (2, 200)  # only the last two are in range
