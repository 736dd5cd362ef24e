"""The default worker on a backlog, with and without ``ANALYZE``, beside the in-hand pgbench
limit of the same rounds (the goal tagged "default").

For each configuration (1 x 4 and 2 x 4, the PostgreSQL driver, default settings), each
round runs pgbench ``fused`` and ``batched`` (``bench/raw_sql.py``) on a backlog of ``jobs``
at the same client count, then the workers twice on the same backlog: after a stale
backlog written and deleted (``seed.stale_backlog``) without ``ANALYZE`` and with it
(the planner's statistics then say every row is queued, what autovacuum sees as a
backlog arrives). Both worker runs start with the same dead rows; only the statistics
differ. Rounds interleave everything, so drift in the machine's load favours no variant;
the best of each is kept.

The in-hand limit: with the default settings (no prefetch) a worker claims no more jobs
than it has idle threads, so a configuration never holds more than processes x threads
jobs. pgbench's batched statement is run with that bound too, split every way into clients
x jobs per statement (``in_hand_splits``; one job per statement is the fused script), and
the best split is kept: what the same statements reach holding no more jobs than the
worker may.
The fused and batched (10 jobs per statement) limits at the same client count are printed
beside it, and the Python floor (``bench/floor.py``): one bare loop per process calling
``services.claim_jobs`` for as many ids as the process has threads, no threads or handlers,
which tells the share of the gap no worker that runs Python between its statements avoids.

Goal rows (``goals``): each configuration's slower variant >= ``IN_HAND_GOAL`` of the
in-hand limit, and the two variants within ``SPREAD_GOAL`` of each other (slower / faster
>= 1 - ``SPREAD_GOAL``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .database import Database
from .figures import log, ratio
from .floor import run_floor
from .goals import Goal
from .raw_sql import pgbench_available, run_pgbench
from .seed import stale_backlog
from .workers import run_workers

CONFIGS = [(1, 4), (2, 4)]
IN_HAND_GOAL = 0.85
SPREAD_GOAL = 0.10
VARIANTS = {"not analyzed": False, "analyzed": True}


@dataclass(kw_only=True)
class BacklogConfig:
    """One configuration's best figures (jobs/s) and every round's."""

    processes: int
    threads: int
    fused: float
    batched: float
    not_analyzed: float
    analyzed: float
    # The best pgbench split of processes x threads jobs in hand, and its name.
    in_hand: float = float("nan")
    in_hand_split: str = ""
    # Bare Python loops calling services.claim_jobs at that split (``bench/floor.py``).
    python_floor: float = float("nan")
    rounds: dict[str, list[float]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.processes} x {self.threads}"

    @property
    def slower(self) -> float:
        return min(self.not_analyzed, self.analyzed)

    @property
    def spread(self) -> float | None:
        """Slower / faster variant: 1.0 when ANALYZE changes nothing."""
        return ratio(self.slower, max(self.not_analyzed, self.analyzed))


@dataclass(kw_only=True)
class BacklogResult:
    jobs: int
    rounds: int
    configs: list[BacklogConfig]

    def render(self) -> list[str]:
        out = [
            "",
            f"14. Backlog: {self.jobs:,} no-op jobs, default settings, "
            f"best of {self.rounds} interleaved rounds; workers after a stale backlog, "
            "without and with ANALYZE",
            f"   {'workers':<9}{'not analyzed':>14}{'analyzed':>10}{'fused':>8}{'batched':>9}"
            f"{'in hand':>9}{'/fused':>8}{'/batched':>10}{'/in hand':>10}{'spread':>8}",
        ]
        for item in self.configs:
            out.append(
                f"   {item.label:<9}{item.not_analyzed:>14,.0f}{item.analyzed:>10,.0f}"
                f"{item.fused:>8,.0f}{item.batched:>9,.0f}{item.in_hand:>9,.0f}"
                f"{_fmt(ratio(item.slower, item.fused)):>8}"
                f"{_fmt(ratio(item.slower, item.batched)):>10}"
                f"{_fmt(ratio(item.slower, item.in_hand)):>10}{_fmt(item.spread):>8}"
            )
        out.append(
            "   /fused, /batched: the slower variant against the pgbench limits at the same "
            "client count; spread: slower / faster variant"
        )
        out += [
            f"   python floor ({item.label}): {item.python_floor:,.0f} jobs/s, "
            f"{_fmt(ratio(item.python_floor, item.in_hand))} of in hand; the worker "
            f"{_fmt(ratio(item.slower, item.python_floor))} of it"
            for item in self.configs
            if not math.isnan(item.python_floor)
        ]
        out += [
            f"   in hand: pgbench holding no more jobs than the workers' threads, best split "
            f"({item.label}: {item.in_hand_split}; {_fmt(ratio(item.in_hand, item.fused))}x "
            "the fused limit)"
            for item in self.configs
        ]
        return out


def beyond_reach(in_hand: float, target: float) -> str:
    """What a goal row of the default settings adds when its target (in jobs/s) exceeds the
    in-hand limit: no worker that claims only for idle threads can meet it on this
    machine."""
    if math.isnan(in_hand) or in_hand >= target:
        return ""
    return f"; the target ({target:,.0f} jobs/s) is above the in-hand limit"


def in_hand_limits(result: BacklogResult | None) -> dict[str, float]:
    """Each configuration's in-hand limit by its label ("1 x 4"), where pgbench ran."""
    return {
        item.label: item.in_hand
        for item in (result.configs if result else [])
        if not math.isnan(item.in_hand)
    }


