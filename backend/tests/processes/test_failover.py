"""PostgreSQL failover under load, on clusters each test builds for itself: a primary
(``initdb``) and a streaming standby (``pg_basebackup -R``) in temporary directories on free
ports, both listed in the app's ``POSTGRES_HOST``/``POSTGRES_PORT``.

Under load (gunicorn creating jobs at a steady rate, three ``run_job_workers`` processes of
four threads, a one-second schedule, a queue limited to two running jobs), the primary's
postmaster is killed (-9) or frozen (SIGSTOP of it and its backends), the standby promoted a
few seconds later, and nothing is restarted. Handlers record each run in files of their own
(``tests.failover_handlers``), so what ran is known whatever the database lost.

The tests read the clusters only (psycopg), never this run's database, so they run once,
on `make test`'s SQLite pass (``engine_independent``); `make test-failover` runs them alone
with their figures. Without PostgreSQL's server binaries they fail in CI, skip elsewhere.
"""

from __future__ import annotations

import calendar
import contextlib
import json
import os
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from harness import (
    HttpServer,
    PrivatePostgres,
    WorkerProcess,
    postgres_bin_dir,
    serve_api,
    wait_until,
)
from jobs.drivers.deadline import PROBE_SECONDS as DEADLINE_PROBE_SECONDS
from jobs.worker.recovery import DB_RETRY_MAX_SECONDS
from tests.conftest import IN_CI
from tests.helpers import HealthPoller, child_env, figures

pytestmark = [pytest.mark.slow, pytest.mark.failover, pytest.mark.engine_independent]

HANDLERS = "tests.failover_handlers"
LEASE = 6  # seconds: attempts in flight at the kill are re-run within the test
LIMITED = "limited"  # the queue with a concurrency limit
LIMIT = 2
CREATES_PER_SECOND = 20
TERMINAL = ("succeeded", "failed", "cancelled")


# --- The cluster -------------------------------------------------------------------------


@dataclass
class Cluster:
    primary: PrivatePostgres
    standby: PrivatePostgres

    def env(self, **extra: str) -> dict[str, str]:
        """The app's settings: both servers, the primary first, read-write sessions."""
        settings = {
            "DATABASE_ENGINE": "postgres",
            "POSTGRES_HOST": "127.0.0.1,127.0.0.1",
            "POSTGRES_PORT": f"{self.primary.port},{self.standby.port}",
            "POSTGRES_DB": self.primary.database,
            "POSTGRES_USER": "postgres",
            "POSTGRES_PASSWORD": "postgres",
            "POSTGRES_TARGET_SESSION_ATTRS": "read-write",
        }
        return child_env(**{**settings, **extra})


def build_cluster(*, synchronous: bool) -> Iterator[Cluster]:
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        if IN_CI:
            pytest.fail("PostgreSQL server binaries (initdb, pg_basebackup) are required in CI")
        pytest.skip("PostgreSQL server binaries (initdb, pg_basebackup) not installed")
    primary = PrivatePostgres(bin_dir, name="primary")
    standby = None
    try:
        primary.init_and_start()
        primary.migrate(child_env())
        standby = primary.standby("standby")
        if synchronous:
            primary.set_synchronous_standbys("standby")
        primary.wait_for_standby("standby", state="sync" if synchronous else "async")
        yield Cluster(primary, standby)
    finally:
        primary.destroy()
        if standby is not None:
            standby.destroy()


@pytest.fixture
def sync_cluster() -> Iterator[Cluster]:
    yield from build_cluster(synchronous=True)


@pytest.fixture
def async_cluster() -> Iterator[Cluster]:
    yield from build_cluster(synchronous=False)


# --- The load ----------------------------------------------------------------------------


class Creator(threading.Thread):
    """Creates jobs through the API at a steady rate, recording every answer: (monotonic
    time, status, job id or None, queue). Every fifth job goes to the limited queue."""

    def __init__(self, api: HttpServer, rate: float = CREATES_PER_SECOND) -> None:
        super().__init__(daemon=True)
        self.api = api
        self.interval = 1 / rate
        self.answers: list[tuple[float, int, str | None, str]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self.stopping.is_set():
            queue = LIMITED if n % 5 == 0 else "default"
            body = {"type": "failover.record", "queue": queue, "payload": {"seconds": 0.3}}
            status, answer = self.api.json("POST", "/api/jobs/", body=body)
            job_id = answer.get("id") if status == 201 and isinstance(answer, dict) else None
            self.answers.append((time.monotonic(), status, job_id, queue))
            n += 1
            next_at += self.interval
            self.stopping.wait(max(0.0, next_at - time.monotonic()))

    def acknowledged(self) -> set[str]:
        return {job_id for _, status, job_id, _ in self.answers if status == 201 and job_id}

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)


