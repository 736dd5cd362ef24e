"""Workflows: a fan-out and fan-in end to end, and claims beside many waiting jobs.

Fan-out (``run_fan_out``): a workflow of one parent, ``jobs`` children that depend on it,
and a callback that depends on every child, written in one transaction (workflow, jobs,
edges and created events in one statement, as a workflow's enqueue writes them;
``services.create_job`` bounds a job's parents, this graph is seeded in SQL as the other
phases seed theirs). A 1 x 4 worker,
the shape and settings of the other drain phases, runs it: the parent, then the children
once the settler released them, then the callback once the settler saw every child
succeed. Measured from the parent's enqueue (its ``created_at``) to the callback's
success (its ``finished_at``), against the same ``jobs`` plain jobs, from their enqueue to
the last success, in the same rounds.

Waiting jobs (``run_waiting``): a 1 x 4 worker drains ``jobs`` plain jobs beside ``waiting``
jobs that wait on a parent that never finishes in the run (due tomorrow, in the drained
queue: a parent in a queue of its own would add that queue to a ``*`` worker's rotation,
one more claim statement per fetch, which is no cost of waiting jobs), against the same
drain without them. Waiting jobs sit outside the claim's partial
index, so the claim should not see them; the settler reads them, a bounded number a pass.
The claim statement's ``EXPLAIN (ANALYZE, BUFFERS)`` over a backlog of ``jobs``, with and
without the waiting jobs, is printed beside the drains.

Rounds interleave the two sides of each comparison (which goes first alternates); the
best of each side is kept.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .database import Database, reset_tables
from .drain import due_or_running_jobs_exist
from .figures import log, ratio
from .goals import Goal
from .jobtypes import JOB_TYPE
from .scale import claim_plan
from .seed import enqueue_bulk
from .workers import run_workers

# jobs.models.DEFAULT_QUEUE (the bench imports Django models only inside functions).
DEFAULT_QUEUE = "default"

PROCESSES, THREADS = 1, 4
FAN_OUT_GOAL = 0.8
WAITING_GOAL = 0.9
FAN_OUT_GOAL_ID = "workflow-fan-out-fan-in-vs-plain"
WAITING_GOAL_ID = "claims-beside-waiting-jobs"

_JOB_COLUMNS = """id, type, payload, status, priority, available_at, attempts, max_attempts,
    last_error, created_at, updated_at, queue"""

# The workflow, its parent (queued), its children (waiting on it) and the callback (waiting
# on every child), with their edges and created events, in one statement.
_FAN_OUT_SQL = f"""
WITH workflow AS (
    INSERT INTO jobs_workflow (id, name, created_at)
    VALUES (gen_random_uuid(), 'fan-out', now())
    RETURNING id
), parent AS (
    INSERT INTO jobs_job ({_JOB_COLUMNS}, workflow_id)
    SELECT gen_random_uuid(), %(type)s, '{{}}', 'queued', 50, now(), 0, 3, '', now(), now(),
        'default', workflow.id
    FROM workflow
    RETURNING id, created_at
), children AS (
    INSERT INTO jobs_job ({_JOB_COLUMNS}, workflow_id)
    SELECT gen_random_uuid(), %(type)s, jsonb_build_object('n', g), 'waiting', 50, now(), 0,
        3, '', now(), now(), 'default', workflow.id
    FROM generate_series(1, %(count)s) AS g CROSS JOIN workflow
    RETURNING id, created_at
), callback AS (
    INSERT INTO jobs_job ({_JOB_COLUMNS}, workflow_id)
    SELECT gen_random_uuid(), %(type)s, '{{}}', 'waiting', 50, now(), 0, 3, '', now(), now(),
        'default', workflow.id
    FROM workflow
    RETURNING id, created_at
), fan_out AS (
    INSERT INTO jobs_jobdependency (job_id, parent_id, on_parent_failure)
    SELECT children.id, parent.id, 'cancel' FROM children CROSS JOIN parent
), fan_in AS (
    INSERT INTO jobs_jobdependency (job_id, parent_id, on_parent_failure)
    SELECT callback.id, children.id, 'cancel' FROM callback CROSS JOIN children
)
INSERT INTO jobs_jobevent (job_id, type, attempt, message, data, created_at)
SELECT id, 'created', 0, 'Job created', jsonb_build_object('type', %(type)s::text), created_at
FROM (SELECT * FROM parent UNION ALL SELECT * FROM children UNION ALL SELECT * FROM callback)
    AS job