def _floor(item: BacklogConfig) -> str:
    """The Python floor beside the in-hand limit: what bare loops calling the worker's
    fetch at its shape reach, no threads or handlers (``bench/floor.py``)."""
    if math.isnan(item.python_floor):
        return ""
    return (
        f"; Python floor {item.python_floor:,.0f} jobs/s ({item.processes} bare "
        f"loop{'s' if item.processes > 1 else ''} x {item.threads} per services.claim_jobs "
        f"call, {_fmt(ratio(item.python_floor, item.in_hand))} of the in-hand limit)"
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _best(values: list[float]) -> float:
    return max(values, default=float("nan"))


def in_hand_splits(processes: int, threads: int) -> list[tuple[int, int]]:
    """(clients, jobs per statement) pairs that hold processes x threads jobs, with no more
    per statement than a process has threads: a worker's fetch claims for its own idle
    threads only. One job per statement is the fused script, run anyway."""
    held = processes * threads
    return [(held // batch, batch) for batch in range(2, threads + 1) if held % batch == 0]


def _split_name(clients: int, batch: int) -> str:
    return f"{clients} client{'s' if clients > 1 else ''} x {batch} per statement"


def run_backlog(
    db: Database, env: dict[str, str], *, jobs: int, rounds: int, log_dir: Path
) -> BacklogResult:
    configs = []
    for processes, threads in CONFIGS:
        samples: dict[str, list[float]] = {name: [] for name in ("fused", "batched", *VARIANTS)}
        clients = processes * threads
        for round_number in range(1, rounds + 1):
            if pgbench_available():
                for script in ("fused", "batched"):
                    log(f"backlog: pgbench {script}, {clients} clients (round {round_number})")
                    raw = run_pgbench(
                        db,
                        env,
                        script=script,
                        clients=clients,
                        jobs=jobs,
                        protocol="prepared",
                        log_dir=log_dir,
                    )
                    samples[script].append(raw.jobs_per_second)
                for split_clients, batch in in_hand_splits(processes, threads):
                    name = _split_name(split_clients, batch)
                    log(f"backlog: pgbench batched, {name} (round {round_number})")
                    raw = run_pgbench(
                        db,
                        env,
                        script="batched",
                        clients=split_clients,
                        jobs=jobs,
                        protocol="prepared",
                        log_dir=log_dir,
                        batch=batch,
                    )
                    samples.setdefault(name, []).append(raw.jobs_per_second)
                log(f"backlog: python floor, {processes} loops x {threads} (round {round_number})")
                samples.setdefault("python floor", []).append(
                    run_floor(db, env, clients=processes, batch=threads, jobs=jobs, log_dir=log_dir)
                )
            names = list(VARIANTS) if round_number % 2 else list(reversed(VARIANTS))
            for name in names:
                log(f"backlog: {processes} x {threads}, {name} (round {round_number})")
                run = run_workers(
                    db,
                    env,
                    processes=processes,
                    threads=threads,
                    jobs=jobs,
                    driver="postgres",
                    log_dir=log_dir,
                    label=f"backlog-{processes}x{threads}-{name.replace(' ', '_')}",
                    setup=stale_backlog(jobs, analyze=VARIANTS[name]),
                )
                samples[name].append(run.jobs_per_second)

        splits = {
            _split_name(clients, 1): _best(samples["fused"]),
            **{
                _split_name(split_clients, batch): _best(
                    samples.get(_split_name(split_clients, batch), [])
                )
                for split_clients, batch in in_hand_splits(processes, threads)
            },
        }
        in_hand_split = max(
            splits, key=lambda name: -1.0 if math.isnan(splits[name]) else splits[name]
        )
        configs.append(
            BacklogConfig(
                processes=processes,
                threads=threads,
                fused=_best(samples["fused"]),
                batched=_best(samples["batched"]),
                not_analyzed=_best(samples["not analyzed"]),
                analyzed=_best(samples["analyzed"]),
                in_hand=splits[in_hand_split],
                in_hand_split=in_hand_split,
                python_floor=_best(samples.get("python floor", [])),
                rounds=samples,
            )
        )
    return BacklogResult(jobs=jobs, rounds=rounds, configs=configs)


def goals(result: BacklogResult | None) -> list[Goal]:
    """Two rows per configuration: the slower variant against the in-hand limit, and
    analyzed against not analyzed. Ratios are printed whether met or not."""
    rows = []
    for processes, threads in CONFIGS:
        label = f"{processes} x {threads}"
        item = next(
            (
                config
                for config in (result.configs if result else [])
                if (config.processes, config.threads) == (processes, threads)
            ),
            None,
        )
        rows += _config_goals(label, item, result.jobs if result else None)
    return rows


def _config_goals(label: str, item: BacklogConfig | None, jobs: int | None) -> list[Goal]:
    backlog = f"{jobs:,}-job backlog" if jobs else "backlog"
    config = label.replace(" ", "")
    ids = [f"default-{config}-vs-in-hand-limit", f"default-{config}-analyzed-vs-not"]
    names = [
        f"worker {label}, default settings, {backlog}, vs the in-hand pgbench limit",
        f"worker {label}, default settings, {backlog}, analyzed vs not analyzed",
    ]
    targets = [
        f">= {IN_HAND_GOAL:.2f} of the in-hand limit, with and without ANALYZE",
        f"within {SPREAD_GOAL * 100:.0f} % of each other (slower / faster >= "
        f"{1 - SPREAD_GOAL:.2f})",
    ]
    if item is None:
        return [
            Goal.not_run(goal_id, name, target, "backlog phase not run")
            for goal_id, name, target in zip(ids, names, targets, strict=True)
        ]
    both = f"not analyzed {item.not_analyzed:,.0f} jobs/s, analyzed {item.analyzed:,.0f} jobs/s"
    if math.isnan(item.in_hand):
        in_hand_reference = "no in-hand limit (pgbench not available)"
        in_hand = None
    else:
        in_hand = ratio(item.slower, item.in_hand)
        in_hand_reference = (
            f"in-hand limit {item.in_hand:,.0f} jobs/s ({item.in_hand_split}; not analyzed "
            f"{_fmt(ratio(item.not_analyzed, item.in_hand))}, analyzed "
            f"{_fmt(ratio(item.analyzed, item.in_hand))}; fused {item.fused:,.0f}, batched "
            f"{item.batched:,.0f} jobs/s){_floor(item)}"
        )
    spread = item.spread
    return [
        Goal(
            id=ids[0],
            name=names[0],
            measured=both,
            reference=in_hand_reference,
            ratio=in_hand,
            target=targets[0],
            status=Goal.verdict(None if in_hand is None else in_hand >= IN_HAND_GOAL),
        ),
        Goal(
            id=ids[1],
            name=names[1],
            measured=f"analyzed {item.analyzed:,.0f} jobs/s",
            reference=f"not analyzed {item.not_analyzed:,.0f} jobs/s (ratio column: "
            "slower / faster)",
            ratio=spread,
            target=targets[1],
            status=Goal.verdict(None if spread is None else spread >= 1 - SPREAD_GOAL),
        ),
    ]
