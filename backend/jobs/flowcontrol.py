"""Flow control's rules: schedules, their validation and their ticks, per-key concurrency
limits by pattern, and the rate limit's window. No database here: the services and
drivers hand these functions what they read under their locks.

* A schedule is declared in ``JOB_SCHEDULES`` (name -> definition); its ticks are the
  times a cron expression (cronsim, in the schedule's time zone) or a fixed interval
  (multiples of ``interval`` seconds since the Unix epoch) names.
* A ``concurrency_key`` is limited by the first rule that matches it: an exact key, then
  the fnmatch patterns (the longest first), then ``"default"`` if given.
* A rate limit of N per P seconds admits a claim at ``now`` only while fewer than N
  claims fall in a window covering ``[now - P, now]``: no window of P seconds ever holds
  more than N claims, without a burst at a window's edge. The window is counts per
  twentieth of a period (``rate_room``): its size and cost stay the same whatever N.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings

from . import registry
from .conf import app_settings
from .errors import ScheduleInvalid, ScheduleNotFound
from .limits import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_MAX_LENGTH,
    QUEUE_NAME_PATTERN,
    TYPE_MAX_LENGTH,
)
from .storable import json_problem

MISSED_POLICIES = ("latest", "skip")
DEFAULT_KEY = "default"
SCHEDULE_KEYS = frozenset(
    {
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
)
# A schedule's name is the primary key of its state row.
SCHEDULE_NAME_MAX_LENGTH = 255
# The longest interval: a year (a longer one is a mistake, and its ticks' arithmetic
# would leave what datetimes hold).
INTERVAL_MAX_SECONDS = 366 * 24 * 3600
# On-time ticks one pass enqueues for a schedule at most; the rest wait for the next pass
# (a schedule rarely has more than one: this bounds the cost of a long grace).
MAX_TICKS_PER_PASS = 100


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

    def previous_tick(self, before: datetime) -> datetime:
        """The newest tick strictly before ``before``."""
        if self.interval_seconds is not None:
            return self.latest_tick(before - timedelta(microseconds=1))
        assert self.cron is not None
        sim = CronSim(self.cron, before.astimezone(self.zone()), reverse=True)
        return next(iter(sim)).astimezone(UTC)

    def latest_tick(self, at: datetime) -> datetime:
        """The newest tick at or before ``at``."""
        if self.interval_seconds is not None:
            step = self.interval_seconds
            return datetime.fromtimestamp(int(at.timestamp() // step) * step, tz=UTC)
        return self.previous_tick(at + timedelta(microseconds=1))


def tick_key(name: str, tick: datetime) -> str:
    """The permanent idempotency key of a schedule's tick: the database's unique index on
    it is what makes a tick one job however many workers enqueue it."""
    return f"schedule:{name}:{tick.astimezone(UTC).isoformat()}"


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _target_problem(kind: str, target: object) -> str | None:
    if not isinstance(target, str) or not target:
        return f"{kind}: a non-empty string"
    if len(target) > TYPE_MAX_LENGTH:
        return f"{kind}: at most {TYPE_MAX_LENGTH} characters"
    if registry.get_handler(target) is None:
        what = "job type" if kind == "type" else "django.tasks task"
        return f"{kind}: {target!r} is not a registered {what} in this process"
    return None


def _timing_problems(raw: Mapping[str, Any], timezone: object) -> list[str]:
    problems = []
    if ("cron" in raw) == ("interval" in raw):
        problems.append("cron/interval: give exactly one of 'cron' and 'interval'")
    if not isinstance(timezone, str) or not timezone:
        problems.append("timezone: a time zone name such as 'Europe/Paris'")
    else:
        try:
            ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            problems.append(f"timezone: unknown time zone {timezone!r}")
    if "cron" in raw:
        cron = raw["cron"]
        if not isinstance(cron, str):
            problems.append("cron: a cron expression string, such as '0 3 * * *'")
        else:
            try:
                CronSim(cron, datetime.now(UTC))
            except CronSimError as exc:
                problems.append(f"cron: {cron!r}: {exc}")
    if "interval" in raw:
        interval = raw["interval"]
        if not _integer(interval) or not 1 <= interval <= INTERVAL_MAX_SECONDS:
            problems.append(
                f"interval: a whole number of seconds from 1 to {INTERVAL_MAX_SECONDS} "
                f"(a year), got {interval!r}"
            )
    missed = raw.get("missed", "latest")
    if missed not in MISSED_POLICIES:
        problems.append(f"missed: one of {list(MISSED_POLICIES)}, got {missed!r}")
    return problems


def _job_problems(raw: Mapping[str, Any]) -> list[str]:
    problems = []
    queue = raw.get("queue", "default")
    if (
        not isinstance(queue, str)
        or len(queue) > QUEUE_NAME_MAX_LENGTH
        or not re.fullmatch(QUEUE_NAME_PATTERN, queue)
    ):
        problems.append(
            f"queue: letters, digits and . _ : - (starting with a letter or digit), at most "
            f"{QUEUE_NAME_MAX_LENGTH} characters, got {queue!r}"
        )
    priority = raw.get("priority", 50)
    if not _integer(priority) or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        problems.append(
            f"priority: an integer from {PRIORITY_MIN} to {PRIORITY_MAX}, got {priority!r}"
        )
    if "task" in raw:
        if "payload" in raw:
            problems.append("payload: a task takes 'args' and 'kwargs', not 'payload'")
        args, kwargs = raw.get("args", []), raw.get("kwargs", {})
        if not isinstance(args, list | tuple):
            problems.append(f"args: a list of arguments, got {_kind(args)}")
        if not isinstance(kwargs, Mapping) or not all(isinstance(key, str) for key in kwargs):
            problems.append(f"kwargs: a dict of keyword arguments, got {_kind(kwargs)}")
        elif isinstance(args, list | tuple):
            problem = json_problem({"args": list(args), "kwargs": dict(kwargs)})
            if problem is not None:
                problems.append(f"args/kwargs: {problem}")
    else:
        if "args" in raw or "kwargs" in raw:
            problems.append("args/kwargs: a job type takes 'payload', not 'args'/'kwargs'")
        payload = raw.get("payload", {})
        if not isinstance(payload, Mapping):
            problems.append(f"payload: a JSON object (a dict), got {_kind(payload)}")
        else:
            problem = json_problem(dict(payload))
            if problem is not None:
                problems.append(f"payload: {problem}")
    return problems


def _kind(value: object) -> str:
    return "a string" if isinstance(value, str) else f"a {type(value).__name__}"


def schedule_problems(name: object, raw: object, *, default_timezone: str) -> list[str]:
    """Every reason the ``JOB_SCHEDULES`` entry ``raw`` named ``name`` cannot be served, each
    starting with the field it is about; none for a schedule that can. The rules are those
    the API applies to a job (registered type, queue name, priority range, storable
    payload), plus the schedule's own (one timing, a bounded interval, a known time zone)."""
    if not isinstance(name, str) or not 1 <= len(name) <= SCHEDULE_NAME_MAX_LENGTH:
        return [f"name: a string of 1 to {SCHEDULE_NAME_MAX_LENGTH} characters"]
    if not isinstance(raw, Mapping):
        return [f"definition: a dict of the schedule's fields, got {_kind(raw)}"]
    unknown = set(raw) - SCHEDULE_KEYS
    if unknown:
        return [f"{sorted(unknown)[0]}: unknown field (known: {sorted(SCHEDULE_KEYS)})"]
    problems = []
    if ("task" in raw) == ("type" in raw):
        problems.append("task/type: give exactly one of 'task' and 'type'")
    else:
        kind = "task" if "task" in raw else "type"
        problem = _target_problem(kind, raw[kind])
        if problem is not None:
            problems.append(problem)
    problems += _timing_problems(raw, raw.get("timezone") or default_timezone)
    return problems + _job_problems(raw)


