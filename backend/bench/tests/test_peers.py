"""The peers and decay phases' arithmetic and options (no database, no peer runs)."""

import pytest

from bench import backlog, decay, peers, readme, report, workers
from bench.cpu import Sample, cpu_between
from bench.run import DEFAULT_PHASES, parse_args


def _run(system: str, config: str, jobs_per_second: float, **extra: object) -> peers.SystemRun:
    values: dict[str, object] = {
        "system": system,
        "name": "this queue" if system == peers.OURS else system.title(),
        "version": "" if system == peers.OURS else "1.0",
        "config": config,
        "description": config,
        "store": "PostgreSQL",
        "jobs": 10_000,
        "span_seconds": 10_000 / jobs_per_second,
        "jobs_per_second": jobs_per_second,
        "worker_cpu_ms_per_job": 0.25,
        "store_cpu_ms_per_job": 0.5,
        "commits_per_job": 1.01,
        "redis_commands_per_job": None,
        "load_average": [1.0, 1.0, 1.0],
        **extra,
    }
    return peers.SystemRun(**values)  # type: ignore[arg-type]


RUNS = [
    _run(peers.OURS, "1 x 4", 3000),
    _run(peers.OURS, "2 x 4", 2400),
    _run(peers.OURS, "1 x 4 prefetch", 3300),
    _run(peers.OURS, "1 x 4 lean", 3150),
    _run(peers.OURS, "1 x 4 async", 3600),
    _run(peers.OURS, "1 x 4 throughput", 4200),
    _run("pgqueuer", "4x10", 2800),
    _run("pgqueuer", "1x10", 2500),
    _run("pgqueuer", "1x4", 2000),
    _run("celery", "default", 1200),
    _run("dramatiq", "default", 1500),
]


def _result(runs: list[peers.SystemRun], **extra: object) -> peers.PeersResult:
    return peers.PeersResult(
        jobs=10_000,
        rounds=2,
        runs=runs,
        comparisons=peers.compare(runs),
        **extra,  # type: ignore[arg-type]
    )


def _goals(runs: list[peers.SystemRun], **in_hand: float) -> dict[str, object]:
    limits = {key.replace("_", " "): value for key, value in in_hand.items()}
    return {goal.name: goal for goal in peers.peer_goals(_result(runs), in_hand=limits)}


MATCHED_1X4 = "this queue 1 x 4 (default settings) vs PgQueuer 1x4 (matched shape)"
MATCHED_2X4 = "this queue 2 x 4 (default settings) vs PgQueuer 1x4 (matched shape)"
CELERY_1X4 = "this queue 1 x 4 (default settings) vs Celery + Redis's best configuration"
CELERY_2X4 = "this queue 2 x 4 (default settings) vs Celery + Redis's best configuration"
THROUGHPUT = (
    "this queue 1 x 4 throughput (prefetch 36, lean timeline, async commit) vs PgQueuer's "
    "best configuration"
)


def _replace(runs: list[peers.SystemRun], system: str, config: str, jobs_per_second: float):
    return [
        _run(system, config, jobs_per_second)
        if (run.system, run.config) == (system, config)
        else run
        for run in runs
    ]


def test_the_peers_phase_runs_only_when_asked_for():
    assert "peers" not in parse_args([]).phases
    assert "peers" not in DEFAULT_PHASES
    assert "peers" in parse_args(["--peers"]).phases
    assert parse_args(["--only", "peers"]).phases == {"peers"}


def test_the_decay_phase_runs_by_default_with_its_sizes():
    args = parse_args([])
    assert "decay" in args.phases
    assert (args.decay_jobs, args.decay_rounds) == (20_000, 6)
    assert args.decay_servers == ["private", "shared"]


def test_the_peers_options_are_parsed():
    args = parse_args(
        ["--peers", "--peer-jobs", "500", "--peer-rounds", "3", "--peer-systems", "celery"]
    )
    assert (args.peer_jobs, args.peer_rounds, args.peer_systems) == (500, 3, ["celery"])


def test_the_peers_databases_are_analyzed_unless_told_not_to():
    assert parse_args(["--peers"]).peer_analyze is True
    assert parse_args(["--peers", "--no-peer-analyze"]).peer_analyze is False


