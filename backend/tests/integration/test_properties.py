"""Property-based test of the queue's state machine (hypothesis.stateful).

Hypothesis drives random interleavings of create, claim, renew, progress, heartbeat,
complete (with storable and unstorable results), fail (with plain and unstorable error
text), timeout, expired-lease cleanup, cancel and manual retry (one job, or a bulk
selection by filters and ids) from three simulated workers, on the real database through
``jobs.services``, with a clock that only moves forward (the services' ``now=``). A
plain-Python model predicts every outcome. After every step, for every job:

* the row matches the model (status, attempts, owner, lease, times, error, cancel
  request); its shape needs no check here, the database's check constraints refuse an
  invalid one (test_models.py);
* a worker's write took effect exactly when it was the current owner (running, same
  ``locked_by``, same ``attempts``); stale and forged writes change nothing;
* replaying the job's events alone gives the row: status, attempts, owner, finish time,
  error, cancel request, and the lease unless a heartbeat moved it (heartbeats write no
  event by design). Each event must be a legal step from the state before it; a
  requested cancel ends the attempt as cancelled whatever attempts remain.

A simulated worker behaves like ``jobs.worker``: it holds at most one attempt at a time and
forgets it once it completes or fails it, or a renewal/progress/heartbeat tells it the lease
is lost. It may hang for any time meanwhile, so its writes can arrive after its lease
expired, and a timed-out attempt's late result still arrives (the guard must refuse it).
A step names a worker; when that one holds nothing (or, for a claim, is busy), the next
worker that can act does, so few steps are idle.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple
from uuid import UUID

import pytest
from django.conf import settings as django_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from jobs import errors, services
from jobs.drivers import Owner
from jobs.models import FINISHED_STATUSES, Job, JobEvent
from jobs.storable import UnstorableValue

Status = Job.Status
Event = JobEvent.Type
WORKERS = ("worker-a", "worker-b", "worker-c")
# The worker processes the threads above belong to; each process heartbeats its own.
PROCESSES = (("worker-a", "worker-b"), ("worker-c",))
CLEANER = "cleaner"
MAX_JOBS = 6
TYPES = ("prop.job", "prop.other")
QUEUES = ("default", "emails")
START = datetime(2030, 1, 1, tzinfo=UTC)
# The services' guard is running + locked_by + attempts: an owner whose lease has expired
# but who has not been cleaned up yet can still renew and finish. The spec's ownership
# also names "locked_until is in the future"; set this to True if the guard adopts it.
OWNER_NEEDS_LIVE_LEASE = False
# Over a whole run: owner writes that took effect, stale/forged ones refused, event types.
SEEN: Counter[str] = Counter()

# A job as clients create them.
NEW_JOB = {
    "max_attempts": st.integers(1, 3),
    "priority": st.sampled_from([0, 50, 50, 100]),
    "delay": st.sampled_from([None, None, 0, 5, 60]),
    "type": st.sampled_from(TYPES),
    "queue": st.sampled_from(QUEUES[:1] * 2 + QUEUES),
}
# What handlers return: storable, or refused before any write (NUL, lone surrogate, NaN,
# nesting past the limit); the worker then fails the attempt naming why.
RESULTS: list[Any] = [
    {"ok": True},
    {"a": "\x00"},
    ["\udfff"],
    {"n": float("nan")},
    functools.reduce(lambda inner, _: [inner], range(80), 1),
]
# Error texts as raised, and as stored (NUL and lone surrogates escaped).
ERRORS = [
    ("boom", "boom"),
    ("nul \x00 inside", "nul \\u0000 inside"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
]
# A worker's steps, each drawn as one argument: hypothesis draws rules with fewer arguments
# more often, and these must keep pace with the clock and cleanup (one argument each) or
# every attempt would end by lease expiry. (worker, lease, queues tried in turn):
CLAIMS = [
    (worker, lease, queues)
    for worker in WORKERS
    for lease in (5, 30)
    for queues in (QUEUES, QUEUES[::-1], QUEUES[:1], QUEUES[1:])
]
# (worker, lease to renew, or None to report progress):
CHECK_INS = [(worker, lease) for worker in WORKERS for lease in (5, 30, None)]
# (worker, how the attempt ends, with what): completions about as often as the other
# endings together, most of them with a storable result.
ENDINGS = [
    *((worker, "complete", result) for worker in WORKERS for result in RESULTS[:1] * 4 + RESULTS),
    *((worker, "fail", error) for worker in WORKERS for error in ERRORS[:1] * 2 + ERRORS),
    *((worker, "time_out", seconds) for worker in WORKERS for seconds in (1, 30)),
    # A stopping worker gives back an attempt whose handler never started.
    *((worker, "release", None) for worker in WORKERS),
    # A handler snoozes: back for later, its attempt not spent.
    *((worker, "snooze", seconds) for worker in WORKERS for seconds in (0, 31)),
]
# The bulk actions' filters (the job list's): status and queue exact, type a substring
# ("p_op" would match "prop" if LIKE's wildcard were not escaped).
SELECTIONS = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(Status.values),
        "type": st.sampled_from(["prop", "OTHER", ".job", "p_op"]),
        "queue": st.sampled_from([*QUEUES, "nowhere"]),
    },
)


def backoff(attempt: int) -> timedelta:
    base = django_settings.JOB_WORKER_BACKOFF_BASE_SECONDS
    cap = django_settings.JOB_WORKER_BACKOFF_MAX_SECONDS
    return timedelta(seconds=min(base * 2 ** (attempt - 1), cap))


@dataclass
class ModelJob:
    id: UUID
    type: str
    queue: str
    priority: int
    max_attempts: int
    available_at: datetime
    created_at: datetime
    status: str = Status.QUEUED
    attempts: int = 0
    locked_by: str | None = None
    locked_until: datetime | None = None
    finished_at: datetime | None = None
    last_error: str = ""
    cancel_requested_at: datetime | None = None
    # The lease was last moved by a heartbeat, which the timeline does not show.
    heartbeat_lease: bool = False

    def owned_by(self, worker: str, attempt: int, now: datetime) -> bool:
        owner = (
            self.status == Status.RUNNING and self.locked_by == worker and self.attempts == attempt
        )
        if OWNER_NEEDS_LIVE_LEASE:
            owner = owner and self.locked_until > now
        return owner

    def end_attempt(self, error: str, now: datetime) -> None:
        """A failed, timed-out or expired attempt: cancelled if asked, else retried while
        attempts remain, else failed."""
        if self.cancel_requested_at is not None:
            self.status = Status.CANCELLED
            self.finished_at = now
        elif self.attempts < self.max_attempts:
            self.status = Status.QUEUED
            self.available_at = now + backoff(self.attempts)
        else:
            self.status = Status.FAILED
            self.finished_at = now
        self.last_error = error
        self.release()

    def release(self) -> None:
        self.locked_by = None
        self.locked_until = None
        self.heartbeat_lease = False


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        Job.objects.all().delete()  # each example starts from an empty queue
        self.now = START
        self.jobs: dict[UUID, ModelJob] = {}
        # What each worker believes it holds: (job id, attempt) or None.
        self.holding: dict[str, tuple[UUID, int] | None] = dict.fromkeys(WORKERS)

    # --- Clock and clients ---------------------------------------------------------------

    @rule(seconds=st.sampled_from([0, 0, 0, 1, 1, 4, 6, 29, 31, 200]))
    def advance_clock(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds, microseconds=1)

    @initialize(jobs=st.lists(st.fixed_dictionaries(NEW_JOB), min_size=2, max_size=4))
    def first_jobs(self, jobs: list[dict[str, Any]]) -> None:
        """Every example starts with a few jobs, so the workers have work from step one."""
        for job in jobs:
            self.create(**job)

    @precondition(lambda self: len(self.jobs) < MAX_JOBS)
    @rule(**NEW_JOB)
    def create(
        self,
        max_attempts: int,
        priority: int,
        delay: int | None,
        type: str = TYPES[0],
        queue: str = QUEUES[0],
    ) -> None:
        # No two jobs share a creation time, so the claim order never falls back to the
        # random uuid: the same steps then give the same states, which hypothesis needs.
        self.now += timedelta(microseconds=1)
        available_at = None if delay is None else self.now + timedelta(seconds=delay)
        job, created = services.create_job(
            type=type,
            queue=queue,
            priority=priority,
            available_at=available_at,
            max_attempts=max_attempts,
            now=self.now,
        )
        assert created
        self.jobs[job.pk] = ModelJob(
            id=job.pk,
            type=type,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            available_at=available_at or self.now,
            created_at=self.now,
        )

    # --- Workers -------------------------------------------------------------------------

    @rule(claimer=st.sampled_from(CLAIMS))
    def claim_next(self, claimer: tuple[str, int, tuple[str, ...]]) -> None:
        self.claim(*claimer)

    def claim(self, worker: str, lease: int, queues: tuple[str, ...] = QUEUES[:1]) -> None:
        """A free worker thread (``worker`` or the next free one: a thread runs one job at
        a time) tries its queues in turn, as ``WorkerThread.claim`` does."""
        start = WORKERS.index(worker)
        free = [name for name in WORKERS[start:] + WORKERS[:start] if self.holding[name] is None]
        if not free:
            return
        worker = free[0]
        for queue in queues:
            if self.claim_from(queue, worker, lease):
                return

    def claim_from(self, queue: str, worker: str, lease: int) -> bool:
        eligible = [
            j
            for j in self.jobs.values()
            if j.status == Status.QUEUED
            and j.queue == queue
            and j.available_at <= self.now
            and j.attempts < j.max_attempts
        ]
        expected = min(
            eligible,
            key=lambda j: (-j.priority, j.available_at, j.created_at, j.id),
            default=None,
        )
        got = services.claim_next_job(
            worker_id=worker, queue=queue, lease_seconds=lease, now=self.now
        )
        assert (got and got.pk) == (expected and expected.id)
        if expected is None:
            return False
        expected.status = Status.RUNNING
        expected.attempts += 1
        expected.locked_by = worker
        expected.locked_until = self.now + timedelta(seconds=lease)
        expected.last_error = ""
        assert (got.attempts, got.locked_by, got.locked_until) == (
            expected.attempts,
            worker,
            expected.locked_until,
        )
        self.holding[worker] = (expected.id, expected.attempts)
        return True

    @rule(step=st.sampled_from(CHECK_INS))
    def check_in(self, step: tuple[str, int | None]) -> None:
        worker, lease = step
        if lease is None:
            self.progress(worker)
        else:
            self.renew(worker, lease)

    @rule(step=st.sampled_from(ENDINGS))
    def finish(self, step: tuple[str, str, Any]) -> None:
        worker, how, value = step
        {
            "complete": self.complete,
            "fail": self.fail,
            "time_out": self.time_out,
            "release": self.release_unstarted,
            "snooze": self.snooze,
        }[how](worker, value)

    def _attempt_of(self, worker: str) -> tuple[ModelJob, int, bool] | None:
        """The attempt ``worker`` holds and whether it still owns it, or ``None``."""
        held = self.holding[worker]
        if held is None:
            return None
        job_id, attempt = held
        job = self.jobs[job_id]
        owner = job.owned_by(worker, attempt, self.now)
        SEEN["effective writes" if owner else "rejected writes"] += 1
        return job, attempt, owner

    def _acting(self, worker: str) -> tuple[str, ModelJob, int, bool] | None:
        """``worker`` and its attempt if it holds one, else the next worker that does, so a
        step is idle only when no worker holds anything. (Not a precondition: which job a
        worker holds can depend on how the database breaks ties between equal leases.)"""
        start = WORKERS.index(worker)
        for name in WORKERS[start:] + WORKERS[:start]:
            if (held := self._attempt_of(name)) is not None:
                return name, *held
        return None

    def renew(self, worker: str, lease: int) -> None:
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        until = services.renew_lease(
            job_id=job.id, worker_id=worker, attempt=attempt, lease_seconds=lease, now=self.now
        )
        if owner:
            assert until == self.now + timedelta(seconds=lease)
            job.locked_until = until
            job.heartbeat_lease = False
        else:
            assert until is None
            self.holding[worker] = None  # LeaseLost

    def progress(self, worker: str) -> None:
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        recorded = services.record_progress(
            job_id=job.id, worker_id=worker, attempt=attempt, message="step", now=self.now
        )
        assert recorded is owner
        if not owner:
            self.holding[worker] = None

    @rule(workers=st.sampled_from(PROCESSES), lease=st.sampled_from([5, 30]))
    def heartbeat(self, workers: tuple[str, ...], lease: int) -> None:
        """One process's heartbeat over the attempts its threads hold, in one call."""
        held = {worker: h for worker in workers if (h := self._attempt_of(worker))}
        beats = services.heartbeat(
            attempts=[Owner(job.id, worker, attempt) for worker, (job, attempt, _) in held.items()],
            lease_seconds=lease,
            now=self.now,
        )
        owned = {job.id: job for job, _, owner in held.values() if owner}
        assert {beat.job_id: beat.cancel_requested for beat in beats} == {
            job_id: job.cancel_requested_at is not None for job_id, job in owned.items()
        }
        for job in owned.values():
            job.locked_until = self.now + timedelta(seconds=lease)
            job.heartbeat_lease = True
        for worker, (_, _, owner) in held.items():
            if not owner:
                self.holding[worker] = None  # the heartbeat reports the attempt lost
        SEEN["heartbeats"] += 1

    def complete(self, worker: str, result: Any = RESULTS[0]) -> None:
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        self.holding[worker] = None
        try:
            done = services.complete_job(
                job_id=job.id, worker_id=worker, attempt=attempt, result=result, now=self.now
            )
        except UnstorableValue as exc:
            # Refused before any write; the worker fails the attempt saying why.
            SEEN["unstorable results"] += 1
            error = f"Handler returned a result that cannot be stored: {exc}"
            self.record_failure(job, worker, attempt, owner, error, error)
            return
        assert result == RESULTS[0], "an unstorable result was accepted"
        if not owner:
            assert done is None
            return
        assert done is not None and done.status == Status.SUCCEEDED
        assert done.result == result
        # A cancel requested meanwhile does not undo finished work.
        job.status = Status.SUCCEEDED
        job.finished_at = self.now
        job.release()

    def fail(self, worker: str, error: tuple[str, str] = ERRORS[0]) -> None:
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        self.holding[worker] = None
        self.record_failure(job, worker, attempt, owner, *error)

    def record_failure(
        self, job: ModelJob, worker: str, attempt: int, owner: bool, error: str, stored: str
    ) -> None:
        failed = services.fail_job(
            job_id=job.id, worker_id=worker, attempt=attempt, error=error, now=self.now
        )
        if not owner:
            assert failed is None
            return
        job.end_attempt(stored, self.now)
        assert failed is not None and failed.status == job.status

    def release_unstarted(self, worker: str, _: Any = None) -> None:
        """A stopping worker gives back the attempt it claimed but never started: queued
        again, its attempt not spent; cancelled instead if a cancel was requested."""
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        self.holding[worker] = None
        rows = services.release_unstarted_jobs(
            owners=[Owner(job.id, worker, attempt)], now=self.now
        )
        if not owner:
            assert rows == []
            return
        if job.cancel_requested_at is not None:
            job.status = Status.CANCELLED
            job.finished_at = self.now
            job.last_error = "Cancelled before its handler started"
        else:
            job.status = Status.QUEUED
            job.attempts -= 1
        job.release()
        SEEN["released"] += 1
        assert [row.status for row in rows] == [job.status]

    def snooze(self, worker: str, seconds: int) -> None:
        """The handler snoozes: queued again at now + ``seconds``, its attempt not spent;
        cancelled instead if a cancel was requested."""
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        self.holding[worker] = None
        row = services.snooze_job(
            job_id=job.id, worker_id=worker, attempt=attempt, seconds=seconds, now=self.now
        )
        if not owner:
            assert row is None
            return
        if job.cancel_requested_at is not None:
            job.status = Status.CANCELLED
            job.finished_at = self.now
            job.last_error = "Cancelled while snoozing"
        else:
            job.status = Status.QUEUED
            job.attempts -= 1
            job.available_at = self.now + timedelta(seconds=seconds)
        job.release()
        SEEN["snoozed"] += 1
        assert row is not None and row.status == job.status

    def time_out(self, worker: str, seconds: int) -> None:
        """The maintenance thread ends a held attempt at its deadline. The handler's thread
        is abandoned but still holds the attempt: its late result must be refused."""
        acting = self._acting(worker)
        if acting is None:
            return
        worker, job, attempt, owner = acting
        row = services.time_out_job(
            job_id=job.id, worker_id=worker, attempt=attempt, timeout_seconds=seconds, now=self.now
        )
        if not owner:
            assert row is None
            self.holding[worker] = None
            return
        job.end_attempt(f"Timed out after {seconds} s", self.now)
        assert row is not None and row.status == job.status

    @precondition(lambda self: self.jobs)
    @rule(data=st.data(), worker=st.sampled_from(WORKERS), offset=st.sampled_from([-1, 0, 1]))
    def forged_write(self, data: st.DataObject, worker: str, offset: int) -> None:
        """A write naming a (worker, attempt) that does not own the job changes nothing."""
        self.forge(self.jobs[data.draw(st.sampled_from(list(self.jobs)))], worker, offset)

    def forge(self, job: ModelJob, worker: str, offset: int) -> None:
        attempt = job.attempts + offset
        if job.owned_by(worker, attempt, self.now):
            return
        SEEN["rejected writes"] += 1
        kwargs = {"job_id": job.id, "worker_id": worker, "attempt": attempt, "now": self.now}
        assert services.renew_lease(**kwargs) is None
        assert services.record_progress(**kwargs, message="forged") is False
        assert services.complete_job(**kwargs, result={"forged": True}) is None
        assert services.fail_job(**kwargs, error="forged") is None
        assert services.time_out_job(**kwargs, timeout_seconds=1) is None
        assert services.heartbeat(attempts=[Owner(job.id, worker, attempt)], now=self.now) == []

    # --- Maintenance and operators -------------------------------------------------------

    @rule(batch=st.sampled_from([1, 100]))
    def cleanup(self, batch: int) -> None:
        expired = [
            j
            for j in self.jobs.values()
            if j.status == Status.RUNNING and j.locked_until < self.now
        ]
        result = services.cleanup_expired_jobs(now=self.now, batch_size=batch, worker_id=CLEANER)
        assert result.total == min(batch, len(expired))
        rows = {r.pk: r for r in Job.objects.filter(pk__in=[j.id for j in expired])}
        cleaned = [j for j in expired if rows[j.id].status != Status.RUNNING]
        assert len(cleaned) == result.total
        if cleaned and batch < len(expired):
            # The oldest lease goes first.
            assert cleaned[0].locked_until == min(j.locked_until for j in expired)
        for job in cleaned:
            job.end_attempt(services.LEASE_EXPIRED_ERROR, self.now)
        requeued = sum(1 for job in cleaned if job.status == Status.QUEUED)
        assert (result.requeued, result.failed) == (requeued, len(cleaned) - requeued)

    @precondition(lambda self: self.jobs)
    @rule(
        data=st.data(),
        action=st.sampled_from(["retry", "retry", "cancel", "run_now"]),
        bulk=st.booleans(),
        filters=SELECTIONS,
    )
    def operator(self, data: st.DataObject, action: str, bulk: bool, filters: dict) -> None:
        """Retry or cancel one job, or a bulk selection (filters and/or ids). Cancels are
        drawn half as often as retries so that the six jobs are not all cancelled early."""
        if action == "run_now":  # one job at a time
            self.run_now(self.jobs[data.draw(st.sampled_from(list(self.jobs)))])
            return
        if bulk:
            ids = self.draw_ids(data)
            (self.retry_many if action == "retry" else self.cancel_many)(ids, **filters)
        else:
            job = self.jobs[data.draw(st.sampled_from(list(self.jobs)))]
            (self.retry if action == "retry" else self.cancel_one)(job)

    def draw_ids(self, data: st.DataObject) -> list[UUID] | None:
        """No ids (filters only), or a few (possibly none)."""
        jobs = st.sampled_from(list(self.jobs))
        return data.draw(st.none() | st.lists(jobs, unique=True, max_size=3))

    def retry(self, job: ModelJob) -> None:
        if job.status not in (Status.FAILED, Status.CANCELLED):
            with pytest.raises(errors.InvalidTransition) as raised:
                services.retry_job(job_id=job.id, now=self.now)
            assert raised.value.current_status == job.status
            return
        retried = services.retry_job(job_id=job.id, now=self.now)
        assert (retried.status, retried.attempts) == (Status.QUEUED, 0)
        self.requeue_by_hand(job)

    def run_now(self, job: ModelJob) -> None:
        """A queued job not yet due becomes due now; any other job is refused, unchanged."""
        if job.status != Status.QUEUED or job.available_at <= self.now:
            with pytest.raises(errors.InvalidTransition) as raised:
                services.run_job_now(job_id=job.id, now=self.now)
            assert raised.value.current_status == job.status
            return
        row = services.run_job_now(job_id=job.id, now=self.now)
        job.available_at = self.now
        assert (row.status, row.available_at) == (Status.QUEUED, self.now)

    def requeue_by_hand(self, job: ModelJob) -> None:
        job.status = Status.QUEUED
        job.attempts = 0
        job.available_at = self.now
        job.finished_at = None
        job.last_error = ""
        job.cancel_requested_at = None

    def cancel_one(self, job: ModelJob) -> None:
        if job.status in FINISHED_STATUSES:
            with pytest.raises(errors.InvalidTransition) as raised:
                services.cancel_job(job_id=job.id, now=self.now)
            assert raised.value.current_status == job.status
            return
        row = services.cancel_job(job_id=job.id, now=self.now)
        self.cancel_in_model(job)
        assert (row.status, row.cancel_requested_at) == (job.status, job.cancel_requested_at)

    def cancel_in_model(self, job: ModelJob) -> str | None:
        """Queued: cancelled now. Running and not asked yet: asked. Otherwise unchanged."""
        if job.status == Status.QUEUED:
            job.status = Status.CANCELLED
            job.finished_at = job.cancel_requested_at = self.now
            return "cancelled"
        if job.status == Status.RUNNING and job.cancel_requested_at is None:
            job.cancel_requested_at = self.now
            return "cancel_requested"
        return None

    def selected(self, ids: list[UUID] | None, **filters: str) -> list[ModelJob]:
        return [
            job
            for job in self.jobs.values()
            if (ids is None or job.id in ids)
            and filters.get("status", job.status) == job.status
            and filters.get("type", "").lower() in job.type.lower()
            and filters.get("queue", job.queue) == job.queue
        ]

    def cancel_many(self, ids: list[UUID] | None, **filters: str) -> None:
        if ids is None and not filters:
            with pytest.raises(errors.EmptySelection):
                services.cancel_jobs(now=self.now)
            return
        outcome = services.cancel_jobs(ids=ids, now=self.now, **filters)
        changes = Counter(self.cancel_in_model(job) for job in self.selected(ids, **filters))
        assert (outcome.cancelled, outcome.cancel_requested) == (
            changes["cancelled"],
            changes["cancel_requested"],
        )
        SEEN["bulk cancels"] += 1

    def retry_many(self, ids: list[UUID] | None, **filters: str) -> None:
        if ids is None and not filters:
            with pytest.raises(errors.EmptySelection):
                services.retry_jobs(now=self.now)
            return
        outcome = services.retry_jobs(ids=ids, now=self.now, **filters)
        selected = [
            job
            for job in self.selected(ids, **filters)
            if job.status in (Status.FAILED, Status.CANCELLED)
        ]
        assert (outcome.retried, outcome.held_count) == (len(selected), 0)
        for job in selected:
            self.requeue_by_hand(job)
        SEEN["bulk retries"] += 1

    # --- Checked after every step --------------------------------------------------------

    @invariant()
    def rows_match_the_model(self) -> None:
        rows = {row.pk: row for row in Job.objects.all()}
        assert set(rows) == set(self.jobs)
        for job_id, row in rows.items():
            model = self.jobs[job_id]
            assert (
                row.status,
                row.attempts,
                row.locked_by,
                row.locked_until,
                row.available_at,
                row.finished_at,
                row.last_error,
                row.cancel_requested_at,
            ) == (
                model.status,
                model.attempts,
                model.locked_by,
                model.locked_until,
                model.available_at,
                model.finished_at,
                model.last_error,
                model.cancel_requested_at,
            )

    @invariant()
    def events_replay_to_the_row(self) -> None:
        events: dict[UUID, list[Recorded]] = {job_id: [] for job_id in self.jobs}
        for values in JobEvent.objects.order_by("id").values_list(*Recorded._fields):
            event = Recorded(*values)
            events[event.job_id].append(event)
            SEEN[event.type] += 1
        for job_id, timeline in events.items():
            model = self.jobs[job_id]
            replayed = replay(timeline)
            lease = replayed.pop("locked_until")
            if not model.heartbeat_lease:  # else the row's lease is newer than any event
                assert lease == model.locked_until
            assert replayed == {
                "status": model.status,
                "attempts": model.attempts,
                "locked_by": model.locked_by,
                "finished_at": model.finished_at,
                "last_error": model.last_error,
                "cancel_requested_at": model.cancel_requested_at,
            }

    def teardown(self) -> None:
        Job.objects.all().delete()