@dataclass(frozen=True)
class Run:
    job_id: str
    attempt: int
    queue: str
    started: float  # wall clock, seconds
    ended: float
    process: str


def recorded_runs(runs_dir: Path) -> list[Run]:
    return [
        Run(*json.loads(line), process=path.stem)
        for path in sorted(runs_dir.glob("runs-*.jsonl"))
        for line in path.read_text().splitlines()
    ]


@dataclass
class Load:
    """The API, three worker processes and the creator, running against a cluster."""

    api: HttpServer
    workers: list[WorkerProcess]
    creator: Creator
    health: HealthPoller
    runs_dir: Path


def start_load(cluster: Cluster, tmp_path: Path, stack: list[Any], **settings: str) -> Load:
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    schedule = {"tick": {"type": "failover.record", "interval": 1, "payload": {"seconds": 0.05}}}
    defaults = {
        "JOB_HANDLER_MODULES": HANDLERS,
        "FAILOVER_RUNS_DIR": str(runs_dir),
        "JOB_WORKER_LOG_LEVEL": "INFO",
        "JOB_WORKER_POLL_INTERVAL_MS": "500",
        "JOB_WORKER_LEASE_SECONDS": str(LEASE),
        "JOB_WORKER_CLEANUP_INTERVAL_SECONDS": "1",
        "JOB_WORKER_LISTEN_PROBE_SECONDS": "2",
        "JOB_SCHEDULES_JSON": json.dumps(schedule),
    }
    env = cluster.env(**{**defaults, **settings})
    api_context = serve_api(tmp_path / "api.log", env, threads=8)
    api = api_context.__enter__()
    stack.append(api_context)
    status, body = api.json("PATCH", f"/api/queues/{LIMITED}/", body={"concurrency_limit": LIMIT})
    assert status == 200, body
    workers = [
        WorkerProcess(tmp_path / f"worker-{n}.log", "--threads", "4", env=env) for n in range(3)
    ]
    stack.extend(workers)
    for worker in workers:
        worker.wait_for_threads(4)
    creator = Creator(api)
    creator.start()
    stack.append(creator)
    health = HealthPoller(api)
    health.start()
    stack.append(health)
    return Load(api, workers, creator, health, runs_dir)


def stop_everything(stack: list[Any]) -> None:
    for item in reversed(stack):
        if isinstance(item, Creator):
            item.stop()
        elif isinstance(item, HealthPoller):
            item.stop_event.set()
            item.join(timeout=30)
        elif isinstance(item, WorkerProcess):
            item.kill()
        else:
            item.__exit__(None, None, None)


def rate(runs: list[Run], start: float, end: float) -> float:
    """Handler runs finished per second between two wall-clock times."""
    return sum(1 for run in runs if start <= run.ended < end) / (end - start)


def recovered_within(runs: list[Run], *, before: float, promoted: float) -> float | None:
    """Seconds from the promotion until the runs finished in a 3-second window reach 0.9
    of ``before`` (runs per second), or None."""
    last = max(run.ended for run in runs)
    start = promoted
    while start + 3 <= last:
        if rate(runs, start, start + 3) >= 0.9 * before:
            return start + 3 - promoted
        start += 0.25
    return None


# --- What every failover must keep ---------------------------------------------------------


def rows(server: PrivatePostgres, sql: str) -> list[tuple[Any, ...]]:
    return server.query(sql)


def assert_workers_carried_on(load: Load) -> None:
    for worker in load.workers:
        assert worker.proc.poll() is None, worker.log()[-3000:]
        log = worker.log()
        assert "action=thread_died" not in log and "Traceback" not in log, log[-3000:]


def assert_api_answered_only_201_or_503(creator: Creator) -> Counter[int]:
    statuses = Counter(status for _, status, _, _ in creator.answers)
    assert set(statuses) <= {201, 503}, statuses
    return statuses


