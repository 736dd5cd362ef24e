"""The peers and decay phases' arithmetic and options (no database, no peer runs)."""

import pytest

from bench import backlog, decay, peers, readme, report
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
    _run("pgqueuer", "4x10", 2800),
    _run("pgqueuer", "1x10", 2500),
    _run("celery", "default", 1200),
    _run("dramatiq", "default", 1500),
]


def test_the_peers_phase_runs_only_when_asked_for():
    assert "peers" not in parse_args([]).phases
    assert "peers" not in DEFAULT_PHASES
    assert "peers" in parse_args(["--peers"]).phases
    assert parse_args(["--only", "peers"]).phases == {"peers"}


def test_the_decay_phase_runs_by_default_with_the_issues_sizes():
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


def test_each_queue_is_compared_with_every_peers_best_configuration():
    pairs = {(item.ours, item.peer): item for item in peers.compare(RUNS)}
    assert set(pairs) == {
        (ours, peer) for ours in ("1 x 4", "2 x 4") for peer in ("pgqueuer", "celery", "dramatiq")
    }
    versus_pgqueuer = pairs["1 x 4", "pgqueuer"]
    assert (versus_pgqueuer.peer_config, versus_pgqueuer.ratio) == ("4x10", 1.07)


def test_a_ratio_at_or_above_its_goal_passes_and_below_misses():
    pairs = {(item.ours, item.peer): item for item in peers.compare(RUNS)}
    assert pairs["1 x 4", "pgqueuer"].status == "PASS"  # 1.07 >= 1.0
    assert pairs["2 x 4", "pgqueuer"].status == "MISS"  # 0.86
    assert (pairs["1 x 4", "celery"].ratio, pairs["1 x 4", "celery"].status) == (2.5, "MISS")
    assert (pairs["1 x 4", "dramatiq"].goal, pairs["1 x 4", "dramatiq"].status) == (None, None)


def test_peer_goals_say_why_they_were_not_run():
    assert {goal.status for goal in peers.peer_goals(None)} == {"not run"}
    result = peers.PeersResult(jobs=10, rounds=1, runs=[], errors={"celery": "boom"})
    by_name = {goal.name: goal for goal in peers.peer_goals(result)}
    assert by_name["this queue 1 x 4 vs Celery + Redis's best configuration"].reference == "boom"


def test_peer_goals_carry_the_ratio_and_verdict():
    result = peers.PeersResult(jobs=10_000, rounds=2, runs=RUNS, comparisons=peers.compare(RUNS))
    goals = {goal.name: goal for goal in peers.peer_goals(result)}
    line = goals["this queue 1 x 4 vs PgQueuer's best configuration"]
    assert (line.number, line.ratio, line.status, line.target) == ("25.2", 1.07, "PASS", ">= 1.0x")


def test_peer_goals_carry_the_same_runs_in_hand_limit_and_say_when_the_target_is_above_it():
    result = peers.PeersResult(jobs=10_000, rounds=2, runs=RUNS, comparisons=peers.compare(RUNS))
    goals = {
        goal.name: goal
        for goal in peers.peer_goals(result, in_hand={"1 x 4": 2000.0, "2 x 4": 9000.0})
    }
    small = goals["this queue 1 x 4 vs PgQueuer's best configuration"]
    assert "in-hand limit of 1 x 4 2,000 jobs/s (0.71x)" in small.reference  # / 2,800
    assert "the target (2,800 jobs/s) is above the in-hand limit" in small.reference
    large = goals["this queue 2 x 4 vs PgQueuer's best configuration"]
    assert "(3.21x)" in large.reference and "above" not in large.reference
    celery = goals["this queue 2 x 4 vs Celery + Redis's best configuration"]
    assert "above" not in celery.reference  # 3 x 1,200 <= 9,000
    # The verdicts stay the measured ratios' own.
    assert (small.status, large.status) == ("PASS", "MISS")


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
    rows = {goal.name: goal for goal in report.evaluate_goals(results) if goal.number == "25.2"}
    assert (
        "in-hand limit of 1 x 4 2,000"
        in rows["this queue 1 x 4 vs PgQueuer's best configuration"].reference
    )
    assert "in-hand" not in rows["this queue 2 x 4 vs PgQueuer's best configuration"].reference


def test_the_decay_goal_is_the_worst_round_against_the_first():
    assert decay.worst_ratio([1000, 950, 840, 1100]) == 0.84
    assert decay.decay_verdict([1000, 950, 840, 1100]) == "MISS"
    assert decay.decay_verdict([1000, 950, 850, 1100]) == "PASS"


def test_one_decay_round_has_no_verdict():
    assert decay.decay_verdict([1000]) == "not run"
    assert decay.decay_verdict([]) == "not run"


def test_decay_goals_cover_both_servers_even_when_not_run():
    goals = decay.goals(None)
    assert [(goal.number, goal.status) for goal in goals] == [("25.3", "not run")] * 2


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