@pytest.mark.parametrize(
    "argv",
    [
        ["--peer-systems", "sidekiq"],
        ["--decay-servers", "elsewhere"],
        ["--decay-jobs", "0"],
        ["--peer-rounds", "0"],
    ],
)
def test_unknown_systems_servers_and_empty_sizes_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv)
    assert "error" in capsys.readouterr().err


def test_the_default_configurations_are_compared_with_every_peers_best_configuration():
    pairs = {(item.ours, item.peer): item for item in peers.compare(RUNS)}
    # The levers' configurations have their own table, not a line per peer.
    assert set(pairs) == {
        (ours, peer) for ours in ("1 x 4", "2 x 4") for peer in ("pgqueuer", "celery", "dramatiq")
    }
    versus_pgqueuer = pairs["1 x 4", "pgqueuer"]
    assert (versus_pgqueuer.peer_config, versus_pgqueuer.ratio) == ("4x10", 1.07)
    assert (versus_pgqueuer.goal, versus_pgqueuer.status) == (None, None)
    assert (pairs["1 x 4", "celery"].ratio, pairs["1 x 4", "celery"].status) == (2.5, "PASS")
    assert (pairs["2 x 4", "celery"].goal, pairs["2 x 4", "celery"].status) == (2.0, "PASS")


def test_the_goal_rows_have_descriptive_ids_and_come_in_order():
    goals = peers.peer_goals(_result(RUNS))
    assert [(goal.id, goal.name) for goal in goals] == [
        ("peers-default-1x4-vs-pgqueuer-matched-shape", MATCHED_1X4),
        ("peers-default-2x4-vs-pgqueuer-matched-shape", MATCHED_2X4),
        ("peers-default-1x4-vs-celery-best", CELERY_1X4),
        ("peers-default-2x4-vs-celery-best", CELERY_2X4),
        ("throughput-mode-1x4-vs-pgqueuer-best", THROUGHPUT),
    ]
    assert [goal.target for goal in goals] == [">= 1.2x"] * 2 + [">= 2.0x"] * 2 + [">= 1.0x"]


def test_the_matched_shape_goal_passes_at_1_2_and_misses_below():
    goals = _goals(RUNS)
    line = goals[MATCHED_1X4]
    assert (line.ratio, line.status) == (1.5, "PASS")  # 3,000 / 2,000
    assert line.measured == "3,000 jobs/s"
    assert line.reference == "Pgqueuer 1x4: 2,000 jobs/s"
    assert (goals[MATCHED_2X4].ratio, goals[MATCHED_2X4].status) == (1.2, "PASS")  # at target
    below = _goals(_replace(RUNS, peers.OURS, "2 x 4", 2380))[MATCHED_2X4]
    assert (below.ratio, below.status) == (1.19, "MISS")


def test_the_celery_goal_passes_at_2_0_and_misses_below():
    goals = _goals(_replace(RUNS, "celery", "default", 1500))
    assert (goals[CELERY_1X4].ratio, goals[CELERY_1X4].status) == (2.0, "PASS")
    assert (goals[CELERY_2X4].ratio, goals[CELERY_2X4].status) == (1.6, "MISS")


def test_the_throughput_goal_is_against_pgqueuers_best_configuration():
    line = _goals(RUNS)[THROUGHPUT]
    assert (line.ratio, line.status) == (1.5, "PASS")  # 4,200 / 2,800 (its 4x10)
    assert line.reference == "Pgqueuer 4x10: 2,800 jobs/s"
    at = _goals(_replace(RUNS, peers.OURS, "1 x 4 throughput", 2800))[THROUGHPUT]
    assert (at.ratio, at.status) == (1.0, "PASS")
    below = _goals(_replace(RUNS, peers.OURS, "1 x 4 throughput", 2700))[THROUGHPUT]
    assert (below.ratio, below.status) == (0.96, "MISS")
    # The default 1 x 4 is not judged against PgQueuer's best any more.
    assert all("1x10" not in goal.reference for goal in _goals(RUNS).values())


def test_peer_goals_say_why_they_were_not_run():
    assert {goal.status for goal in peers.peer_goals(None)} == {"not run"}
    assert {goal.reference for goal in peers.peer_goals(None)} == {"peers phase not run"}
    result = peers.PeersResult(jobs=10, rounds=1, runs=[], errors={"celery": "boom"})
    by_name = {goal.name: goal for goal in peers.peer_goals(result)}
    assert by_name[CELERY_1X4].reference == "boom"
    assert by_name[MATCHED_1X4].reference == "not measured"
    # A configuration left out (or a peer's config missing) is not run, not a MISS.
    without = [run for run in RUNS if run.config not in ("1 x 4 throughput", "1x4")]
    goals = _goals(without)
    assert (goals[THROUGHPUT].status, goals[THROUGHPUT].reference) == ("not run", "not measured")
    assert goals[MATCHED_1X4].status == "not run"
    assert goals[CELERY_1X4].status == "PASS"