def parse_schedule(name: str, raw: Mapping[str, Any], *, default_timezone: str) -> ScheduleSpec:
    """``raw`` (a ``JOB_SCHEDULES`` value) as a ``ScheduleSpec``; ``ScheduleError`` names
    what is wrong (``schedule_problems``)."""
    problems = schedule_problems(name, raw, default_timezone=default_timezone)
    if problems:
        raise ScheduleError("; ".join(problems))
    if "task" in raw:
        payload = {"args": list(raw.get("args", [])), "kwargs": dict(raw.get("kwargs", {}))}
        kind, target = "task", str(raw["task"])
    else:
        payload = dict(raw.get("payload", {}))
        kind, target = "type", str(raw["type"])
    cron, interval = raw.get("cron"), raw.get("interval")
    return ScheduleSpec(
        name=name,
        kind=kind,
        target=target,
        cron=None if cron is None else str(cron),
        interval_seconds=interval,
        timezone=str(raw.get("timezone") or default_timezone),
        queue=str(raw.get("queue", "default")),
        priority=int(raw.get("priority", 50)),
        missed=str(raw.get("missed", "latest")),
        payload=payload,
    )


@dataclass(frozen=True, slots=True)
class Schedules:
    """``JOB_SCHEDULES`` read: the schedules that can be served, and why each of the others
    cannot (by name, sorted)."""

    valid: dict[str, ScheduleSpec]
    invalid: dict[str, str]

    def names(self) -> list[str]:
        return sorted({*self.valid, *self.invalid})

    def declares(self, name: str) -> bool:
        """Whether ``name`` is declared, runnable or not."""
        return name in self.valid or name in self.invalid

    def runnable(self, name: str) -> ScheduleSpec:
        """The declared schedule ``name``: ``ScheduleNotFound`` when none is,
        ``ScheduleInvalid`` when it cannot run as declared."""
        if name in self.invalid:
            raise ScheduleInvalid(name, self.invalid[name])
        spec = self.valid.get(name)
        if spec is None:
            raise ScheduleNotFound(name)
        return spec


