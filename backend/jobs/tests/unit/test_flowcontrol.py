"""jobs.flowcontrol's pure rules: schedule definitions and ticks, the missed-tick policy,
per-key limits by pattern and the rate window."""

from datetime import UTC, datetime, timedelta

import pytest

from jobs.checks import check_settings
from jobs.flowcontrol import (
    ScheduleError,
    key_limit,
    parse_schedule,
    plan_ticks,
    rate_admits,
    tick_key,
)

T0 = datetime(2026, 12, 4, 12, 0, 0, tzinfo=UTC)


def every(seconds: int, missed: str = "latest"):
    raw = {"type": "demo.success", "interval": seconds, "missed": missed}
    return parse_schedule("s", raw, default_timezone="UTC")


def test_interval_ticks_are_multiples_of_the_interval_since_the_epoch():
    spec = every(60)
    ticks = list(spec.ticks(T0 + timedelta(seconds=1), T0 + timedelta(minutes=3)))
    assert ticks == [T0 + timedelta(minutes=m) for m in (1, 2, 3)]


def test_cron_ticks_follow_the_schedules_time_zone():
    raw = {"type": "demo.success", "cron": "0 3 * * *", "timezone": "Asia/Tehran"}
    spec = parse_schedule("nightly", raw, default_timezone="UTC")
    # 03:00 in Tehran (UTC+03:30) is 23:30 UTC the day before.
    assert spec.next_tick(T0) == datetime(2026, 12, 4, 23, 30, tzinfo=UTC)
    assert spec.latest_tick(T0) == datetime(2026, 12, 3, 23, 30, tzinfo=UTC)


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


def test_a_ticks_key_is_its_schedule_and_utc_time():
    assert tick_key("s", T0) == "schedule:s:2026-12-04T12:00:00+00:00"


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"type": "x"}, "cron"),
        ({"type": "x", "task": "y", "interval": 1}, "task"),
        ({"type": "x", "cron": "61 * * * *"}, "cron"),
        ({"type": "x", "interval": 0}, "interval"),
        ({"type": "x", "interval": 5, "missed": "all"}, "missed"),
        ({"type": "x", "interval": 5, "timezone": "Mars/Base"}, "timezone"),
        ({"type": "x", "interval": 5, "args": [1]}, "payload"),
        ({"type": "x", "interval": 5, "every": 1}, "unknown"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_field(raw, problem):
    with pytest.raises(ScheduleError, match=problem):
        parse_schedule("s", raw, default_timezone="UTC")


def test_key_limits_prefer_exact_then_longest_pattern_then_default():
    limits = {"customer:*": 2, "customer:vip:*": 5, "customer:7": 1, "default": 10}
    assert key_limit("customer:7", limits) == 1
    assert key_limit("customer:vip:1", limits) == 5
    assert key_limit("customer:3", limits) == 2
    assert key_limit("tenant", limits) == 10
    assert key_limit("tenant", {"customer:*": 2}) is None


def test_the_rate_window_admits_n_claims_per_closed_period():
    window: list[float] = []
    admitted = []
    for now in (0.0, 0.2, 0.4, 1.0, 1.3):
        ok, window = rate_admits(window, limit=3, period_seconds=1, now=now)
        admitted.append(ok)
    # 1.0 would make four claims in [0.0, 1.0]; 1.3 finds only 0.4 in [0.3, 1.3].
    assert admitted == [True, True, True, False, True]


def test_the_system_check_names_a_bad_schedule_and_bad_key_limits(settings):
    settings.JOB_SCHEDULES = {"broken": {"type": "demo.success"}}
    settings.JOB_CONCURRENCY_KEY_LIMITS = {"customer:*": 0}
    ids = {message.id for message in check_settings()}
    assert {"jobs.E024", "jobs.E025"} <= ids