def test_peer_goals_carry_the_same_runs_in_hand_limit_and_say_when_the_target_is_above_it():
    goals = _goals(RUNS, **{"1_x_4": 2000.0, "2_x_4": 9000.0})
    small = goals[MATCHED_1X4]
    assert "in-hand limit of 1 x 4 2,000 jobs/s (1.00x)" in small.reference  # / 2,000
    assert "the target (2,400 jobs/s) is above the in-hand limit" in small.reference
    large = goals[MATCHED_2X4]
    assert "(4.50x)" in large.reference and "above" not in large.reference
    celery = goals[CELERY_2X4]
    assert "above" not in celery.reference  # 2 x 1,200 <= 9,000
    # Throughput mode holds more than its threads: no in-hand limit beside it.
    assert "in-hand" not in goals[THROUGHPUT].reference
    # The verdicts stay the measured ratios' own.
    assert (small.status, large.status) == ("PASS", "PASS")


def test_each_lever_is_shown_against_the_default_1_x_4_and_pgqueuers_best():
    rows = {row.config: row for row in peers.levers(RUNS)}
    assert list(rows) == [
        "1 x 4",
        "1 x 4 prefetch",
        "1 x 4 lean",
        "1 x 4 async",
        "1 x 4 throughput",
    ]
    assert (rows["1 x 4"].versus_default, rows["1 x 4"].versus_peer) == (1.0, 1.07)
    assert (rows["1 x 4 prefetch"].versus_default, rows["1 x 4 prefetch"].versus_peer) == (
        1.1,
        1.18,
    )
    assert (rows["1 x 4 throughput"].versus_default, rows["1 x 4 throughput"].versus_peer) == (
        1.4,
        1.5,
    )
    assert rows["1 x 4 lean"].description == "lean timeline"
    lines = _result(RUNS).render()
    table = [line for line in lines if "1 x 4 async" in line and "async commit" in line]
    assert len(table) == 1 and "3,600" in table[0] and "1.20" in table[0] and "1.29" in table[0]
    assert any("/ Pgqueuer 4x10" in line for line in lines)


def test_each_lever_reaches_the_worker_processes_as_its_setting(monkeypatch, tmp_path):
    seen: dict[str, dict[str, str]] = {}

    def fake_run_workers(db, env, *, label, extra_env, **kwargs):
        seen[label] = dict(extra_env or {})
        return workers.WorkerRun(
            span_seconds=1.0,
            claimed_events=10,
            succeeded_events=10,
            jobs_succeeded=10,
            jobs_per_second=10.0,
            processes=kwargs["processes"],
            threads=kwargs["threads"],
            path="postgres",
            jobs=10,
            drain_wall_seconds=1.0,
            commits_per_job=1.0,
            load_average=[1.0],
        )

    monkeypatch.setattr(peers, "run_workers", fake_run_workers)
    for config in peers.OUR_CONFIGS:
        run = peers.run_ours(
            None, {}, config, jobs=10, log_dir=tmp_path, label=config, analyzed=False
        )
        assert run.config == config
    assert seen["1 x 4"] == seen["2 x 4"] == {}
    assert seen["1 x 4 prefetch"] == {"JOB_WORKER_PREFETCH": "36"}
    assert seen["1 x 4 lean"] == {"JOB_WORKER_LEAN_TIMELINE": "true"}
    assert seen["1 x 4 async"] == {"JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT": "false"}
    assert seen["1 x 4 throughput"] == {
        "JOB_WORKER_PREFETCH": "36",
        "JOB_WORKER_LEAN_TIMELINE": "true",
        "JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT": "false",
    }


@pytest.mark.parametrize(
    ("value", "lean"),
    [("true", True), ("1", True), (" On ", True), ("false", False), ("", False), (None, False)],
)
def test_a_lean_timeline_is_read_from_the_workers_settings(value, lean):
    env = {} if value is None else {"JOB_WORKER_LEAN_TIMELINE": value}
    assert workers.lean_timeline(env) is lean


