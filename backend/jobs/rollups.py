"""Per-minute rollups of recent events, computed once per settled minute and cached.

The job types and workers pages aggregate every claim and attempt ending of a window of up
to 24 hours; at a million events an hour, scanning the window on each poll would cost a
second. Events are append-only and stamped with their writer's clock, so a minute is
*settled* once ``SETTLE_SECONDS`` have passed since it ended: nothing more is written into
it (a write is one statement stamped just before it runs). A settled minute's aggregate is
computed once and kept in Django's cache; a poll then reads the cache and aggregates only
the unsettled tail, a minute or so of events, from the database.

Cache entries: one per settled minute of the current hour and one per fully settled hour
(its sixty minutes together), so a 24-hour window is at most about 85 entries per rollup,
well within the default local-memory cache's 300. A cache shared by the API processes
(Redis, Memcached) computes each minute once for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.core.cache import cache

# Long enough for a write stamped with its writer's clock to commit (one statement; a bulk
# action over a huge selection or a clock lagging more than this could miss its minute),
# short enough that a poll aggregates little more than the current minute: about 60 s of
# events on average (the current minute, and the previous one for its first 30 s).
SETTLE_SECONDS = 30
# Long enough for a minute to serve the largest window (24 hours) it can fall into.
CACHE_SECONDS = 25 * 3600

MinuteRows = dict[int, list[Any]]
"""Epoch minute -> that minute's aggregate rows (empty list: nothing happened)."""


def minute_start(minute: int) -> datetime:
    return datetime.fromtimestamp(minute * 60, tz=UTC)


def per_minute(
    name: str,
    *,
    first: int,
    now: datetime,
    compute: Callable[[datetime, datetime], MinuteRows],
) -> MinuteRows:
    """Rows of every minute from epoch minute ``first`` to the one holding ``now``.

    ``compute(start, end)`` aggregates the events in ``[start, end]`` by minute. It is
    called at most once: from the earliest minute not found in the cache (rounded down to
    its hour when that hour is settled, so the hour can be stored whole) up to ``now``.
    Settled minutes it computed are stored; unsettled ones are computed on every call.
    """
    now_ts = int(now.timestamp())
    last = now_ts // 60
    settled = (now_ts - SETTLE_SECONDS) // 60  # minutes before this one are settled
    hours = range(first // 60, last // 60 + 1)
    hour_keys = {hour: f"jobs:{name}:h:{hour}" for hour in hours if (hour + 1) * 60 <= settled}
    minute_keys = {
        minute: f"jobs:{name}:m:{minute}"
        for minute in range(first, min(last + 1, settled))
        if minute // 60 not in hour_keys
    }
    found = cache.get_many([*hour_keys.values(), *minute_keys.values()])
    rows: MinuteRows = {}
    for hour, key in hour_keys.items():
        if key in found:  # an hour entry keeps only its minutes that had rows
            rows.update({m: found[key].get(m, []) for m in range(hour * 60, hour * 60 + 60)})
    for minute, key in minute_keys.items():
        if key in found:
            rows[minute] = found[key]
    missing = [minute for minute in range(first, last + 1) if minute not in rows]
    if not missing:
        return {minute: rows[minute] for minute in range(first, last + 1)}
    start = missing[0]
    if start // 60 in hour_keys:
        start = start // 60 * 60  # the whole hour, so its entry can be stored complete
    computed = compute(minute_start(start), now)
    for minute in range(start, last + 1):
        rows[minute] = computed.get(minute, [])
    to_store: dict[str, Any] = {}
    for hour, key in hour_keys.items():
        if key not in found and hour * 60 >= start:
            to_store[key] = {m: rows[m] for m in range(hour * 60, hour * 60 + 60) if rows[m]}
    for minute, key in minute_keys.items():
        if key not in found and minute >= start:
            to_store[key] = rows[minute]
    if to_store:
        cache.set_many(to_store, CACHE_SECONDS)
    return {minute: rows[minute] for minute in range(first, last + 1)}
