"""GET /api/jobs/types/ and GET /api/workers/: shapes, windows, refused parameters, bounded
queries, and the per-minute rollup cache under them (jobs/rollups.py)."""

import itertools
from datetime import datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import handlers, rollups, services
from jobs.drivers import Owner
from tests.factories import running_job

pytestmark = pytest.mark.django_db

# Writers of the events below; the first two are threads of one process.
THREAD_1 = "box:4242:thread-1:00c0ffee"
THREAD_2 = "box:4242:thread-2:00beef00"
OTHER_PROCESS = "other-host:7:thread-1:0000abcd"
QUEUES = itertools.count()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


def attempt(job_type, *, worker, claimed_at, ended_at, fail=None, **create):
    """One attempt of a new job in a queue of its own (so no other job is claimed):
    created at ``claimed_at - 1 s``, ended at ``ended_at``."""
    create.setdefault("queue", f"q{next(QUEUES)}")
    job, _ = services.create_job(type=job_type, now=claimed_at - timedelta(seconds=1), **create)
    claimed = services.claim_next_job(worker_id=worker, now=claimed_at, queue=job.queue)
    assert claimed.pk == job.pk
    owner = {"job_id": job.pk, "worker_id": worker, "attempt": 1}
    if fail is None:
        services.complete_job(**owner, now=ended_at)
    else:
        services.fail_job(**owner, error=fail, now=ended_at)
    return job


def types_by_name(api, **params):
    response = api.get("/api/jobs/types/", params)
    assert response.status_code == 200, response.content
    return response.json(), {entry["type"]: entry for entry in response.json()["types"]}


# --- job types ------------------------------------------------------------------------


def test_types_report_outcomes_failure_rate_percentiles_and_last_error(api):
    base = timezone.now() - timedelta(minutes=10)
    for run_ms in (100, 200, 300, 400):
        attempt(
            "demo.success",
            worker=THREAD_1,
            claimed_at=base,
            ended_at=base + timedelta(milliseconds=run_ms),
        )
    attempt("demo.fail", worker=THREAD_2, claimed_at=base, ended_at=base, fail="first")
    last = attempt(
        "demo.fail",
        worker=THREAD_2,
        claimed_at=base + timedelta(minutes=1),
        ended_at=base + timedelta(minutes=1, seconds=2),
        fail="newest boom",
        max_attempts=1,
    )
    body, types = types_by_name(api)
    assert (body["minutes"], body["bucket_seconds"], body["sample_size_max"]) == (60, 60, 1000)
    ok, bad = types["demo.success"], types["demo.fail"]
    assert ok["counts"] == {
        "claimed": 4,
        "succeeded": 4,
        "retry_scheduled": 0,
        "failed": 0,
        "timed_out": 0,
        "timeout_requeued": 0,
        "cancelled": 0,
        "cancelled_queued": 0,
        "released": 0,
    }
    assert (ok["attempts"], ok["failure_rate"], ok["last_error"]) == (4, 0.0, None)
    # Nearest rank: p50 of 100..400 is the 2nd value, p95 the 4th; each waited 1 s.
    assert (ok["sample_size"], ok["run_ms"], ok["wait_ms"]) == (
        4,
        {"p50": 200, "p95": 400},
        {"p50": 1000, "p95": 1000},
    )
    assert bad["counts"]["retry_scheduled"] == 1 and bad["counts"]["failed"] == 1
    assert (bad["attempts"], bad["failure_rate"]) == (2, 1.0)
    assert bad["last_error"]["message"] == "newest boom"
    assert bad["last_error"]["job_id"] == str(last.pk)
    # One bucket a minute: both failures, a minute apart, 10 and 9 minutes ago.
    assert len(bad["failures"]) == 60 and sum(bad["failures"]) == 2
    assert bad["failures"][-11:-8].count(1) == 2 and sum(ok["failures"]) == 0