def assert_health_said_unreachable(failover: Failover) -> float:
    """/api/health/ answered 503 ``database: error`` to every request begun while no server
    accepted writes, then 200 from its first 200 after the promotion on. Returns the
    seconds from the promotion to that first 200."""
    samples = failover.load.health.samples
    faulted = failover.faulted - time.time() + time.monotonic()  # wall clock to monotonic
    promoted = failover.promoted - time.time() + time.monotonic()
    during = [(status, body) for t, status, body in samples if faulted + 0.2 < t < promoted]
    assert during, "no health sample during the outage"
    assert all(status == 503 and body["database"] == "error" for status, body in during), during
    back = next(t for t, status, _ in samples if t > promoted and status == 200)
    assert all(status == 200 for t, status, _ in samples if t >= back)
    return back - promoted


def unfinished(server: PrivatePostgres, *, created_before: float | None = None) -> int:
    """Jobs not finished (of those created before the wall-clock ``created_before``)."""
    before = "" if created_before is None else f" AND created_at < to_timestamp({created_before})"
    return int(
        rows(server, f"SELECT count(*) FROM jobs_job WHERE status NOT IN {TERMINAL}{before}")[0][0]
    )


# The newest tick is at most this old when the load ends: a schedule ticks every second,
# looked at twice a second, so a lag beyond this means it stopped across the failover.
TICKS_BEHIND_MAX_SECONDS = 3


def assert_one_job_per_tick(failover: Failover) -> int:
    """One job per tick, none missed across the failover, and ticking until the end."""
    server = failover.new
    ticks = [
        tick
        for (tick,) in rows(
            server,
            "SELECT (metadata->>'schedule_tick')::timestamptz FROM jobs_job "
            "WHERE metadata->>'schedule' = 'tick' ORDER BY 1",
        )
    ]
    assert len(ticks) == len(set(ticks))  # one job per tick
    gaps = [(b - a).total_seconds() for a, b in pairwise(ticks)]
    assert set(gaps) == {1.0}, gaps  # and none missed across the failover
    behind = failover.load_ended - ticks[-1].timestamp()
    assert behind <= TICKS_BEHIND_MAX_SECONDS, (ticks[-1], behind)  # nor after it
    return len(ticks)


def assert_the_limit_held(server: PrivatePostgres, runs: list[Run]) -> int:
    """At most LIMIT handlers of the limited queue ran at once (a handler runs between the
    claim and the completion, and a claim of a limited queue counts its running jobs, so
    this is that count seen from outside the database), and the new primary still holds the
    limit. Returns the most that ran at once."""
    limited = [run for run in runs if run.queue == LIMITED]
    edges = sorted([(run.started, 1) for run in limited] + [(run.ended, -1) for run in limited])
    running = most = 0
    for _, change in edges:
        running += change
        most = max(most, running)
    assert 0 < most <= LIMIT
    kept = rows(
        server, f"SELECT concurrency_limit FROM jobs_queuesettings WHERE name = '{LIMITED}'"
    )
    assert kept == [(LIMIT,)]
    return most


def claims_by_attempt(server: PrivatePostgres) -> dict[tuple[str, int], int]:
    return {
        (str(job_id), attempt): n
        for job_id, attempt, n in rows(
            server,
            "SELECT job_id, attempt, count(*) FROM jobs_jobevent WHERE type = 'claimed' "
            "GROUP BY 1, 2",
        )
    }


# --- A failover under load ------------------------------------------------------------------


@dataclass
class Failover:
    """What one failover under load left: the load, the moments, the new primary."""

    load: Load
    new: PrivatePostgres
    faulted: float  # wall clock
    promoted: float
    acknowledged: set[str]
    runs: list[Run]
    outage_answers: Counter[int]
    thawed: float  # wall clock; 0 unless frozen
    load_ended: float  # wall clock: the creator stopped, the workers still running
    # Wall clock: every job had finished. The schedule still ticks until the workers stop,
    # and a graceful stop leaves the last tick's job queued when it came just before.
    drained: float


