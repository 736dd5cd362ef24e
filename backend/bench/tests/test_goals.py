"""The backlog, latency and mix goals of the bench: their verdicts, the batched pgbench
script and the README rows (no database, no timing)."""

import re
from dataclasses import asdict

import pytest

from bench import backlog, mix, raw_sql, readme, wakeup, workflows
from bench.jobtypes import mix_seconds
from bench.run import DEFAULT_PHASES, parse_args


def _config(**figures: float) -> backlog.BacklogConfig:
    values = {
        "processes": 1,
        "threads": 4,
        "fused": 1000.0,
        "batched": 4000.0,
        "not_analyzed": 2100.0,
        "analyzed": 2000.0,
        "in_hand": 2000.0,
        "in_hand_split": "1 client x 4 per statement",
        **figures,
    }
    return backlog.BacklogConfig(**values)  # type: ignore[arg-type]


def _backlog(*configs: backlog.BacklogConfig) -> backlog.BacklogResult:
    return backlog.BacklogResult(jobs=10_000, rounds=2, configs=list(configs))


def _statuses(goals):
    return [goal.status for goal in goals]


def test_a_backlog_at_the_in_hand_target_passes_both_rows():
    # 1,700 / 2,000 = 0.85 exactly: at the target passes.
    goals = backlog.goals(
        _backlog(_config(analyzed=1700.0, not_analyzed=1800.0), _config(processes=2))
    )
    assert [goal.id for goal in goals] == [
        "default-1x4-vs-in-hand-limit",
        "default-1x4-analyzed-vs-not",
        "default-2x4-vs-in-hand-limit",
        "default-2x4-analyzed-vs-not",
    ]
    assert _statuses(goals) == ["PASS"] * 4
    in_hand, spread = goals[:2]
    # The slower variant is the one judged.
    assert (in_hand.ratio, spread.ratio) == (0.85, 0.94)
    assert "worker 1 x 4, default settings, 10,000-job backlog" in in_hand.name
    assert in_hand.target == ">= 0.85 of the in-hand limit, with and without ANALYZE"


@pytest.mark.parametrize(
    ("figures", "missed"),
    [
        ({"analyzed": 1680.0, "not_analyzed": 1700.0}, 0),  # 0.84 of the in-hand limit
        ({"not_analyzed": 1680.0, "analyzed": 1750.0}, 0),  # either variant may be slower
        ({"not_analyzed": 2300.0}, 1),  # 2000 / 2300 = 0.87: more than 10 % apart
    ],
)
def test_a_backlog_that_misses_one_target_gives_miss_on_its_row_only(figures, missed):
    goals = backlog.goals(_backlog(_config(**figures), _config(processes=2)))
    expected = ["PASS"] * 4
    expected[missed] = "MISS"
    assert _statuses(goals) == expected
    assert all(goal.ratio is not None for goal in goals)  # printed even when missed


def test_the_2_x_4_row_is_judged_on_its_own_in_hand_limit():
    goals = backlog.goals(_backlog(_config(), _config(processes=2, in_hand=4000.0)))
    assert "worker 2 x 4" in goals[2].name
    assert (goals[2].ratio, goals[2].status) == (0.5, "MISS")
    assert _statuses(goals[:2]) == ["PASS", "PASS"]


def test_the_in_hand_row_names_the_python_floor_beside_the_limit():
    goals = backlog.goals(_backlog(_config(python_floor=1500.0), _config(processes=2)))
    assert "Python floor 1,500 jobs/s (1 bare loop x 4 per services.claim_jobs call, 0.75 " in (
        goals[0].reference
    )
    assert "Python floor" not in goals[2].reference  # not measured for that configuration


def test_backlog_goals_say_why_they_were_not_run():
    goals = backlog.goals(None)
    assert _statuses(goals) == ["not run"] * 4
    assert {goal.reference for goal in goals} == {"backlog phase not run"}
    # Without pgbench there is no limit to compare with; the spread is still judged.
    missing = backlog.goals(_backlog(_config(fused=float("nan"), in_hand=float("nan"))))
    assert _statuses(missing[:2]) == ["not run", "PASS"]
    assert missing[0].reference == "no in-hand limit (pgbench not available)"


def _mix(single: float, batched: float) -> mix.MixResult:
    return mix.MixResult(jobs=3000, threads=4, rounds=2, single=single, batched=batched)


@pytest.mark.parametrize(
    ("single", "batched", "status"),
    [(600.0, 660.0, "PASS"), (600.0, 570.0, "PASS"), (600.0, 560.0, "MISS")],
)
def test_the_mix_goal_allows_five_per_cent_below_batch_sizes_of_1(single, batched, status):
    (goal,) = mix.goals(_mix(single, batched))
    assert (goal.id, goal.status) == ("mix-batched-vs-batch-sizes-1", status)
    assert "5 % tolerance" in goal.target
    assert mix.goals(None)[0].status == "not run"