def test_timeouts_and_cancels_are_counted_as_such_and_a_cancel_before_running_is_no_attempt(
    api,
):
    now = timezone.now()
    hung, _ = services.create_job(
        type="demo.hang", max_attempts=2, queue="counts", now=now - timedelta(minutes=31)
    )
    for number, minutes in ((1, 30), (2, 10)):
        at = now - timedelta(minutes=minutes)
        services.claim_next_job(worker_id=THREAD_1, queue="counts", now=at)
        services.time_out_job(
            job_id=hung.pk, worker_id=THREAD_1, attempt=number, timeout_seconds=10, now=at
        )
    slow = running_job("demo.slow", worker_id=THREAD_1)
    services.cancel_job(job_id=slow.pk)
    services.fail_job(
        job_id=slow.pk,
        worker_id=THREAD_1,
        attempt=1,
        error="Cancelled",
        details=services.ErrorDetails(reason="cancelled"),
    )
    for _ in range(3):
        job, _ = services.create_job(type="demo.slow", queue="counts-3")
        services.cancel_job(job_id=job.pk)
    _, types = types_by_name(api)
    hang, slow_type = types["demo.hang"], types["demo.slow"]
    assert (hang["counts"]["timed_out"], hang["counts"]["retry_scheduled"]) == (2, 0)
    assert (hang["counts"]["failed"], hang["attempts"], hang["failure_rate"]) == (0, 2, 1.0)
    counts = slow_type["counts"]
    assert (counts["cancelled"], counts["cancelled_queued"]) == (1, 3)
    assert (slow_type["attempts"], slow_type["failure_rate"]) == (1, 0.0)


def test_a_claim_released_before_it_started_is_counted_as_released_and_is_no_attempt(api):
    now = timezone.now()
    job, _ = services.create_job(type="demo.slow", queue="releases", now=now - timedelta(minutes=3))
    services.claim_jobs(worker_ids=[THREAD_1], queue="releases", now=now - timedelta(minutes=2))
    services.release_unstarted_jobs(
        owners=[Owner(job.pk, THREAD_1, 1)], now=now - timedelta(minutes=2)
    )
    services.claim_next_job(worker_id=THREAD_2, queue="releases", now=now - timedelta(minutes=1))
    services.complete_job(job_id=job.pk, worker_id=THREAD_2, attempt=1, now=now)
    _, types = types_by_name(api)
    slow = types["demo.slow"]
    counts = slow["counts"]
    assert (counts["claimed"], counts["released"], counts["succeeded"]) == (2, 1, 1)
    assert (slow["attempts"], slow["failure_rate"], slow["sample_size"]) == (1, 0.0, 1)
    assert sum(slow["failures"]) == 0


def test_registered_types_without_activity_are_listed_with_empty_figures(api):
    _, types = types_by_name(api)
    assert set(types) == set(handlers.registered_types())
    idle = types["demo.slow"]
    assert idle["registered"] and set(idle["counts"].values()) == {0}
    assert (idle["attempts"], idle["failure_rate"], idle["sample_size"]) == (0, None, 0)
    assert idle["run_ms"] == {"p50": None, "p95": None} and idle["last_error"] is None


def test_a_type_without_a_handler_here_is_listed_as_unregistered(api):
    now = timezone.now()
    attempt("elsewhere.only", worker=THREAD_1, claimed_at=now, ended_at=now)
    _, types = types_by_name(api)
    assert types["elsewhere.only"]["registered"] is False
    assert types["elsewhere.only"]["counts"]["succeeded"] == 1


def test_the_window_leaves_out_older_attempts_and_sets_the_sparkline_width(api):
    old = timezone.now() - timedelta(minutes=30)
    attempt("demo.fail", worker=THREAD_1, claimed_at=old, ended_at=old, fail="old")
    body, types = types_by_name(api, minutes=10)
    assert types["demo.fail"]["counts"]["retry_scheduled"] == 0
    assert types["demo.fail"]["last_error"] is None
    assert (body["bucket_seconds"], len(types["demo.fail"]["failures"])) == (60, 10)
    body, types = types_by_name(api, minutes=1440)
    assert types["demo.fail"]["last_error"]["message"] == "old"
    # 1,440 minutes in 60 points of 24 minutes.
    assert (body["bucket_seconds"], len(types["demo.fail"]["failures"])) == (1440, 60)
    assert sum(types["demo.fail"]["failures"]) == 1


@pytest.mark.parametrize("path", ["/api/jobs/types/", "/api/workers/"])
@pytest.mark.parametrize("minutes", ["0", "1441", "abc", "-5", "1.5"])
def test_a_bad_window_is_a_field_error(api, path, minutes):
    response = api.get(path, {"minutes": minutes})
    assert response.status_code == 400
    assert list(response.json()) == ["minutes"]