def fail_over(
    cluster: Cluster,
    tmp_path: Path,
    *,
    fault: str,
    lag: float = 0,
    settings: dict[str, str] | None = None,
) -> Failover:
    """Load for 8 s, the fault (``kill``: kill -9 of the primary's postmaster; ``freeze``:
    SIGSTOP of it and its backends), the standby promoted 3 s later, load for 15 s more,
    then every job finished and every worker stopped with SIGTERM (exit 0, none restarted).
    A frozen primary is thawed (SIGCONT) 3 s after the promotion, under load. ``lag``:
    the primary's walsender is stopped that many seconds before the fault, so the standby
    misses what was committed meanwhile (replication lag, asynchronous only)."""
    stack: list[Any] = []
    thawed = 0.0
    walsenders: list[int] = []
    try:
        load = start_load(cluster, tmp_path, stack, **(settings or {}))
        time.sleep(8 - lag)  # steady state
        if lag:
            walsenders += [
                pid for (pid,) in rows(cluster.primary, "SELECT pid FROM pg_stat_replication")
            ]
            for pid in walsenders:
                os.kill(pid, signal.SIGSTOP)
            time.sleep(lag)
        faulted_wall, faulted = time.time(), time.monotonic()
        if fault == "freeze":
            frozen = cluster.primary.freeze()
        else:
            cluster.primary.kill_postmaster()
        time.sleep(3)
        promoted_wall, promoted = time.time(), time.monotonic()
        cluster.standby.promote()
        if fault == "freeze":
            time.sleep(3)
            thawed = time.time()
            cluster.primary.thaw(frozen)
            time.sleep(12)
        else:
            time.sleep(15)
        load_ended = time.time()
        load.creator.stop()
        load.health.stop_event.set()
        new = cluster.standby
        asked = [0.0]

        def all_finished() -> bool:
            asked[0] = time.time()
            return unfinished(new) == 0

        wait_until(all_finished, 60, "every job to finish on the new primary", interval=0.5)
        drained = asked[0]
        assert_workers_carried_on(load)
        for worker in load.workers:
            worker.signal(signal.SIGTERM)
        assert [worker.wait(timeout=30) for worker in load.workers] == [0, 0, 0]
    finally:
        for pid in walsenders:  # stopped, and orphaned by the kill: never to send again
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        stop_everything(stack)
    outage = Counter(s for t, s, _, _ in load.creator.answers if faulted <= t < promoted)
    return Failover(
        load=load,
        new=new,
        faulted=faulted_wall,
        promoted=promoted_wall,
        acknowledged=load.creator.acknowledged(),
        runs=recorded_runs(load.runs_dir),
        outage_answers=outage,
        thawed=thawed,
        load_ended=load_ended,
        drained=drained,
    )


def assert_nothing_ran_twice_but_attempts_in_flight(failover: Failover) -> int:
    """No attempt ran twice; a job ran again only as a new attempt, with its own claimed
    event, after the lease of one in flight at the fault expired (its timeout_requeued
    event), the earlier one begun before the promotion. Returns the jobs run again."""
    runs = failover.runs
    ran = {(run.job_id, run.attempt) for run in runs}
    assert len(ran) == len(runs)
    claims = claims_by_attempt(failover.new)
    assert all(claims.get(key) == 1 for key in ran), "a run whose claim the new primary lost"
    requeued = {
        (str(job_id), attempt)
        for job_id, attempt in rows(
            failover.new,
            "SELECT job_id, attempt FROM jobs_jobevent WHERE type = 'timeout_requeued'",
        )
    }
    by_job: dict[str, list[Run]] = defaultdict(list)
    for run in runs:
        by_job[run.job_id].append(run)
    rerun = [sorted(job_runs, key=lambda r: r.attempt) for job_runs in by_job.values()]
    rerun = [job_runs for job_runs in rerun if len(job_runs) > 1]
    for job_runs in rerun:
        for earlier in job_runs[:-1]:
            assert earlier.started < failover.promoted, job_runs
            assert (earlier.job_id, earlier.attempt) in requeued
    return len(rerun)


def throughput(failover: Failover) -> tuple[float, float, float]:
    """(runs per second before the fault, seconds from the promotion to the first run
    begun and finished after it, seconds until 3 s of runs reach 0.9 of the rate before)."""
    runs = failover.runs
    before = rate(runs, failover.faulted - 6, failover.faulted - 0.5)
    first = min(run.ended for run in runs if run.started > failover.promoted)
    back = recovered_within(runs, before=before, promoted=failover.promoted)
    assert back is not None and back <= 30, (before, back)
    return before, first - failover.promoted, back


# --- Synchronous replication: kill -9 of the primary ---------------------------------------


