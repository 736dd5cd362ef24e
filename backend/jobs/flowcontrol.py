"""Flow control's pure rules (issue 24): schedules and their ticks, per-key concurrency
limits by pattern, and the rate limit's sliding window. No database here: the services
and drivers hand these functions what they read under their locks.

* A schedule is declared in ``JOB_SCHEDULES`` (name -> definition); its ticks are the
  times a cron expression (cronsim, in the schedule's time zone) or a fixed interval
  (multiples of ``interval`` seconds since the Unix epoch) names.
* A ``concurrency_key`` is limited by the first rule that matches it: an exact key, then
  the fnmatch patterns (the longest first), then ``"default"`` if given.
* A rate limit of N per P seconds admits a claim at ``now`` while fewer than N claims
  fall in the closed window ``[now - P, now]``: no window of P seconds ever holds more
  than N claims, without a burst at a window's edge.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

MISSED_POLICIES = ("latest", "skip")
DEFAULT_KEY = "default"


class ScheduleError(ValueError):
    """A schedule definition that cannot be served (its message names the field)."""


@dataclass(frozen=True, slots=True)
class ScheduleSpec:
    """One entry of ``JOB_SCHEDULES``, validated."""

    name: str
    kind: str  # "type": a registered job type; "task": a django.tasks task's path
    target: str
    cron: str | None
    interval_seconds: int | None
    timezone: str
    queue: str
    priority: int
    missed: str
    payload: dict[str, Any] = field(default_factory=dict, hash=False)

    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    def next_tick(self, after: datetime) -> datetime:
        """The first tick strictly after ``after``."""
        if self.interval_seconds is not None:
            step = self.interval_seconds
            seconds = int(after.timestamp() // step + 1) * step
            return datetime.fromtimestamp(seconds, tz=UTC)
        assert self.cron is not None
        return next(iter(CronSim(self.cron, after.astimezone(self.zone())))).astimezone(UTC)

    def ticks(self, after: datetime, until: datetime) -> Iterator[datetime]:
        """Every tick in ``(after, until]``, oldest first."""
        tick = self.next_tick(after)
        while tick <= until:
            yield tick
            tick = self.next_tick(tick)

    def latest_tick(self, at: datetime) -> datetime:
        """The newest tick at or before ``at``."""
        if self.interval_seconds is not None:
            step = self.interval_seconds
            return datetime.fromtimestamp(int(at.timestamp() // step) * step, tz=UTC)
        assert self.cron is not None
        sim = CronSim(self.cron, (at + timedelta(seconds=1)).astimezone(self.zone()), reverse=True)
        return next(iter(sim)).astimezone(UTC)


def tick_key(name: str, tick: datetime) -> str:
    """The permanent idempotency key of a schedule's tick: the database's unique index on
    it is what makes a tick one job however many workers enqueue it."""
    return f"schedule:{name}:{tick.astimezone(UTC).isoformat()}"


def parse_schedule(name: str, raw: Mapping[str, Any], *, default_timezone: str) -> ScheduleSpec:
    """``raw`` (a ``JOB_SCHEDULES`` value) as a ``ScheduleSpec``; ``ScheduleError`` names
    what is wrong."""
    if not isinstance(raw, Mapping):
        raise ScheduleError(f"{name}: a schedule is a dict")
    unknown = set(raw) - {
        "task",
        "type",
        "cron",
        "interval",
        "args",
        "kwargs",
        "payload",
        "queue",
        "priority",
        "timezone",
        "missed",
    }
    if unknown:
        raise ScheduleError(f"{name}: unknown keys {sorted(unknown)}")
    if ("task" in raw) == ("type" in raw):
        raise ScheduleError(f"{name}: give exactly one of 'task' and 'type'")
    if ("cron" in raw) == ("interval" in raw):
        raise ScheduleError(f"{name}: give exactly one of 'cron' and 'interval'")
    timezone = str(raw.get("timezone") or default_timezone)
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(f"{name}: unknown timezone {timezone!r}") from None
    cron = raw.get("cron")
    interval = raw.get("interval")
    if cron is not None:
        try:
            CronSim(str(cron), datetime.now(UTC))
        except CronSimError as exc:
            raise ScheduleError(f"{name}: cron {cron!r}: {exc}") from None
    if interval is not None and (
        not isinstance(interval, int) or isinstance(interval, bool) or interval < 1
    ):
        raise ScheduleError(f"{name}: interval is a whole number of seconds >= 1")
    missed = raw.get("missed", "latest")
    if missed not in MISSED_POLICIES:
        raise ScheduleError(f"{name}: missed is one of {list(MISSED_POLICIES)}")
    priority = raw.get("priority", 50)
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ScheduleError(f"{name}: priority is an integer")
    if "task" in raw:
        if "payload" in raw:
            raise ScheduleError(f"{name}: a task takes 'args' and 'kwargs', not 'payload'")
        payload = {"args": list(raw.get("args", [])), "kwargs": dict(raw.get("kwargs", {}))}
        kind, target = "task", str(raw["task"])
    else:
        if "args" in raw or "kwargs" in raw:
            raise ScheduleError(f"{name}: a job type takes 'payload', not 'args'/'kwargs'")
        payload = dict(raw.get("payload", {}))
        kind, target = "type", str(raw["type"])
    return ScheduleSpec(
        name=name,
        kind=kind,
        target=target,
        cron=None if cron is None else str(cron),
        interval_seconds=interval,
        timezone=timezone,
        queue=str(raw.get("queue", "default")),
        priority=priority,
        missed=str(missed),
        payload=payload,
    )


def parse_schedules(
    raw: Mapping[str, Mapping[str, Any]], *, default_timezone: str
) -> dict[str, ScheduleSpec]:
    """Every schedule of ``JOB_SCHEDULES``, by name, sorted."""
    return {
        name: parse_schedule(name, raw[name], default_timezone=default_timezone)
        for name in sorted(raw)
    }


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What one pass enqueues for a schedule: the ticks, and how far it has looked."""

    ticks: list[datetime]
    seen_until: datetime


