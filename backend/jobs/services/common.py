"""What the services of every sub-domain share: who asked for an operator action, the audit
log of the actions that write no event, the time of a transition, and the retry back-off.

No data access: plain values and a logger.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from ..conf import app_settings


@dataclass(frozen=True)
class Actor:
    """Who asked for an operator action: kept in its event's ``data.actor``."""

    user: str | None  # the username; None: nobody signed in (the open local demo)
    via: str  # "api" (the dashboard and any client) or "admin"

    def as_data(self) -> dict[str, Any]:
        return {"user": self.user, "via": self.via}


def _with_actor(data: dict[str, Any], actor: Actor | None) -> dict[str, Any]:
    return data if actor is None else {**data, "actor": actor.as_data()}


# Queues and schedules have no event table: their operator actions are told here, with who.
audit = logging.getLogger("jobs.audit")


def _audit(action: str, actor: Actor | None, **fields: Any) -> None:
    if actor is None:
        return
    details = " ".join(f"{key}={value}" for key, value in fields.items())
    audit.info(
        "action=%s %s actor=%s via=%s", action, details, actor.user or "anonymous", actor.via
    )


def backoff_delay_seconds(
    attempt: int, *, base_seconds: int | None = None, max_seconds: int | None = None
) -> int:
    """Delay before retrying after failed attempt number ``attempt`` (1-based).

    ``min(base * 2 ** (attempt - 1), max)``: 5, 10, 20, ... capped at 300 by default.
    """
    base = app_settings.JOB_WORKER_BACKOFF_BASE_SECONDS if base_seconds is None else base_seconds
    cap = app_settings.JOB_WORKER_BACKOFF_MAX_SECONDS if max_seconds is None else max_seconds
    exponent = max(attempt, 1) - 1
    # Compare before multiplying so a large attempt number cannot build a huge integer.
    if exponent >= 64 or base * (2**exponent) >= cap:
        return cap
    delay: int = base * 2**exponent  # int ** int is typed Any: a negative power is a float
    return delay


def jittered_backoff_seconds(attempt: int) -> float:
    """The worker's default delay after failed attempt ``attempt``: full jitter over the
    ladder, ``uniform(0, backoff_delay_seconds(attempt))`` to the millisecond, so a burst
    of failures spreads its retries over the window instead of returning together."""
    return round(random.uniform(0, backoff_delay_seconds(attempt)), 3)


def event_time(value: datetime) -> str:
    """A time as event ``data`` keeps it: in the API's format (``TIME_ZONE``'s offset, ``Z``
    for UTC, as DRF renders the job's own fields), so an event's times read like the job's."""
    text = timezone.localtime(value).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _now(now: datetime | None) -> datetime:
    return timezone.now() if now is None else now