@pytest.mark.parametrize("path", ["/api/jobs/types/", "/api/workers/"])
def test_queries_stay_bounded_however_many_types_and_workers(
    api, path, django_assert_max_num_queries
):
    now = timezone.now()
    for n in range(12):
        attempt(f"t.{n}", worker=f"box:{n}:thread-1:0a0a", claimed_at=now, ended_at=now)
        running_job(f"t.{n}", worker_id=f"box:{n}:thread-2:0b0b")
        present(f"box:{n}", [f"box:{n}:thread-1:0a0a", f"box:{n}:thread-2:0b0b"])
    cache.clear()
    # Types: the unsettled minutes' rollup, the samples (the ORM driver takes two, runs
    # and failures) and the failures grouped by error; workers: presence rows, running jobs
    # and the rollup (and the abandoned threads' jobs, when a process has any). The
    # PostgreSQL driver's statements count too (they are logged).
    orm_samples = path == "/api/jobs/types/" and connection.vendor != "postgresql"
    types = path == "/api/jobs/types/"
    with django_assert_max_num_queries(3 + orm_samples if types else 3):
        assert api.get(path, {"minutes": 1440}).status_code == 200


# --- workers --------------------------------------------------------------------------


def present(worker_id, threads):
    host, pid = worker_id.rsplit(":", 1)
    services.record_worker_presence(
        worker_id=worker_id,
        hostname=host,
        pid=int(pid),
        queues=["*"],
        threads_configured=len(threads),
        threads=threads,
        heartbeat_interval_seconds=10,
        started_at=timezone.now(),
    )


def test_a_live_worker_counts_the_attempt_endings_of_its_threads_in_the_window(api):
    now = timezone.now()
    present("box:4242", [THREAD_1, THREAD_2])
    for seconds in (50, 40):
        at = now - timedelta(seconds=seconds)
        attempt("demo.success", worker=THREAD_1, claimed_at=at, ended_at=at)
    at = now - timedelta(minutes=20)
    attempt("demo.fail", worker=THREAD_2, claimed_at=at, ended_at=at, fail="x")
    attempt("demo.fail", worker=OTHER_PROCESS, claimed_at=now, ended_at=now, fail="x")
    (process,) = api.get("/api/workers/", {"minutes": 10}).json()["processes"]
    assert (process["worker_id"], process["finished"]) == ("box:4242", 2)
    (process,) = api.get("/api/workers/", {"minutes": 30}).json()["processes"]
    assert process["finished"] == 3


def test_a_worker_seen_only_in_events_is_not_listed(api):
    now = timezone.now()
    attempt("demo.success", worker=THREAD_1, claimed_at=now, ended_at=now)
    running_job(worker_id=THREAD_2)
    assert api.get("/api/workers/").json()["processes"] == []


def _time(text):
    return datetime.fromisoformat(text)


# --- the rollup cache -------------------------------------------------------------------


def test_settled_minutes_are_computed_once_and_the_tail_every_time():
    # Minute 20: the next calls stay in this hour, so it is never settled whole.
    now = timezone.now().replace(minute=20, second=30) - timedelta(hours=1)
    calls = []

    def compute(start, end):
        calls.append((start, end))
        minute = int(start.timestamp()) // 60
        return {m: [("row", m)] for m in range(minute, int(end.timestamp()) // 60 + 1)}

    first = int(now.timestamp()) // 60 - 179  # three hours
    rows = rollups.per_minute("test", first=first, now=now, compute=compute)
    assert list(rows) == list(range(first, first + 180))
    assert rows[first] == [("row", first)]
    # Cold: from the start of the window's first hour.
    assert calls[0][0] == rollups.minute_start(first // 60 * 60)
    later = now + timedelta(minutes=3)
    rows = rollups.per_minute("test", first=first + 3, now=later, compute=compute)
    assert len(rows) == 180 and rows[first + 3] == [("row", first + 3)]
    # Warm: only the minutes that were not settled at the first call.
    settled = (int(now.timestamp()) - rollups.SETTLE_SECONDS) // 60
    assert calls[1][0] == rollups.minute_start(settled)


def test_a_minute_is_not_cached_before_it_settles():
    now = timezone.now().replace(second=10) - timedelta(minutes=1)
    minute = int(now.timestamp()) // 60 - 1  # ended 10 s ago: not settled yet
    seen = []

    def compute(start, end):
        seen.append(start)
        return {}

    rollups.per_minute("test", first=minute, now=now, compute=compute)
    rollups.per_minute("test", first=minute, now=now, compute=compute)
    assert seen == [rollups.minute_start(minute)] * 2
