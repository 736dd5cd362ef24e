"""The retry policy, applied: what a failed attempt's exception makes of the job's next
attempt (``jobs.registry.RetryPolicy`` says what each type asked for).

Precedence: ``give_up_on`` (fail now), then ``retry_on`` (when given, anything else fails
now), then ``backoff`` (its seconds, or ``None``: fail now), else the default exponential
backoff with full jitter. Whether attempts remain is still the database's to say: a retry
asked for past ``max_attempts`` ends the job ``failed``.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from .. import services
from ..limits import RETRY_DELAY_MAX_SECONDS
from ..registry import RetryPolicy

logger = logging.getLogger("jobs.worker")


@dataclass(frozen=True)
class RetryDecision:
    """Seconds before the next attempt, or ``give_up``: the job fails now."""

    delay_seconds: float | None = None
    give_up: bool = False


GIVE_UP = RetryDecision(give_up=True)


def decide(policy: RetryPolicy, exc: BaseException, attempt: int) -> RetryDecision:
    """The next attempt after ``exc`` ended attempt number ``attempt`` (1-based)."""
    if isinstance(exc, policy.give_up_on):
        return GIVE_UP
    if policy.retry_on and not isinstance(exc, policy.retry_on):
        return GIVE_UP
    if policy.backoff is None:
        return RetryDecision(services.jittered_backoff_seconds(attempt))
    try:
        answer = policy.backoff(exc, attempt)
    except Exception as error:
        # A broken policy must not lose the failure: the default backoff applies.
        logger.warning("action=backoff_failed attempt=%d error=%r", attempt, error)
        return RetryDecision(services.jittered_backoff_seconds(attempt))
    if answer is None:
        return GIVE_UP
    return RetryDecision(_bounded(answer, attempt))


def _bounded(answer: object, attempt: int) -> float:
    """A backoff's answer as a wait: negative is clamped to 0, above
    ``RETRY_DELAY_MAX_SECONDS`` (infinity included) to that cap; not a number, or NaN, is
    refused (logged) and the default backoff applies."""
    if isinstance(answer, bool) or not isinstance(answer, int | float) or math.isnan(answer):
        logger.warning("action=backoff_refused attempt=%d answer=%r", attempt, answer)
        return services.jittered_backoff_seconds(attempt)
    return float(min(max(answer, 0), RETRY_DELAY_MAX_SECONDS))
