"""The performance page's tables, generated from ``bench-results/latest.json``.

``python -m bench.readme`` (``make bench-readme``) renders the goals summary, the other
targets and the peers of the last ``make bench`` run as markdown, with the run's date,
commit and machine, and rewrites what lies between ``<!-- bench:start -->`` and
``<!-- bench:end -->`` in ``docs/performance.md`` (``--page`` names another file). Nothing
in that block is written by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import REPO_DIR

from .environment import RESULTS_DIR

START = "<!-- bench:start -->"
END = "<!-- bench:end -->"
PAGE = REPO_DIR / "docs" / "performance.md"
OURS = "this-queue"  # bench.peers.OURS (not imported: this module reads JSON only)


@dataclass(frozen=True, kw_only=True)
class RunNote:
    started_at: str
    command: str
    commit: str
    cpus: int | None
    cpu_model: str
    memory_gib: str
    postgres_version: str
    load_start: list[float]
    load_end: list[float]
    duration_seconds: float


@dataclass(frozen=True, kw_only=True)
class GoalRow:
    id: str
    name: str
    measured: str
    reference: str
    ratio: float | None
    target: str
    status: str


@dataclass(frozen=True, kw_only=True)
class TargetRow:
    target: str
    measured: str
    met: bool | None


@dataclass(frozen=True, kw_only=True)
class PeerRow:
    """One system's configuration in the peers phase (``bench/peers.py``)."""

    system: str
    name: str
    version: str
    config: str
    description: str
    store: str
    jobs_per_second: float
    rounds: list[float]
    worker_cpu_ms_per_job: float | None
    store_cpu_ms_per_job: float | None
    commits_per_job: float | None
    redis_commands_per_job: float | None


@dataclass(frozen=True, kw_only=True)
class PeersTable:
    jobs: int
    rounds: int
    analyzed: bool  # each PostgreSQL system's database analyzed once its backlog was in
    ours_1x4: float | None  # this queue's 1 x 4 jobs/s, what every row is compared with
    rows: list[PeerRow]


@dataclass(frozen=True, kw_only=True)
class BenchSummary:
    note: RunNote
    goals: list[GoalRow]
    targets: list[TargetRow]
    peers: PeersTable | None = None


def parse(data: dict[str, Any]) -> BenchSummary:
    """The parts of ``latest.json`` the table shows."""
    meta = data["meta"]
    note = RunNote(
        started_at=str(meta["started_at"]),
        command=str(meta["command"]),
        commit=str(meta["commit"]),
        cpus=meta.get("cpus"),
        cpu_model=str(meta.get("cpu_model", "unknown")),
        memory_gib=str(meta.get("memory_gib", "?")),
        postgres_version=str(meta.get("postgres", {}).get("server_version", "?")),
        load_start=list(meta.get("load_start", [])),
        load_end=list(meta.get("load_end", [])),
        duration_seconds=float(meta.get("duration_seconds", 0)),
    )
    goals = [
        GoalRow(
            # "number": results written before goal rows had descriptive ids.
            id=str(item.get("id", item.get("number"))),
            name=str(item["name"]),
            measured=str(item["measured"]),
            reference=str(item["reference"]),
            ratio=item.get("ratio"),
            target=str(item["target"]),
            status=str(item["status"]),
        )
        for item in data.get("goals", [])
    ]
    targets = [
        TargetRow(target=str(item["target"]), measured=str(item["measured"]), met=item["met"])
        for item in data.get("targets", [])
    ]
    return BenchSummary(note=note, goals=goals, targets=targets, peers=_parse_peers(data))