def test_a_killed_primary_loses_no_acknowledged_job_with_synchronous_replication(
    sync_cluster, tmp_path
):
    failover = fail_over(sync_cluster, tmp_path, fault="kill")
    new = failover.new

    # Every job acknowledged with a 201 is on the new primary, and finished.
    on_new = {str(job_id) for (job_id,) in rows(new, "SELECT id FROM jobs_job")}
    assert failover.acknowledged - on_new == set()
    assert unfinished(new, created_before=failover.drained) == 0
    statuses = assert_api_answered_only_201_or_503(failover.load.creator)
    health_back = assert_health_said_unreachable(failover)
    # No handler run lost: each succeeded job's final attempt ran.
    final = rows(new, "SELECT id::text, attempts FROM jobs_job WHERE status = 'succeeded'")
    assert set(final) <= {(run.job_id, run.attempt) for run in failover.runs}
    rerun = assert_nothing_ran_twice_but_attempts_in_flight(failover)
    ticks = assert_one_job_per_tick(failover)
    most = assert_the_limit_held(new, failover.runs)
    before, first, back = throughput(failover)
    in_flight = sum(1 for run in failover.runs if run.started <= failover.faulted <= run.ended)
    figures(
        "failover, synchronous replication, kill -9",
        acknowledged=len(failover.acknowledged),
        acknowledged_lost=0,
        answers=dict(statuses),
        outage_answers=dict(failover.outage_answers),
        health_200_after_promotion_s=round(health_back, 2),
        runs=len(failover.runs),
        handlers_in_flight_at_kill=in_flight,
        rerun_after_lease=rerun,
        schedule_ticks=ticks,
        most_running_limited=most,
        runs_per_s_before=round(before, 1),
        first_run_after_promotion_s=round(first, 2),
        throughput_back_after_s=round(back, 2),
    )


# --- Asynchronous replication: what PostgreSQL may lose -------------------------------------


def test_a_killed_primary_with_asynchronous_replication_loses_only_what_had_not_streamed(
    async_cluster, tmp_path
):
    # Two seconds of replication lag at the kill: the walsender stopped, as when the
    # standby's network or disk falls behind.
    failover = fail_over(async_cluster, tmp_path, fault="kill", lag=2)
    new = failover.new

    # Acknowledged jobs the standby had not received when the primary died are gone: the
    # trade-off of asynchronous replication, counted here, not hidden. What the new
    # primary has, it finishes, under the same rules.
    on_new = {str(job_id) for (job_id,) in rows(new, "SELECT id FROM jobs_job")}
    lost = failover.acknowledged - on_new
    assert unfinished(new, created_before=failover.drained) == 0
    statuses = assert_api_answered_only_201_or_503(failover.load.creator)
    health_back = assert_health_said_unreachable(failover)
    final = rows(new, "SELECT id::text, attempts FROM jobs_job WHERE status = 'succeeded'")
    ran = {(run.job_id, run.attempt) for run in failover.runs}
    assert set(final) <= ran  # every succeeded attempt the new primary knows of ran
    claims = claims_by_attempt(new)
    # Runs whose claim did not stream: attempts the new primary never heard of; the
    # concurrency limit holds over the ones it knows (a forgotten claim held no place).
    unknown = [run for run in failover.runs if (run.job_id, run.attempt) not in claims]
    ticks = assert_one_job_per_tick(failover)
    most = assert_the_limit_held(new, [run for run in failover.runs if run not in unknown])
    before, first, back = throughput(failover)
    figures(
        "failover, asynchronous replication, 2 s of lag, kill -9",
        acknowledged=len(failover.acknowledged),
        acknowledged_lost=len(lost),
        runs_unknown_to_new_primary=len(unknown),
        answers=dict(statuses),
        outage_answers=dict(failover.outage_answers),
        health_200_after_promotion_s=round(health_back, 2),
        runs=len(failover.runs),
        schedule_ticks=ticks,
        most_running_limited=most,
        runs_per_s_before=round(before, 1),
        first_run_after_promotion_s=round(first, 2),
        throughput_back_after_s=round(back, 2),
    )


# --- A frozen primary -----------------------------------------------------------------------

# The stated bound (backend README, High availability): a thread waiting on a frozen
# server gives up after the statement deadline (the heartbeat interval, a third of the
# lease here) and the watcher's tick (1 s at most), then reconnects, each attempt spending
# up to POSTGRES_CONNECT_TIMEOUT on each frozen host listed before a live one, its retries
# backing off to at most DB_RETRY_MAX_SECONDS.
CONNECT_TIMEOUT = 2