"""

# A parent due tomorrow, and ``count`` jobs waiting on it.
_HELD_SQL = f"""
WITH parent AS (
    INSERT INTO jobs_job ({_JOB_COLUMNS})
    VALUES (gen_random_uuid(), %(type)s, '{{}}', 'queued', 50, now() + interval '1 day', 0, 3,
        '', now() - interval '1 minute', now(), %(queue)s)
    RETURNING id
), children AS (
    INSERT INTO jobs_job ({_JOB_COLUMNS})
    SELECT gen_random_uuid(), %(type)s, jsonb_build_object('n', g), 'waiting', 50, now(), 0,
        3, '', now() - interval '1 minute', now(), 'default'
    FROM generate_series(1, %(count)s) AS g
    RETURNING id
)
INSERT INTO jobs_jobdependency (job_id, parent_id, on_parent_failure)
SELECT children.id, parent.id, 'cancel' FROM children CROSS JOIN parent
"""

# Enqueue (first created_at) to the last success, over the jobs that succeeded.
_SPAN_SQL = """
SELECT extract(epoch FROM max(finished_at) - min(created_at)), count(*)
FROM jobs_job WHERE status = 'succeeded'
"""


def seed_fan_out(db: Database, children: int) -> None:
    db.execute(_FAN_OUT_SQL, {"type": JOB_TYPE, "count": children})


def seed_waiting(db: Database, waiting: int) -> None:
    db.execute(_HELD_SQL, {"type": JOB_TYPE, "count": waiting, "queue": DEFAULT_QUEUE})


def _nothing_left(db: Database) -> bool:
    """Nothing due, running or waiting (``job_waiting_idx``): the callback has run."""
    waiting = db.scalar("SELECT EXISTS (SELECT 1 FROM jobs_job WHERE status = 'waiting')")
    return not waiting and not due_or_running_jobs_exist(db)


@dataclass(kw_only=True)
class FanOutResult:
    """Seconds from enqueue to the last success (the callback's, in a workflow) and the
    ``jobs`` per second that makes, best of the rounds, for each side."""

    jobs: int
    rounds: int
    plain_seconds: float
    workflow_seconds: float
    plain_rounds: list[float] = field(default_factory=list)
    workflow_rounds: list[float] = field(default_factory=list)

    @property
    def plain_jobs_per_second(self) -> float:
        return self.jobs / self.plain_seconds if self.plain_seconds else math.nan

    @property
    def workflow_jobs_per_second(self) -> float:
        return self.jobs / self.workflow_seconds if self.workflow_seconds else math.nan

    @property
    def ratio(self) -> float | None:
        return ratio(self.workflow_jobs_per_second, self.plain_jobs_per_second)


@dataclass(kw_only=True)
class WaitingResult:
    """Drain rates (jobs/s, first claim to last success) without and beside the waiting
    jobs, best of the rounds, and the claim's plan lines over the same backlog."""

    jobs: int
    waiting: int
    rounds: int
    without: float
    beside: float
    without_rounds: list[float] = field(default_factory=list)
    beside_rounds: list[float] = field(default_factory=list)
    plan_without: list[str] = field(default_factory=list)
    plan_beside: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return ratio(self.beside, self.without)


@dataclass(kw_only=True)
class WorkflowsResult:
    fan_out: FanOutResult | None = None
    waiting: WaitingResult | None = None

    def render(self) -> list[str]:
        out = ["", f"16. Workflows: {PROCESSES} x {THREADS} worker, default settings"]
        if (fan := self.fan_out) is not None:
            out += [
                f"   fan-out of {fan.jobs:,} children of one parent, then a callback waiting "
                f"on all of them; enqueue -> last success, best of {fan.rounds} rounds",
                f"   {fan.jobs:,} plain jobs         {fan.plain_seconds:>7.2f} s "
                f"{fan.plain_jobs_per_second:>8,.0f} jobs/s  rounds "
                + " / ".join(f"{value:.2f} s" for value in fan.plain_rounds),
                f"   workflow (parent, children, callback) {fan.workflow_seconds:>7.2f} s "
                f"{fan.workflow_jobs_per_second:>8,.0f} jobs/s  rounds "
                + " / ".join(f"{value:.2f} s" for value in fan.workflow_rounds),
                f"   workflow / plain: {_fmt(fan.ratio)}",
            ]
        if (wait := self.waiting) is not None:
            out += [
                f"   drain of {wait.jobs:,} plain jobs beside {wait.waiting:,} waiting on an "
                f"unfinished parent, best of {wait.rounds} rounds",
                f"   without waiting jobs   {wait.without:>8,.0f} jobs/s  rounds "
                + " / ".join(f"{value:,.0f}" for value in wait.without_rounds),
                f"   beside them            {wait.beside:>8,.0f} jobs/s  rounds "
                + " / ".join(f"{value:,.0f}" for value in wait.beside_rounds),
                f"   beside / without: {_fmt(wait.ratio)}",
                f"   claim plan over {wait.jobs:,} queued, without waiting jobs:",
                *(f"     {line.strip()}" for line in wait.plan_without),
                f"   claim plan over {wait.jobs:,} queued, beside {wait.waiting:,} waiting:",
                *(f"     {line.strip()}" for line in wait.plan_beside),
            ]
        return out


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _span(db: Database, expected: int) -> float:
    seconds, succeeded = db.rows(_SPAN_SQL)[0]
    if succeeded != expected:
        raise RuntimeError(f"expected {expected} jobs to succeed, {succeeded} did")
    return round(float(seconds), 3)


def run_fan_out(
    db: Database, env: dict[str, str], *, jobs: int, rounds: int, log_dir: Path
) -> FanOutResult:
    samples: dict[str, list[float]] = {"plain": [], "workflow": []}
    for round_number in range(1, rounds + 1):
        order = list(samples) if round_number % 2 else list(reversed(samples))
        for mode in order:
            log(f"workflows: {mode}, {jobs:,} jobs, 1 x {THREADS} (round {round_number})")
            workflow = mode == "workflow"
            run_workers(
                db,
                env,
                processes=PROCESSES,
                threads=THREADS,
                jobs=jobs + 2 if workflow else jobs,
                driver="postgres",
                log_dir=log_dir,
                label=f"workflow-{mode}-{round_number}",
                enqueue=(lambda db: seed_fan_out(db, jobs)) if workflow else None,
                finished=_nothing_left if workflow else None,
            )
            samples[mode].append(_span(db, jobs + 2 if workflow else jobs))
    return FanOutResult(
        jobs=jobs,
        rounds=rounds,
        plain_seconds=min(samples["plain"]),
        workflow_seconds=min(samples["workflow"]),
        plain_rounds=samples["plain"],
        workflow_rounds=samples["workflow"],
    )


def _setup(waiting: int) -> Callable[[Database], None]:
    def setup(db: Database) -> None:
        if waiting:
            seed_waiting(db, waiting)
        # What autovacuum (off on this server) would do after a bulk load.
        db.execute("VACUUM (ANALYZE) jobs_job")
        db.execute("ANALYZE jobs_jobdependency")

    return setup


def _claim_plan_lines(db: Database, *, jobs: int, waiting: int) -> list[str]:
    """The claim's EXPLAIN over a backlog of ``jobs`` (beside ``waiting``), key lines."""
    reset_tables(db)
    _setup(waiting)(db)
    enqueue_bulk(db, jobs)
    db.execute("ANALYZE jobs_job")
    plan = claim_plan(db)
    reset_tables(db)
    return plan.key_lines


def run_waiting(
    db: Database, env: dict[str, str], *, jobs: int, waiting: int, rounds: int, log_dir: Path
) -> WaitingResult:
    modes = {"without": 0, "beside": waiting}
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_number in range(1, rounds + 1):
        order = list(modes) if round_number % 2 else list(reversed(modes))
        for mode in order:
            log(
                f"workflows: drain {jobs:,} jobs {mode} {waiting:,} waiting, 1 x {THREADS} "
                f"(round {round_number})"
            )
            run = run_workers(
                db,
                env,
                processes=PROCESSES,
                threads=THREADS,
                jobs=jobs,
                driver="postgres",
                log_dir=log_dir,
                label=f"waiting-{mode}-{round_number}",
                setup=_setup(modes[mode]),
            )
            samples[mode].append(run.jobs_per_second)
    return WaitingResult(
        jobs=jobs,
        waiting=waiting,
        rounds=rounds,
        without=max(samples["without"]),
        beside=max(samples["beside"]),
        without_rounds=samples["without"],
        beside_rounds=samples["beside"],
        plan_without=_claim_plan_lines(db, jobs=jobs, waiting=0),
        plan_beside=_claim_plan_lines(db, jobs=jobs, waiting=waiting),
    )


def run_workflows(
    db: Database,
    env: dict[str, str],
    *,
    jobs: int,
    waiting: int,
    rounds: int,
    log_dir: Path,
) -> WorkflowsResult:
    return WorkflowsResult(
        fan_out=run_fan_out(db, env, jobs=jobs, rounds=rounds, log_dir=log_dir),
        waiting=run_waiting(db, env, jobs=jobs, waiting=waiting, rounds=rounds, log_dir=log_dir),
    )


def goals(result: WorkflowsResult | None) -> list[Goal]:
    fan_name = (
        f"workflow fan-out then fan-in, {PROCESSES} x {THREADS}: enqueue of the parent to the "
        "callback's success vs the same jobs without a workflow"
    )
    fan_target = f">= {FAN_OUT_GOAL} of the plain jobs' rate (enqueue to last success)"
    wait_name = f"claims beside waiting jobs, {PROCESSES} x {THREADS} drain vs without them"
    wait_target = f">= {WAITING_GOAL} of the drain without waiting jobs"
    fan = result.fan_out if result else None
    wait = result.waiting if result else None
    rows = []
    if fan is None:
        rows.append(Goal.not_run(FAN_OUT_GOAL_ID, fan_name, fan_target, "workflows not run"))
    else:
        rows.append(
            Goal(
                id=FAN_OUT_GOAL_ID,
                name=f"workflow: 1 parent -> {fan.jobs:,} children -> 1 callback, "
                f"{PROCESSES} x {THREADS}, enqueue of the parent to the callback's success",
                measured=f"{fan.workflow_seconds:.2f} s ({fan.workflow_jobs_per_second:,.0f} "
                "jobs/s)",
                reference=f"{fan.jobs:,} plain jobs, enqueue to last success "
                f"{fan.plain_seconds:.2f} s ({fan.plain_jobs_per_second:,.0f} jobs/s)",
                ratio=fan.ratio,
                target=fan_target,
                status=Goal.verdict(None if fan.ratio is None else fan.ratio >= FAN_OUT_GOAL),
            )
        )
    if wait is None:
        rows.append(Goal.not_run(WAITING_GOAL_ID, wait_name, wait_target, "workflows not run"))
    else:
        rows.append(
            Goal(
                id=WAITING_GOAL_ID,
                name=f"claims: {PROCESSES} x {THREADS} drains {wait.jobs:,} jobs beside "
                f"{wait.waiting:,} waiting on an unfinished parent",
                measured=f"{wait.beside:,.0f} jobs/s",
                reference=f"without waiting jobs {wait.without:,.0f} jobs/s",
                ratio=wait.ratio,
                target=wait_target,
                status=Goal.verdict(None if wait.ratio is None else wait.ratio >= WAITING_GOAL),
            )
        )
    return rows