def parse_schedules(raw: object, *, default_timezone: str) -> Schedules:
    """Every schedule of ``JOB_SCHEDULES``, each on its own: a broken one is set aside with
    its reasons, never in the way of the others."""
    if not isinstance(raw, Mapping):
        return Schedules({}, {})
    valid: dict[str, ScheduleSpec] = {}
    invalid: dict[str, str] = {}
    for name in sorted(raw, key=str):
        try:
            valid[name] = parse_schedule(name, raw[name], default_timezone=default_timezone)
        except ScheduleError as exc:
            invalid[str(name)] = str(exc)
    return Schedules(valid, invalid)


def configured_schedules() -> Schedules:
    """``JOB_SCHEDULES`` as this process reads it (``jobs.checks`` refuses a bad one at
    start-up; a process that runs no checks sets it aside)."""
    return parse_schedules(
        app_settings.JOB_SCHEDULES, default_timezone=str(settings.TIME_ZONE or "UTC")
    )


@dataclass(frozen=True, slots=True)
class TickPlan:
    """What one pass enqueues for a schedule: the ticks, and how far it has looked."""

    ticks: list[datetime]
    seen_until: datetime


def plan_ticks(
    spec: ScheduleSpec,
    *,
    last_tick: datetime,
    now: datetime,
    grace_seconds: float,
    max_ticks: int = MAX_TICKS_PER_PASS,
) -> TickPlan:
    """The ticks in ``(last_tick, now]`` to enqueue now.

    A tick at most ``grace_seconds`` old is on time and enqueued. Older ones were missed
    (no worker looked while they were due): ``latest`` enqueues the newest of them once,
    ``skip`` drops them. ``seen_until`` is the newest tick looked at, enqueued or not. The
    missed ticks are not enumerated: the newest of them is computed, so a schedule whose
    last tick is a year old costs what one a minute old does. At most ``max_ticks`` on-time
    ticks are planned; ``seen_until`` then stops at the last of them.
    """
    tick = spec.next_tick(last_tick)
    if tick > now:
        return TickPlan([], last_tick)
    ticks: list[datetime] = []
    seen_until = last_tick
    cutoff = now - timedelta(seconds=grace_seconds)
    if tick < cutoff:
        seen_until = spec.previous_tick(cutoff)
        if spec.missed == "latest":
            ticks.append(seen_until)
        tick = spec.next_tick(seen_until)
    on_time = 0
    while tick <= now and on_time < max_ticks:
        ticks.append(tick)
        seen_until = tick
        on_time += 1
        tick = spec.next_tick(tick)
    return TickPlan(ticks, seen_until)


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


# A rate window is kept as this many counts of claims per 1/RATE_BUCKETS of the period,
# plus the oldest, partly past one: a constant size and cost per claim whatever the limit.
RATE_BUCKETS = 20


@dataclass(frozen=True, slots=True)
class RateRoom:
    """What a rate-limited queue admits at one moment: ``room`` more claims, and the
    window's counts aligned to that moment's bucket (``counts[0]`` is ``bucket``'s,
    ``counts[i]`` the one ``i`` buckets older)."""

    room: int
    bucket: int
    counts: tuple[int, ...]

    def stored(self, claimed: int) -> dict[str, Any]:
        """The window to store once ``claimed`` claims were made at this moment."""
        counts = [self.counts[0] + claimed, *self.counts[1:]]
        while counts and counts[-1] == 0:
            counts.pop()
        return {"bucket": self.bucket, "counts": counts}


def rate_room(stored: object, *, limit: int, period_seconds: int, now: float) -> RateRoom:
    """How many claims a rate of ``limit`` per ``period_seconds`` admits at ``now`` (epoch
    seconds, the database's clock), given the window ``stored`` (what ``RateRoom.stored``
    returned last; anything else counts as empty).

    Every claim of the last period lies in the newest ``RATE_BUCKETS + 1`` buckets, so
    admitting only while their total is below ``limit`` keeps the promise exactly: no
    closed window of ``period_seconds`` ever holds more than ``limit`` claims. The oldest
    bucket may hold claims just older than the period, counted whole: a queue claimed from
    without pause reaches ``RATE_BUCKETS / (RATE_BUCKETS + 1)`` (over 95 %) of its rate.
    """
    bucket = math.floor(now * RATE_BUCKETS / period_seconds)
    counts = [0] * (RATE_BUCKETS + 1)
    if isinstance(stored, Mapping) and _integer(stored.get("bucket")):
        raw = stored.get("counts")
        kept = [n if _integer(n) and n > 0 else 0 for n in raw] if isinstance(raw, list) else []
        # A clock that stepped back (another server after a failover) keeps the newest
        # bucket where it was rather than forgetting its claims.
        shift = max(bucket - stored["bucket"], 0)
        for age, count in enumerate(kept[: RATE_BUCKETS + 1]):
            if age + shift <= RATE_BUCKETS:
                counts[age + shift] = count
    return RateRoom(max(limit - sum(counts), 0), bucket, tuple(counts))