def log_time(line: str) -> float:
    """A log line's time (``%(asctime)s``: UTC, ``2026-06-21T10:59:58.123Z``), wall clock."""
    return calendar.timegm(time.strptime(line[:19], "%Y-%m-%dT%H:%M:%S")) + int(line[20:23]) / 1000


def who(line: str, action: str) -> str:
    """The part a line is about: a worker id without its random suffix, or ``what``; for
    the maintenance thread's (``thread-0``) also the duty, each duty's incident its own."""
    first, second, *_ = [*line.split(f"action={action} ", 1)[1].split(), ""]
    named = first.split("=", 1)[1]
    named = named.rsplit(":", 1)[0] if ":thread-" in named else named
    return f"{named} {second}" if second.startswith("duty=") else named


def incidents(log: str, *, after: float) -> set[str]:
    """The parts that logged a database incident after ``after`` (wall clock)."""
    actions = ("database_error", "maintenance_database_error", "write_retry", "listener_error")
    return {
        who(line, action)
        for line in log.splitlines()
        for action in actions
        if f"action={action} " in line and log_time(line) > after
    }


def recoveries(log: str) -> dict[str, float]:
    """Each part's last ``action=database_recovered``, wall clock."""
    return {
        who(line, "database_recovered"): log_time(line)
        for line in log.splitlines()
        if "action=database_recovered " in line
    }


def test_a_frozen_primary_is_left_within_the_bound_and_its_stale_sessions_change_nothing(
    sync_cluster, tmp_path
):
    cluster = sync_cluster
    # The standby first: once promoted, new connections reach it without waiting on the
    # frozen host, and after the thaw none goes back to the old primary (which, like any
    # primary nobody fenced, still accepts writes: fencing is the HA manager's job).
    failover = fail_over(
        cluster,
        tmp_path,
        fault="freeze",
        settings={
            "POSTGRES_PORT": f"{cluster.standby.port},{cluster.primary.port}",
            "POSTGRES_CONNECT_TIMEOUT": str(CONNECT_TIMEOUT),
            "PGAPPNAME": "failover-app",
            "JOB_WORKER_LOG_LEVEL": "DEBUG",
        },
    )
    new = failover.new
    deadline = LEASE / 3
    bound = deadline + 1 + DEADLINE_PROBE_SECONDS + CONNECT_TIMEOUT + DB_RETRY_MAX_SECONDS

    # No part of any process waited on the frozen server past the bound: every incident
    # the freeze opened (a fetching or claiming thread, a maintenance duty, the
    # completer, the listener) closed with a database_recovered line within the bound of
    # the promotion, the maintenance thread and the listener of every process among them,
    # and every process claimed work on the new primary within it.
    slowest = 0.0
    first_claims = dict(
        rows(
            new,
            "SELECT split_part(worker_id, ':', 2), extract(epoch FROM min(created_at)) "
            "FROM jobs_jobevent WHERE type = 'claimed' "
            f"AND created_at > to_timestamp({failover.promoted}) GROUP BY 1",
        )
    )
    for worker in failover.load.workers:
        log = worker.log()
        met = incidents(log, after=failover.faulted)
        back = recoveries(log)
        assert met and met <= set(back), (met, back)
        assert "listener" in met and any(":thread-0" in who for who in met), met
        claimed = float(first_claims[str(worker.proc.pid)])
        for when in [*(back[who] for who in met), claimed]:
            slowest = max(slowest, when - failover.promoted)
    assert slowest <= bound, (slowest, bound)

    # The old primary's stale sessions change nothing: after the thaw no session of the
    # app opened on it, and the new primary holds every acknowledged job, finished, each
    # attempt run once, under the same rules as after a kill.
    opened_after_thaw = rows(
        cluster.primary,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name IN "
        "('failover-app', 'job-queue-listener') "
        f"AND backend_start > to_timestamp({failover.thawed})",
    )
    assert opened_after_thaw == [(0,)]
    on_new = {str(job_id) for (job_id,) in rows(new, "SELECT id FROM jobs_job")}
    assert failover.acknowledged - on_new == set()
    assert unfinished(new, created_before=failover.drained) == 0
    statuses = assert_api_answered_only_201_or_503(failover.load.creator)
    health_back = assert_health_said_unreachable(failover)
    final = rows(new, "SELECT id::text, attempts FROM jobs_job WHERE status = 'succeeded'")
    assert set(final) <= {(run.job_id, run.attempt) for run in failover.runs}
    rerun = assert_nothing_ran_twice_but_attempts_in_flight(failover)
    ticks = assert_one_job_per_tick(failover)
    most = assert_the_limit_held(new, failover.runs)
    before, first, back = throughput(failover)
    figures(
        "failover, frozen primary (SIGSTOP), synchronous replication",
        acknowledged=len(failover.acknowledged),
        acknowledged_lost=0,
        answers=dict(statuses),
        outage_answers=dict(failover.outage_answers),
        health_200_after_promotion_s=round(health_back, 2),
        runs=len(failover.runs),
        rerun_after_lease=rerun,
        schedule_ticks=ticks,
        most_running_limited=most,
        every_part_on_new_primary_after_s=round(slowest, 2),
        bound_s=bound,
        runs_per_s_before=round(before, 1),
        first_run_after_promotion_s=round(first, 2),
        throughput_back_after_s=round(back, 2),
    )