def test_the_mix_sleeps_the_same_for_the_same_job_and_stays_in_range():
    assert mix_seconds(7) == mix_seconds(7)
    sleeps = [mix_seconds(n) for n in range(1000)]
    assert min(sleeps) >= 0.001 and max(sleeps) <= 0.010
    assert len(set(sleeps)) > 900


def _run(mode: str, p50: float, p99: float) -> wakeup.WakeupRun:
    return wakeup.WakeupRun(
        mode=mode,
        jobs=100,
        p50_ms=p50,
        p99_ms=p99,
        max_ms=p99,
        idle_seconds=30,
        idle_cpu_seconds_per_minute=0.1,
        idle_commits_per_second=0.1,
        load_average=[1.0],
    )


def _completion(mode: str, p99: float) -> wakeup.CompletionRun:
    return wakeup.CompletionRun(
        mode=mode, settings={}, jobs=100, p50_ms=p99 / 2, p99_ms=p99, max_ms=p99
    )


def _wakeup(listen_p50: float, completions: list[wakeup.CompletionRun]) -> wakeup.WakeupResult:
    return wakeup.WakeupResult(
        poll_interval_ms=500,
        threads=4,
        listen=_run("listen", listen_p50, 20),
        polling=_run("polling", 250, 490),
        completion=completions,
    )


def test_the_latency_goal_passes_a_fast_claim_and_a_prompt_completion():
    result = _wakeup(
        4.0,
        [_completion("default settings", 6), _completion("batch sizes 1", 12)],
    )
    goals = wakeup.goals(result)
    assert [goal.id for goal in goals] == [
        "claim-latency-listen",
        "completion-latency-default-settings",
        "completion-latency-batch-sizes-1",
    ]
    assert _statuses(goals) == ["PASS"] * 3
    assert goals[2].ratio == 2.0  # batch sizes 1 p99 / default p99


def test_the_latency_goal_misses_a_slow_claim_or_a_slow_completion():
    result = _wakeup(
        12.0,
        [_completion("default settings", 6), _completion("batch sizes 1", 55)],
    )
    assert _statuses(wakeup.goals(result)) == ["MISS", "PASS", "MISS"]


def test_the_latency_goal_says_what_was_not_measured():
    assert _statuses(wakeup.goals(None)) == ["not run"] * 3
    assert _statuses(wakeup.goals(_wakeup(4.0, []))) == ["PASS", "not run", "not run"]


def test_the_backlog_and_mix_phases_run_by_default_with_their_sizes():
    args = parse_args([])
    assert {"backlog", "mix"} <= set(DEFAULT_PHASES)
    assert (args.backlog_goal_jobs, args.backlog_goal_rounds) == (10_000, 2)
    assert (args.mix_jobs, args.mix_rounds, args.completion_jobs) == (3000, 2, 100)
    with pytest.raises(SystemExit):
        parse_args(["--mix-rounds", "0"])


def test_the_batched_pgbench_script_runs_the_workers_statements():
    from jobs.drivers.postgres import QUERIES

    script = raw_sql.pgbench_script("batched")
    variables = set(re.findall(r"(?<![\w:]):([A-Za-z_]\w*)", script))
    defined = set(raw_sql.pgbench_variables()) | {"client_id", "claimers"}
    assert variables <= defined, variables - defined
    # Every CTE of the worker's statement is there, completion and claim in one statement.
    ctes = re.findall(r"(\w+) AS (?:MATERIALIZED )?\(", QUERIES["complete_and_claim_jobs"].text)
    assert {"completed", "claimed", "candidate"} <= set(ctes)
    assert all(f"{cte} AS" in script for cte in ctes)
    assert "BEGIN" not in script and script.count("UPDATE jobs_job AS job") == 2
    assert "\\gset done_" in script and "FROM claimed" in script


def test_the_readme_shows_the_backlog_latency_and_mix_goal_rows():
    goals = [
        *backlog.goals(_backlog(_config(analyzed=1500.0))),
        *wakeup.goals(_wakeup(4.0, [_completion("default settings", 6)])),
        *mix.goals(_mix(600.0, 650.0)),
    ]
    data = {
        "meta": {"started_at": "x", "command": "c", "commit": "abc"},
        "goals": [asdict(goal) for goal in goals],
    }
    table = readme.render(readme.parse(data))
    ids = [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines()[4:]]
    assert ids == [goal.id for goal in goals]
    assert ids[:2] == ["default-1x4-vs-in-hand-limit", "default-1x4-analyzed-vs-not"]
    assert "| 0.75 | >= 0.85 of the in-hand limit, with and without ANALYZE | **MISS** |" in table