def _parse_peers(data: dict[str, Any]) -> PeersTable | None:
    peers = data.get("peers")
    if not peers:
        return None
    rows = [
        PeerRow(
            system=str(run["system"]),
            name=str(run["name"]),
            version=str(run.get("version", "")),
            config=str(run["config"]),
            description=str(run["description"]),
            store=str(run["store"]),
            jobs_per_second=float(run["jobs_per_second"]),
            rounds=[float(value) for value in run.get("samples_jobs_per_second", [])],
            worker_cpu_ms_per_job=run.get("worker_cpu_ms_per_job"),
            store_cpu_ms_per_job=run.get("store_cpu_ms_per_job"),
            commits_per_job=run.get("commits_per_job"),
            redis_commands_per_job=run.get("redis_commands_per_job"),
        )
        for run in peers.get("runs", [])
    ]
    ours = next(
        (row.jobs_per_second for row in rows if (row.system, row.config) == (OURS, "1 x 4")),
        None,
    )
    return PeersTable(
        jobs=int(peers["jobs"]),
        rounds=int(peers["rounds"]),
        analyzed=bool(peers.get("analyzed", False)),
        ours_1x4=ours,
        rows=rows,
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _load(values: list[float]) -> str:
    return f"{values[0]:.1f}" if values else "?"


def render(summary: BenchSummary) -> str:
    note = summary.note
    lines = [
        f"Generated by `make bench-readme` from the `make bench` run of {note.started_at} "
        f"(`{note.command}`, commit {note.commit}, {note.duration_seconds / 60:.0f} min) on "
        f"{note.cpus} CPUs ({note.cpu_model}), {note.memory_gib} GiB RAM, PostgreSQL "
        f"{note.postgres_version}; 1-minute load average {_load(note.load_start)} at start, "
        f"{_load(note.load_end)} at end. The machine is shared: read each figure against "
        "its reference from the same run, not against another run.",
        "",
        "| Id | Goal | Measured | Reference (same run) | Ratio | Target | Result |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for goal in summary.goals:
        ratio = "-" if goal.ratio is None else f"{goal.ratio:.2f}"
        status = f"**{goal.status}**" if goal.status == "MISS" else goal.status
        cells = [goal.id, goal.name, goal.measured, goal.reference, ratio, goal.target]
        lines.append("| " + " | ".join(_cell(cell) for cell in [*cells, status]) + " |")
    if summary.targets:
        lines += ["", "| Other target | Measured | Result |", "| --- | --- | --- |"]
        for target in summary.targets:
            met = {True: "met", False: "**missed**", None: "n/a"}[target.met]
            lines.append(f"| {_cell(target.target)} | {_cell(target.measured)} | {met} |")
    if summary.peers and summary.peers.rows:
        lines += ["", *_render_peers(summary.peers)]
    return "\n".join(lines)


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _render_peers(peers: PeersTable) -> list[str]:
    analyzed = " (then ANALYZE, as autovacuum would)" if peers.analyzed else ""
    lines = [
        f"Peers in the same run: {peers.jobs:,} no-op jobs enqueued before the worker starts"
        f"{analyzed}, 4 executors, best of {peers.rounds} interleaved rounds "
        "(`make bench-peers`). Store "
        "CPU is the PostgreSQL backends of the system's database, or redis-server; Redis "
        "systems show commands per job where PostgreSQL ones show commits.",
        "",
        "| System | Configuration | Store | jobs/s | Rounds | This queue 1 x 4 / it "
        "| Worker CPU ms/job | Store CPU ms/job | Commits (Redis commands) per job |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in peers.rows:
        name = f"**{row.name}**" if row.system == OURS else f"{row.name} {row.version}"
        versus = (
            "-"
            if peers.ours_1x4 is None or not row.jobs_per_second
            else f"{peers.ours_1x4 / row.jobs_per_second:.2f}"
        )
        per_job = (
            _number(row.commits_per_job, ".2f")
            if row.redis_commands_per_job is None
            else f"({row.redis_commands_per_job:.1f})"
        )
        cells = [
            name.strip(),
            row.description,
            row.store,
            f"{row.jobs_per_second:,.0f}",
            " / ".join(f"{value:,.0f}" for value in row.rounds) or "-",
            versus,
            _number(row.worker_cpu_ms_per_job, ".3f"),
            _number(row.store_cpu_ms_per_job, ".3f"),
            per_job,
        ]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the markers replaced by ``block``."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no {START} ... {END} block")
    return text[: start + len(START)] + "\n" + block + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readme", description=__doc__)
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "latest.json")
    parser.add_argument(
        "--page", "--readme", type=Path, default=PAGE, help="the Markdown file to rewrite"
    )
    args = parser.parse_args(argv)
    summary = parse(json.loads(args.results.read_text()))
    page = args.page.read_text()
    args.page.write_text(replace_block(page, render(summary)))
    print(f"rewrote the performance tables in {args.page} from {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
