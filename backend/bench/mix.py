"""The handler mix goal: a realistic mix of short handlers, batch sizes 1 against the
batched defaults.

One 1 x 4 worker drains ``jobs`` ``bench.mix`` jobs (each sleeps 1-10 ms, drawn from a
generator seeded by its payload, so every run sleeps the same mix; ``bench/handlers.py``)
with batch sizes 1 (``SINGLE_ENV``: one claim and one completion per statement, the
worker before it batched) and batched (``BATCHED_ENV``: what the defaults choose for 4
threads on PostgreSQL with prepared statements). Rounds alternate which goes first; the
best of each is kept. The goal: batched finishes at least as fast, within ``TOLERANCE``
(a shared machine's noise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .database import Database
from .environment import SINGLE_ENV
from .figures import log, ratio
from .goals import Goal
from .jobtypes import MIX_JOB_TYPE, MIX_SECONDS
from .workers import run_workers

THREADS = 4
BATCHED_ENV = {"JOB_WORKER_CLAIM_BATCH_SIZE": "4", "JOB_WORKER_COMPLETE_BATCH_SIZE": "10"}
TOLERANCE = 0.05
GOAL = 1 - TOLERANCE
GOAL_ID = "mix-batched-vs-batch-sizes-1"


@dataclass(kw_only=True)
class MixResult:
    jobs: int
    threads: int
    rounds: int
    single: float  # best jobs/s, SINGLE_ENV
    batched: float  # best jobs/s, BATCHED_ENV
    single_rounds: list[float] = field(default_factory=list)
    batched_rounds: list[float] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        return ratio(self.batched, self.single)

    def render(self) -> list[str]:
        low, high = (int(value * 1000) for value in MIX_SECONDS)
        return [
            "",
            f"15. Handler mix: 1 x {self.threads} drains {self.jobs:,} jobs "
            f"sleeping {low}-{high} ms each, best of {self.rounds} interleaved rounds",
            f"   batch sizes 1 (before)         {self.single:>8,.0f} jobs/s  rounds "
            + " / ".join(f"{value:,.0f}" for value in self.single_rounds),
            f"   claim batch 4, completion 10   {self.batched:>8,.0f} jobs/s  rounds "
            + " / ".join(f"{value:,.0f}" for value in self.batched_rounds),
            f"   batched / batch sizes 1: {'-' if self.ratio is None else f'{self.ratio:.2f}'}",
        ]


def run_mix(
    db: Database, env: dict[str, str], *, jobs: int, rounds: int, log_dir: Path
) -> MixResult:
    modes: dict[str, dict[str, str]] = {"single": SINGLE_ENV, "batched": BATCHED_ENV}
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    for round_number in range(1, rounds + 1):
        order = list(modes) if round_number % 2 else list(reversed(modes))
        for mode in order:
            log(f"mix: 1 x {THREADS}, {jobs} jobs of 1-10 ms, {mode} (round {round_number})")
            run = run_workers(
                db,
                env,
                processes=1,
                threads=THREADS,
                jobs=jobs,
                driver="postgres",
                log_dir=log_dir,
                job_type=MIX_JOB_TYPE,
                extra_env=modes[mode],
                label=f"mix-{mode}-{round_number}",
            )
            samples[mode].append(run.jobs_per_second)
    return MixResult(
        jobs=jobs,
        threads=THREADS,
        rounds=rounds,
        single=max(samples["single"]),
        batched=max(samples["batched"]),
        single_rounds=samples["single"],
        batched_rounds=samples["batched"],
    )


def goals(result: MixResult | None) -> list[Goal]:
    low, high = (int(value * 1000) for value in MIX_SECONDS)
    name = (
        f"handler mix ({low}-{high} ms sleeps), 1 x {THREADS}: batched (the defaults) vs "
        "batch sizes 1 (one claim and one completion per statement)"
    )
    target = (
        f"batched (claim 4, completion 10) >= {GOAL:.2f}x batch sizes 1 (at least as fast, "
        f"{TOLERANCE * 100:.0f} % tolerance for noise)"
    )
    if result is None:
        return [Goal.not_run(GOAL_ID, name, target, "mix phase not run")]
    value = result.ratio
    return [
        Goal(
            id=GOAL_ID,
            name=f"{name}, {result.jobs:,} jobs",
            measured=f"batched {result.batched:,.0f} jobs/s",
            reference=f"batch sizes 1 {result.single:,.0f} jobs/s",
            ratio=value,
            target=target,
            status=Goal.verdict(None if value is None else value >= GOAL),
        )
    ]