class Recorded(NamedTuple):
    """An event as the replay reads it: plain values, cheaper than model instances."""

    job_id: UUID
    type: str
    attempt: int
    worker_id: str | None
    data: dict[str, Any]
    created_at: datetime


def replay(timeline: list[Recorded]) -> dict[str, Any]:
    """Rebuild the row from the events alone, checking that each event is a legal step
    from the state before it. ``locked_until`` is the lease the events last set."""
    assert timeline and timeline[0].type == Event.CREATED
    row: dict[str, Any] = {
        "status": Status.QUEUED,
        "attempts": 0,
        "locked_by": None,
        "locked_until": None,
        "finished_at": None,
        "last_error": "",
        "cancel_requested_at": None,
    }
    for event in timeline[1:]:
        kind, status = event.type, row["status"]
        if kind == Event.CLAIMED:
            assert status == Status.QUEUED
            assert event.attempt == row["attempts"] + 1
            row.update(
                status=Status.RUNNING,
                attempts=event.attempt,
                locked_by=event.worker_id,
                locked_until=datetime.fromisoformat(event.data["locked_until"]),
                last_error="",
            )
            continue
        if kind == Event.RELEASED:  # claimed, never started: back, attempt not spent
            assert status == Status.RUNNING and row["cancel_requested_at"] is None
            assert event.attempt == row["attempts"] and event.worker_id == row["locked_by"]
            row.update(status=Status.QUEUED, attempts=event.attempt - 1)
            row.update(locked_by=None, locked_until=None)
            continue
        if kind == Event.SNOOZED:  # its handler asked for later: back, attempt not spent
            assert status == Status.RUNNING and row["cancel_requested_at"] is None
            assert event.attempt == row["attempts"] and event.worker_id == row["locked_by"]
            row.update(status=Status.QUEUED, attempts=event.attempt - 1)
            row.update(locked_by=None, locked_until=None)
            continue
        if kind == Event.RUN_NOW:  # an operator made a queued job due: nothing else moves
            assert status == Status.QUEUED and event.attempt == row["attempts"]
            assert event.worker_id is None
            continue
        if kind == Event.MANUAL_RETRY:
            assert status in (Status.FAILED, Status.CANCELLED)
            assert event.data["previous_status"] == status
            row.update(
                status=Status.QUEUED,
                attempts=0,
                finished_at=None,
                last_error="",
                cancel_requested_at=None,
            )
            continue
        assert event.attempt == row["attempts"]
        if kind == Event.CANCELLED and status == Status.QUEUED:  # before it ran
            assert event.worker_id is None
            row.update(
                status=Status.CANCELLED,
                finished_at=event.created_at,
                cancel_requested_at=event.created_at,
            )
            continue
        # Every other event concerns the running attempt.
        assert status == Status.RUNNING, (kind, status)
        if kind == Event.CANCEL_REQUESTED:  # by an operator, once
            assert event.worker_id is None and row["cancel_requested_at"] is None
            row["cancel_requested_at"] = event.created_at
            continue
        if "expired_worker_id" in event.data:  # written by cleanup, naming the lost owner
            assert kind in (Event.TIMEOUT_REQUEUED, Event.FAILED, Event.CANCELLED)
            assert event.data["expired_worker_id"] == row["locked_by"]
        else:
            assert event.worker_id == row["locked_by"]
        if kind == Event.LEASE_RENEWED:
            row["locked_until"] = datetime.fromisoformat(event.data["locked_until"])
            continue
        if kind == Event.PROGRESS:
            continue
        # The attempt ends. Once a cancel was requested, only success or cancelled.
        asked = row["cancel_requested_at"] is not None
        if kind == Event.SUCCEEDED:
            row["status"], row["finished_at"] = Status.SUCCEEDED, event.created_at
        elif kind == Event.CANCELLED:
            assert asked
            row["status"], row["finished_at"] = Status.CANCELLED, event.created_at
        elif kind in (Event.RETRY_SCHEDULED, Event.TIMEOUT_REQUEUED):
            assert not asked
            row["status"] = Status.QUEUED
        elif kind == Event.FAILED:
            assert not asked
            row["status"], row["finished_at"] = Status.FAILED, event.created_at
        else:
            raise AssertionError(f"unexpected event {kind}")
        if kind != Event.SUCCEEDED:
            row["last_error"] = event.data["error"]
        row.update(locked_by=None, locked_until=None)
    return row