def test_pgqueuer_runs_the_matched_shape():
    (pgqueuer,) = [peer for peer in peers.PEERS if peer.key == "pgqueuer"]
    assert "1x4" in pgqueuer.configs
    app = (peers.APPS_DIR / "pgqueuer_app.py").read_text()
    assert '"1x4": (1, 4)' in app


def test_the_reports_peer_rows_take_the_in_hand_limits_of_the_same_runs_backlog_phase():
    meta = report.Meta(
        started_at="x",
        command="c",
        commit="abc",
        cpus=2,
        cpu_model="",
        memory_gib="",
        os="",
        python="",
        postgres_host="",
        database="",
        load_start=[],
    )
    limit = backlog.BacklogConfig(
        processes=1,
        threads=4,
        fused=1.0,
        batched=1.0,
        not_analyzed=1.0,
        analyzed=1.0,
        in_hand=2000.0,
    )
    results = report.Results(
        meta=meta,
        backlog=backlog.BacklogResult(jobs=10_000, rounds=2, configs=[limit]),
        peers=peers.PeersResult(jobs=10_000, rounds=2, runs=RUNS, comparisons=peers.compare(RUNS)),
    )
    rows = {
        goal.name: goal for goal in report.evaluate_goals(results) if goal.id.startswith("peers-")
    }
    assert "in-hand limit of 1 x 4 2,000" in rows[MATCHED_1X4].reference
    assert "in-hand" not in rows[MATCHED_2X4].reference


def test_the_decay_goal_is_the_worst_round_against_the_first():
    assert decay.worst_ratio([1000, 950, 840, 1100]) == 0.84
    assert decay.decay_verdict([1000, 950, 840, 1100]) == "MISS"
    assert decay.decay_verdict([1000, 950, 850, 1100]) == "PASS"


def test_one_decay_round_has_no_verdict():
    assert decay.decay_verdict([1000]) == "not run"
    assert decay.decay_verdict([]) == "not run"


def test_decay_goals_cover_both_servers_even_when_not_run():
    goals = decay.goals(None)
    assert [(goal.id, goal.status) for goal in goals] == [
        ("no-decay-private-server", "not run"),
        ("no-decay-shared-server", "not run"),
    ]


def test_cpu_over_a_window_is_interpolated_between_samples():
    samples = [Sample(at=t, worker=t * 0.5, postgres=t * 0.25, redis=0.0) for t in (0, 2, 4)]
    used = cpu_between(samples, 1.0, 3.0)
    assert used == {"worker": 1.0, "postgres": 0.5, "redis": 0.0}


def test_the_readme_renders_the_peers_table_against_this_queue_1_x_4():
    data = {
        "meta": {"started_at": "x", "command": "c", "commit": "abc"},
        "peers": {
            "jobs": 10_000,
            "rounds": 2,
            "runs": [
                {**vars(_run(peers.OURS, "1 x 4", 3000)), "samples_jobs_per_second": [2900, 3000]},
                {
                    **vars(_run("celery", "default", 1200)),
                    "store": "Redis",
                    "commits_per_job": None,
                    "redis_commands_per_job": 9.0,
                },
            ],
        },
    }
    table = readme.render(readme.parse(data)).split("Peers in the same run")[1].splitlines()
    assert table[-2:] == [
        "| **this queue** | 1 x 4 | PostgreSQL | 3,000 | 2,900 / 3,000 | 1.00 | 0.250 | 0.500 "
        "| 1.01 |",
        "| Celery 1.0 | default | Redis | 1,200 | - | 2.50 | 0.250 | 0.500 | (9.0) |",
    ]


def test_a_run_without_peers_renders_no_peers_table():
    data = {"meta": {"started_at": "x", "command": "c", "commit": "abc"}}
    assert "Peers in the same run" not in readme.render(readme.parse(data))


def test_every_round_s_figure_stands_apart_from_the_best_one():
    three_rounds = [
        _run(peers.OURS, "1 x 4", 1909, samples_jobs_per_second=[1870.0, 1909.0, 1663.0]),
        _run("pgqueuer", "4x10", 7216, samples_jobs_per_second=[5441.0, 7216.0, 6652.0]),
    ]
    lines = _result(three_rounds).render()
    assert any(" 1,909  1,870/1,909/1,663 " in line for line in lines), lines
    assert any(" 7,216  5,441/7,216/6,652 " in line for line in lines), lines