# --- A listener whose backend vanished without a word ----------------------------------------

PROBE_SECONDS = 1


def claim_delay(server: PrivatePostgres, job_id: str) -> float | None:
    """Seconds from the job's creation to its claim, or None while unclaimed."""
    found = rows(
        server,
        "SELECT extract(epoch FROM c.created_at - j.created_at) FROM jobs_job j "
        "JOIN jobs_jobevent c ON c.job_id = j.id AND c.type = 'claimed' "
        f"WHERE j.id = '{job_id}'",
    )
    return float(found[0][0]) if found else None


def test_a_listener_whose_backend_froze_unnoticed_hears_again_within_the_probe_period(
    private_postgres, tmp_path
):
    pg = private_postgres
    pg.migrate(child_env())
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    # A 10 s poll: a job claimed within a second was woken by its notification.
    env = child_env(
        **pg.env(),
        JOB_HANDLER_MODULES=HANDLERS,
        FAILOVER_RUNS_DIR=str(runs_dir),
        JOB_WORKER_LOG_LEVEL="INFO",
        JOB_WORKER_POLL_INTERVAL_MS="10000",
        JOB_WORKER_LISTEN_PROBE_SECONDS=str(PROBE_SECONDS),
    )
    job = {"type": "failover.record", "payload": {"seconds": 0}}
    worker = WorkerProcess(tmp_path / "worker.log", "--threads", "2", env=env)
    listener_pid = None
    try:
        with serve_api(tmp_path / "api.log", env) as api:
            worker.wait_for_log("action=listening")
            time.sleep(0.5)  # both threads asleep in their 10 s poll
            status, created = api.json("POST", "/api/jobs/", body=job)
            assert status == 201, created
            wait_until(lambda: claim_delay(pg, created["id"]) is not None, 5, "a woken claim")
            assert claim_delay(pg, created["id"]) < 1

            # The listener's backend stops (SIGSTOP): its socket stays open, the kernel
            # acknowledges, and nothing it was sent is ever delivered. The client cannot
            # tell; only its probe, notified and never heard, does.
            ((listener_pid,),) = rows(
                pg, "SELECT pid FROM pg_stat_activity WHERE application_name = 'job-queue-listener'"
            )
            os.kill(listener_pid, signal.SIGSTOP)
            froze = time.monotonic()
            wait_until(
                lambda: worker.log().count("action=listening") == 2,
                10,
                "the listener to LISTEN again",
            )
            listening_again = time.monotonic() - froze
            time.sleep(0.5)
            status, created = api.json("POST", "/api/jobs/", body=job)
            assert status == 201, created
            wait_until(lambda: claim_delay(pg, created["id"]) is not None, 5, "a woken claim")
            woken_in = claim_delay(pg, created["id"])
    finally:
        if listener_pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(listener_pid, signal.SIGCONT)
        worker.kill()
    # Within the probe period (a probe every half period, awaited for the other half),
    # plus the first retry's half second and a connection.
    assert listening_again <= PROBE_SECONDS + 1.5
    assert woken_in < 1
    log = worker.log()
    assert "did not come back" in log and "action=database_recovered what=listener" in log
    figures(
        "listener backend frozen unnoticed",
        probe_period_s=PROBE_SECONDS,
        listening_again_after_s=round(listening_again, 2),
        next_job_woken_in_s=round(woken_in, 3),
    )
