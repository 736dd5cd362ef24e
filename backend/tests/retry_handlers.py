"""Handlers and ``django.tasks`` tasks with retry policies, for the retry tests: imported
by the in-process tests, loaded by worker processes with
``JOB_HANDLER_MODULES=tests.retry_handlers``.

Each raises what its payload names, so one type covers every answer of its policy.
"""

from __future__ import annotations

from typing import Any

from django.tasks import task

from jobs.handlers import JobContext, register
from jobs.models import JobEvent


class RetryIn(Exception):
    """Carries the answer ``backoff_from_exception`` gives: ``args[0]``."""


class Transient(Exception):
    """Retried by the per-exception types."""


class Permanent(Exception):
    """Given up on by the per-exception types."""


def backoff_from_exception(exc: BaseException, attempt: int) -> Any:
    return exc.args[0] if isinstance(exc, RetryIn) else None


def _answer(text: Any) -> Any:
    """A payload's answer: JSON has no NaN or infinity, so they come as text."""
    return float(text) if text in ("nan", "inf", "-inf") else text


EXCEPTIONS: dict[str, type[Exception]] = {
    "transient": Transient,
    "permanent": Permanent,
    "other": ValueError,
}


@register(
    "retry.backoff",
    description="Raises RetryIn(payload.answer); its backoff answers that.",
    backoff=backoff_from_exception,
)
def backoff_handler(context: JobContext) -> None:
    raise RetryIn(_answer(context.payload["answer"]))


@register(
    "retry.only_transient",
    description="Raises the exception payload.raise names; only Transient is retried.",
    retry_on=(Transient,),
)
def only_transient(context: JobContext) -> None:
    raise EXCEPTIONS[context.payload["raise"]]("raised")


@register(
    "retry.not_permanent",
    description="Raises the exception payload.raise names; Permanent is given up on.",
    give_up_on=(Permanent,),
)
def not_permanent(context: JobContext) -> None:
    raise EXCEPTIONS[context.payload["raise"]]("raised")


@register(
    "retry.snooze",
    description="Snoozes payload.seconds until it has snoozed payload.times (1) times, "
    "then returns its attempt number.",
)
def snooze_handler(context: JobContext) -> dict[str, int]:
    snoozed = JobEvent.objects.filter(job_id=context.job_id, type=JobEvent.Type.SNOOZED)
    if snoozed.count() < context.payload.get("times", 1):
        context.snooze(context.payload["seconds"])
    return {"attempt": context.attempt}


@task(max_attempts=3, backoff=backoff_from_exception)
def backoff_task(answer: Any) -> None:
    raise RetryIn(_answer(answer))


@task(max_attempts=3, retry_on=(Transient, Permanent), give_up_on=(Permanent,))
def per_exception_task(kind: str) -> None:
    """Both lists name Permanent: give_up_on wins."""
    raise EXCEPTIONS[kind]("raised")


@task(takes_context=True, max_attempts=1)
def snoozing_task(context: Any, seconds: float) -> None:
    context.snooze(seconds)