def test_the_in_hand_splits_never_hold_more_jobs_than_the_workers_threads():
    assert backlog.in_hand_splits(1, 4) == [(2, 2), (1, 4)]
    assert backlog.in_hand_splits(2, 4) == [(4, 2), (2, 4)]
    assert backlog.in_hand_splits(1, 1) == []
    for processes, threads in [(1, 4), (2, 4), (3, 6)]:
        for clients, batch in backlog.in_hand_splits(processes, threads):
            assert clients * batch == processes * threads and batch <= threads


def test_the_batched_script_claims_for_as_many_worker_ids_as_its_batch():
    assert "generate_series(1, 10)" in raw_sql.pgbench_script("batched")
    assert "generate_series(1, 4)" in raw_sql.pgbench_script("batched", batch=4)


def test_the_goal_row_carries_the_in_hand_split_and_both_variants_ratios():
    item = _config(in_hand=2500.0, in_hand_split="2 clients x 2 per statement")
    in_hand, spread = backlog.goals(_backlog(item, _config(processes=2)))[:2]
    assert in_hand.reference == (
        "in-hand limit 2,500 jobs/s (2 clients x 2 per statement; not analyzed 0.84, "
        "analyzed 0.80; fused 1,000, batched 4,000 jobs/s)"
    )
    assert (in_hand.ratio, in_hand.status) == (0.8, "MISS")
    assert "in-hand" not in spread.reference


def test_the_backlog_table_prints_the_in_hand_column_and_its_split():
    item = _config(in_hand=1800.0, in_hand_split="2 clients x 2 per statement")
    lines = _backlog(item).render()
    assert "in hand" in lines[2] and "/in hand" in lines[2]
    assert "1,800" in lines[3] and " 1.11 " in lines[3]  # 2,000 / 1,800
    assert any(
        "1 x 4: 2 clients x 2 per statement; 1.80x the fused limit" in line for line in lines
    )


def test_beyond_reach_says_when_a_target_is_above_the_in_hand_limit():
    assert backlog.beyond_reach(1900.0, 2000.0) == (
        "; the target (2,000 jobs/s) is above the in-hand limit"
    )
    assert backlog.beyond_reach(1900.0, 1900.0) == ""
    assert backlog.beyond_reach(float("nan"), 2000.0) == ""


def test_the_in_hand_limits_are_keyed_by_configuration_where_pgbench_ran():
    result = _backlog(_config(in_hand=1900.0), _config(processes=2, in_hand=float("nan")))
    assert backlog.in_hand_limits(result) == {"1 x 4": 1900.0}
    assert backlog.in_hand_limits(None) == {}


@pytest.mark.parametrize(("script", "batch"), [("fused", 1), ("two-statement", 1), ("batched", 4)])
def test_the_pgbench_scripts_carry_no_comment_of_the_statements(script, batch):
    # pgbench numbers a :name inside a comment as a parameter the statement never uses,
    # and the server refuses to prepare it.
    text = raw_sql.pgbench_script(script, batch=batch)
    assert "--" not in text
    assert ":lean" in text  # the parameter itself stays


def test_a_comment_is_dropped_with_its_line_when_nothing_else_is_on_it():
    text = "SELECT 1 -- one (:lean)\n    -- a whole line\nFROM t"
    assert raw_sql._without_comments(text) == "SELECT 1\nFROM t"


def _workflows(
    *, plain: float, workflow: float, without: float, beside: float
) -> workflows.WorkflowsResult:
    return workflows.WorkflowsResult(
        fan_out=workflows.FanOutResult(
            jobs=10_000, rounds=2, plain_seconds=plain, workflow_seconds=workflow
        ),
        waiting=workflows.WaitingResult(
            jobs=10_000, waiting=100_000, rounds=2, without=without, beside=beside
        ),
    )


@pytest.mark.parametrize(
    ("workflow_seconds", "beside", "statuses"),
    [(6.0, 1_900.0, ("PASS", "PASS")), (7.0, 1_700.0, ("MISS", "MISS"))],
    ids=["met", "missed"],
)
def test_the_workflow_goals_judge_the_fan_out_and_the_waiting_drain(
    workflow_seconds, beside, statuses
):
    goals = workflows.goals(
        _workflows(plain=5.0, workflow=workflow_seconds, without=2_000.0, beside=beside)
    )
    assert [goal.id for goal in goals] == [workflows.FAN_OUT_GOAL_ID, workflows.WAITING_GOAL_ID]
    assert tuple(goal.status for goal in goals) == statuses


def test_the_workflow_goals_say_why_they_were_not_run():
    assert {goal.status for goal in workflows.goals(None)} == {"not run"}


def test_the_workflows_phase_runs_by_default_with_its_sizes():
    args = parse_args([])
    assert "workflows" in DEFAULT_PHASES
    assert (args.workflow_jobs, args.workflow_waiting, args.workflow_rounds) == (
        10_000,
        100_000,
        2,
    )