@pytest.mark.django_db
def test_random_interleavings_keep_invariants_ownership_and_event_replay():
    SEEN.clear()
    run_state_machine_as_test(
        QueueMachine,
        settings=settings(
            max_examples=int(os.environ.get("JOB_PROPERTY_EXAMPLES", "120")),
            stateful_step_count=50,
            deadline=None,
            database=None,
            # Every run explores new interleavings; a failure prints the blob that replays it
            # (@reproduce_failure), and the shrunk steps.
            print_blob=True,
            # Hypothesis' CI profile would derandomize; its fixed sequence here happens to
            # never fail a job, so CI explores randomly too.
            derandomize=False,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    # The run really exercised the guard both ways (test_scripted_walk... covers every
    # transition deterministically; random runs vary too much to require each one).
    assert SEEN["effective writes"] and SEEN["rejected writes"], SEEN
    assert SEEN[Event.CLAIMED] and SEEN[Event.SUCCEEDED], SEEN
    print(f"\n[property] {dict(SEEN)}")


@pytest.mark.django_db
def test_scripted_walk_through_every_transition_passes_the_same_checks():
    """One fixed interleaving through every event type, checked like the random ones."""
    machine = QueueMachine()

    def step(action, *args, **kwargs):
        action(*args, **kwargs)
        machine.rows_match_the_model()
        machine.events_replay_to_the_row()

    step(machine.create, max_attempts=2, priority=50, delay=None)
    (job,) = machine.jobs.values()

    def row() -> tuple[str, int]:
        """The database's status and attempts (the model's are the test's own guess)."""
        stored = Job.objects.get(pk=job.id)
        return stored.status, stored.attempts

    step(machine.claim, "worker-a", lease=5)
    step(machine.renew, "worker-a", lease=5)
    step(machine.progress, "worker-a")
    step(machine.heartbeat, PROCESSES[0], lease=5)
    step(machine.advance_clock, 6)  # worker-a hangs past its lease
    step(machine.cleanup, 100)
    assert row() == (Status.QUEUED, 1)  # timeout_requeued
    step(machine.complete, "worker-a")  # stale: refused
    assert row() == (Status.QUEUED, 1)
    step(machine.advance_clock, 200)
    step(machine.claim, "worker-b", lease=30)
    step(machine.forge, job, "worker-a", 0)
    step(machine.forge, job, "worker-b", -1)
    step(machine.fail, "worker-b", ERRORS[1])  # a NUL in the error text: escaped
    assert row() == (Status.FAILED, 2)
    step(machine.retry, job)
    step(machine.claim, "worker-c", lease=30)
    step(machine.release_unstarted, "worker-c")  # stopping before it started
    assert row() == (Status.QUEUED, 0)
    step(machine.claim, "worker-c", lease=30)
    step(machine.snooze, "worker-c", 31)  # its handler asks to run later
    assert row() == (Status.QUEUED, 0)
    step(machine.advance_clock, 31)
    step(machine.claim, "worker-c", lease=30)
    step(machine.complete, "worker-c", RESULTS[1])  # an unstorable result fails the attempt
    assert row() == (Status.QUEUED, 1)  # retry_scheduled
    step(machine.run_now, job)  # its backoff cut short by an operator
    step(machine.run_now, job)  # refused: already due
    step(machine.advance_clock, 200)
    step(machine.claim, "worker-a", lease=30)
    step(machine.cancel_one, job)  # running: cancel_requested
    step(machine.heartbeat, PROCESSES[0], lease=30)  # reports the request
    step(machine.time_out, "worker-a", 30)  # ignored: cancelled at the timeout, not retried
    assert row() == (Status.CANCELLED, 2)
    step(machine.complete, "worker-a")  # the abandoned handler's late result: refused
    step(machine.retry_many, [job.id])
    step(machine.cancel_many, None, type="PROP", queue="default")  # queued: cancelled now
    assert row() == (Status.CANCELLED, 0)
    step(machine.retry, job)
    step(machine.claim, "worker-b", lease=30)
    step(machine.cancel_many, [job.id], status=Status.RUNNING)
    step(machine.complete, "worker-b")  # finished despite the request: succeeded
    assert row() == (Status.SUCCEEDED, 1)
    step(machine.retry, job)  # refused: only failed or cancelled jobs
    step(machine.cancel_one, job)  # refused: finished
    types = set(JobEvent.objects.filter(job_id=job.id).values_list("type", flat=True))
    assert types == set(Event.values)
    machine.teardown()
