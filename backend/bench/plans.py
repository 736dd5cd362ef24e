"""``make bench-plans``: worker throughput with and without ``ANALYZE`` before
the run, and with batched completion, each beside the fused single-job pgbench limit of
the same round.

Run from ``backend/``: ``python -m bench.plans [--jobs N] [--rounds N] [--db NAME]``. Before
each worker run a backlog of ``--jobs`` queued jobs is written and deleted again; with
``analyze`` it is analyzed in between, so the planner's statistics say every row is queued
(what autovacuum sees as a backlog arrives). Rounds interleave the variants, so on a shared
machine each ratio compares runs that saw the same load; the best of each is printed.
Completion latency (handler return to committed) comes from the completer's own log line.
Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from .database import Database
from .environment import RESULTS_DIR, SINGLE_ENV, bench_database
from .figures import log
from .seed import stale_backlog

LATENCY = re.compile(r"latency_p50_ms=([\d.]+) latency_p99_ms=([\d.]+)")


VARIANTS = {
    "not analyzed": (SINGLE_ENV, False),
    "analyzed": (SINGLE_ENV, True),
    "analyzed, completion batch 10": (
        {"JOB_WORKER_CLAIM_BATCH_SIZE": "1", "JOB_WORKER_COMPLETE_BATCH_SIZE": "10"},
        True,
    ),
    "batched fetch 4 + completion 10": (
        {"JOB_WORKER_CLAIM_BATCH_SIZE": "4", "JOB_WORKER_COMPLETE_BATCH_SIZE": "10"},
        True,
    ),
    "batched, not analyzed": (
        {"JOB_WORKER_CLAIM_BATCH_SIZE": "4", "JOB_WORKER_COMPLETE_BATCH_SIZE": "10"},
        False,
    ),
    "analyzed, batch 10, async commit": (
        {
            "JOB_WORKER_CLAIM_BATCH_SIZE": "1",
            "JOB_WORKER_COMPLETE_BATCH_SIZE": "10",
            "JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT": "false",
        },
        True,
    ),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--db", default="job_queue_bench")
    parser.add_argument("--configs", default="1x4,2x4")
    parser.add_argument(
        "--variants", default="", help="variant names separated by ; (default: all)"
    )
    args = parser.parse_args(argv)
    log_dir = RESULTS_DIR / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with bench_database(args.db) as (env, db):
        run_variants(db, env, args, log_dir=log_dir)
    return 0


def run_variants(
    db: Database, env: dict[str, str], args: argparse.Namespace, *, log_dir: Path
) -> None:
    """Each configuration's variants, ``args.rounds`` times, beside pgbench's fused script;
    prints the best rate of each."""
    from .raw_sql import pgbench_available, run_pgbench  # they read the Django settings
    from .workers import run_workers

    configs = [tuple(int(n) for n in config.split("x")) for config in args.configs.split(",")]
    for processes, threads in configs:
        best: dict[str, float] = {}
        latency: dict[str, str] = {}
        for round_number in range(1, args.rounds + 1):
            if pgbench_available():
                raw = run_pgbench(
                    db,
                    env,
                    script="fused",
                    clients=processes * threads,
                    jobs=args.jobs,
                    protocol="prepared",
                    log_dir=log_dir,
                )
                best["pgbench fused"] = max(best.get("pgbench fused", 0), raw.jobs_per_second)
            chosen = args.variants.split(";") if args.variants else list(VARIANTS)
            for name in chosen:
                extra_env, analyze = VARIANTS[name]
                label = f"plans-{processes}x{threads}-{name.replace(' ', '_').replace(',', '')}"
                log(f"{processes} x {threads}, {name} (round {round_number})")
                run = run_workers(
                    db,
                    env,
                    processes=processes,
                    threads=threads,
                    jobs=args.jobs,
                    driver="postgres",
                    log_dir=log_dir,
                    extra_env=extra_env,
                    label=label,
                    setup=stale_backlog(args.jobs, analyze=analyze),
                )
                best[name] = max(best.get(name, 0), run.jobs_per_second)
                for path in Path(log_dir).glob(f"worker-{label}-*.log"):
                    found = LATENCY.findall(path.read_text())
                    if found:
                        latency[name] = f"p50 {found[-1][0]} ms, p99 {found[-1][1]} ms"
        reference = best.get("pgbench fused")
        print(f"\n{processes} x {threads}, {args.jobs} jobs, best of {args.rounds} rounds")
        for name, rate in best.items():
            versus = f"  {rate / reference:.2f}x pgbench fused" if reference else ""
            extra = f"  completion latency {latency[name]}" if name in latency else ""
            print(f"  {name:32s} {rate:8,.0f} jobs/s{versus}{extra}")
        if "not analyzed" in best and "analyzed" in best:
            print(f"  analyzed / not analyzed: {best['analyzed'] / best['not analyzed']:.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
