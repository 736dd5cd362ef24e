"""jobs.flowcontrol's rules: schedule definitions and their validation, ticks, the
missed-tick policy and its cost, per-key limits by pattern and the rate window."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from jobs.checks import check_settings
from jobs.flowcontrol import (
    INTERVAL_MAX_SECONDS,
    MAX_TICKS_PER_PASS,
    RATE_BUCKETS,
    ScheduleError,
    ScheduleSpec,
    key_limit,
    parse_schedule,
    parse_schedules,
    plan_ticks,
    rate_room,
    schedule_problems,
    tick_key,
)

T0 = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)


def every(seconds: int, missed: str = "latest"):
    raw = {"type": "demo.success", "interval": seconds, "missed": missed}
    return parse_schedule("s", raw, default_timezone="UTC")


def test_interval_ticks_are_multiples_of_the_interval_since_the_epoch():
    spec = every(60)
    first = spec.next_tick(T0 + timedelta(seconds=1))
    assert [first, spec.next_tick(first)] == [T0 + timedelta(minutes=m) for m in (1, 2)]
    assert spec.latest_tick(T0 + timedelta(seconds=59)) == T0
    assert spec.previous_tick(T0) == T0 - timedelta(minutes=1)


def test_cron_ticks_follow_the_schedules_time_zone():
    raw = {"type": "demo.success", "cron": "0 3 * * *", "timezone": "Asia/Tehran"}
    spec = parse_schedule("nightly", raw, default_timezone="UTC")
    # 03:00 in Tehran (UTC+03:30) is 23:30 UTC the day before.
    assert spec.next_tick(T0) == datetime(2026, 12, 4, 23, 30, tzinfo=UTC)
    assert spec.latest_tick(T0) == datetime(2026, 12, 3, 23, 30, tzinfo=UTC)


def test_the_latest_cron_tick_is_never_after_the_moment_asked():
    spec = parse_schedule(
        "m", {"type": "demo.success", "cron": "* * * * *"}, default_timezone="UTC"
    )
    moment = T0 + timedelta(seconds=59.5)
    assert spec.latest_tick(moment) == T0
    assert spec.latest_tick(T0) == T0


def test_on_time_ticks_are_all_enqueued():
    plan = plan_ticks(every(1), last_tick=T0, now=T0 + timedelta(seconds=2.5), grace_seconds=5)
    assert plan.ticks == [T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)]
    assert plan.seen_until == T0 + timedelta(seconds=2)


def test_missed_ticks_run_the_latest_once():
    plan = plan_ticks(every(1), last_tick=T0, now=T0 + timedelta(seconds=10.5), grace_seconds=2)
    assert plan.ticks == [T0 + timedelta(seconds=s) for s in (8, 9, 10)]


def test_missed_ticks_are_skipped_with_skip():
    plan = plan_ticks(
        every(1, "skip"), last_tick=T0, now=T0 + timedelta(seconds=10.5), grace_seconds=2
    )
    assert plan.ticks == [T0 + timedelta(seconds=s) for s in (9, 10)]
    assert plan.seen_until == T0 + timedelta(seconds=10)


@pytest.fixture
def tick_computations(monkeypatch):
    """How many ticks the schedules computed (next and previous) since the test began."""
    counted = [0]
    for name in ("next_tick", "previous_tick"):
        original = getattr(ScheduleSpec, name)

        def counting(self, moment, original=original):
            counted[0] += 1
            return original(self, moment)

        monkeypatch.setattr(ScheduleSpec, name, counting)
    return counted


@pytest.mark.parametrize("missed", ["latest", "skip"])
def test_catching_up_a_year_costs_what_catching_up_a_minute_does(tick_computations, missed):
    raw = {"type": "demo.success", "cron": "* * * * *", "missed": missed}
    spec = parse_schedule("per-minute", raw, default_timezone="UTC")
    costs = []
    for gap in (timedelta(minutes=3), timedelta(days=366)):
        tick_computations[0] = 0
        plan = plan_ticks(spec, last_tick=T0 - gap, now=T0 + timedelta(seconds=5), grace_seconds=30)
        costs.append(tick_computations[0])
        assert plan.ticks == ([T0 - timedelta(minutes=1)] if missed == "latest" else []) + [T0]
        assert plan.seen_until == T0
    assert costs[0] == costs[1] <= 4


def test_a_pass_plans_at_most_its_bound_of_on_time_ticks():
    plan = plan_ticks(every(1), last_tick=T0, now=T0 + timedelta(seconds=500), grace_seconds=600)
    assert len(plan.ticks) == MAX_TICKS_PER_PASS
    assert plan.seen_until == T0 + timedelta(seconds=MAX_TICKS_PER_PASS)
    rest = plan_ticks(
        every(1), last_tick=plan.seen_until, now=T0 + timedelta(seconds=500), grace_seconds=600
    )
    assert rest.ticks[0] == T0 + timedelta(seconds=MAX_TICKS_PER_PASS + 1)


def test_a_ticks_key_is_its_schedule_and_utc_time():
    assert tick_key("s", T0) == "schedule:s:2026-12-04T12:00:00+00:00"


GOOD = {"type": "demo.success", "interval": 60}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"type": "demo.success"}, "cron/interval"),
        ({"type": "demo.success", "task": "y", "interval": 1}, "task/type"),
        ({"type": "no.such.type", "interval": 1}, "type"),
        ({"task": "tests.nowhere.task", "interval": 1}, "task"),
        ({"type": 7, "interval": 1}, "type"),
        ({**GOOD, "interval": 0}, "interval"),
        ({**GOOD, "interval": 10**12}, "interval"),
        ({**GOOD, "interval": 60.5}, "interval"),
        ({"type": "demo.success", "cron": "61 * * * *"}, "cron"),
        ({"type": "demo.success", "cron": ["* * * * *"]}, "cron"),
        ({**GOOD, "missed": "all"}, "missed"),
        ({**GOOD, "timezone": "Mars/Base"}, "timezone"),
        ({**GOOD, "priority": 40_000}, "priority"),
        ({**GOOD, "priority": "high"}, "priority"),
        ({**GOOD, "priority": True}, "priority"),
        ({**GOOD, "queue": "bad queue!"}, "queue"),
        ({**GOOD, "queue": "q" * 65}, "queue"),
        ({**GOOD, "queue": ""}, "queue"),
        ({**GOOD, "payload": {"text": "a\x00b"}}, "payload"),
        ({**GOOD, "payload": [["a", 1]]}, "payload"),
        ({**GOOD, "payload": "{}"}, "payload"),
        ({**GOOD, "args": [1]}, "args/kwargs"),
        ({**GOOD, "every": 1}, "every"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_field(raw, field):
    problems = schedule_problems("s", raw, default_timezone="UTC")
    assert [problem.split(":")[0] for problem in problems] == [field]
    with pytest.raises(ScheduleError, match=field):
        parse_schedule("s", raw, default_timezone="UTC")


def test_a_tasks_arguments_are_a_list_and_a_dict(register_handler):
    register_handler("pkg.tasks.send", lambda context: None)
    base = {"task": "pkg.tasks.send", "interval": 60}
    assert (
        schedule_problems("s", {**base, "args": [1], "kwargs": {"a": 1}}, default_timezone="UTC")
        == []
    )
    problems = schedule_problems("s", {**base, "args": "abc", "kwargs": []}, default_timezone="UTC")
    assert [problem.split(":")[0] for problem in problems] == ["args", "kwargs"]
    problems = schedule_problems("s", {**base, "payload": {}}, default_timezone="UTC")
    assert [problem.split(":")[0] for problem in problems] == ["payload"]


def test_an_interval_of_a_year_is_the_longest_accepted():
    assert (
        schedule_problems("s", {**GOOD, "interval": INTERVAL_MAX_SECONDS}, default_timezone="UTC")
        == []
    )


def test_a_schedule_that_is_not_a_dict_is_a_problem_not_a_crash():
    assert schedule_problems("s", ["type", "demo.success"], default_timezone="UTC") == [
        "definition: a dict of the schedule's fields, got a list"
    ]


def test_a_broken_schedule_is_set_aside_and_the_others_read():
    schedules = parse_schedules(
        {"a-broken": {**GOOD, "priority": 40_000}, "b-good": GOOD}, default_timezone="UTC"
    )
    assert list(schedules.valid) == ["b-good"]
    assert list(schedules.invalid) == ["a-broken"]
    assert "priority" in schedules.invalid["a-broken"]
    assert schedules.names() == ["a-broken", "b-good"]


def test_key_limits_prefer_exact_then_longest_pattern_then_default():
    limits = {"customer:*": 2, "customer:vip:*": 5, "customer:7": 1, "default": 10}
    assert key_limit("customer:7", limits) == 1
    assert key_limit("customer:vip:1", limits) == 5
    assert key_limit("customer:3", limits) == 2
    assert key_limit("tenant", limits) == 10
    assert key_limit("tenant", {"customer:*": 2}) is None


def _claims_admitted(demand: list[float], *, limit: int, period: int) -> list[float]:
    """The claim times a rate window admits out of ``demand`` (one wanted claim each)."""
    stored: object = None
    admitted = []
    for now in demand:
        room = rate_room(stored, limit=limit, period_seconds=period, now=now)
        if room.room:
            admitted.append(now)
            stored = room.stored(1)
    return admitted


def test_the_rate_window_admits_n_claims_per_closed_period():
    admitted = _claims_admitted([0.0, 0.2, 0.4, 1.0, 1.3], limit=3, period=1)
    # 1.0 would make four claims in [0.0, 1.0]; 1.3 finds only 0.4 in [0.3, 1.3].
    assert admitted == [0.0, 0.2, 0.4, 1.3]


def test_no_window_of_a_period_ever_holds_more_than_the_limit():
    rng = random.Random(7)
    demand = sorted(rng.uniform(0, 100) for _ in range(5_000))
    admitted = _claims_admitted(demand, limit=25, period=3)
    busiest = max(
        sum(1 for other in admitted[i:] if other - start <= 3) for i, start in enumerate(admitted)
    )
    assert busiest == 25


def test_a_rate_claimed_from_without_pause_reaches_over_95_percent_of_its_limit():
    demand = [n / 1000 for n in range(100_000)]  # a claim wanted every millisecond for 100 s
    admitted = _claims_admitted(demand, limit=50, period=1)
    assert len(admitted) >= 50 * 100 * RATE_BUCKETS / (RATE_BUCKETS + 1) - 50
    assert len(admitted) <= 50 * 100


def test_a_stored_window_is_the_same_size_whatever_the_limit():
    small = rate_room(None, limit=10, period_seconds=1, now=0.0).stored(10)
    large = rate_room(None, limit=100_000, period_seconds=3600, now=0.0).stored(50_000)
    assert len(small["counts"]) == len(large["counts"]) == 1
    later = rate_room(large, limit=100_000, period_seconds=3600, now=1800.0)
    assert (later.room, len(later.counts)) == (50_000, RATE_BUCKETS + 1)


def test_the_system_check_names_a_bad_schedule_and_bad_key_limits(settings):
    settings.JOB_SCHEDULES = {"broken": {"type": "demo.success"}}
    settings.JOB_CONCURRENCY_KEY_LIMITS = {"customer:*": 0}
    ids = {message.id for message in check_settings()}
    assert {"jobs.E024", "jobs.E025"} <= ids