def plan_ticks(
    spec: ScheduleSpec, *, last_tick: datetime, now: datetime, grace_seconds: float
) -> TickPlan:
    """The ticks in ``(last_tick, now]`` to enqueue now.

    A tick at most ``grace_seconds`` old is on time and always enqueued. Older ones were
    missed (no worker looked while they were due): ``latest`` enqueues the newest of them
    once, ``skip`` drops them. ``seen_until`` is the newest tick looked at, enqueued or not.
    """
    due = list(spec.ticks(last_tick, now))
    if not due:
        return TickPlan([], last_tick)
    cutoff = now - timedelta(seconds=grace_seconds)
    missed = [tick for tick in due if tick < cutoff]
    on_time = [tick for tick in due if tick >= cutoff]
    ticks = ([missed[-1]] if missed and spec.missed == "latest" else []) + on_time
    return TickPlan(ticks, due[-1])


def key_limit(key: str, limits: Mapping[str, int]) -> int | None:
    """The concurrency limit of ``key``: an exact entry, else the longest matching fnmatch
    pattern, else ``limits["default"]``; ``None``: unlimited."""
    if key in limits and key != DEFAULT_KEY:
        return limits[key]
    patterns = sorted(
        (pattern for pattern in limits if pattern != DEFAULT_KEY and pattern != key),
        key=lambda pattern: (-len(pattern), pattern),
    )
    for pattern in patterns:
        if fnmatch.fnmatchcase(key, pattern):
            return limits[pattern]
    return limits.get(DEFAULT_KEY)


def rate_admits(
    window: list[float], *, limit: int, period_seconds: int, now: float
) -> tuple[bool, list[float]]:
    """Whether a claim at ``now`` (epoch seconds) fits a rate of ``limit`` per
    ``period_seconds``, given the recent claims in ``window``; and the window to store
    (the claims of the last period, ``now`` included when admitted, at most ``limit``)."""
    recent = sorted(t for t in window if t >= now - period_seconds)
    if len(recent) >= limit:
        return False, recent[-limit:]
    return True, [*recent, now][-limit:]
