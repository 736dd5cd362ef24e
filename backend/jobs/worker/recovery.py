"""What the worker does with a failure it survives: the text and details it records for
an exception, and, for a database error, the announcement, the dropped connection and the
retry with capped backoff."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable

from django.db import DatabaseError, InterfaceError, connection

from .. import services
from ..signals import database_error

logger = logging.getLogger("jobs.worker")

DB_RETRY_MAX_SECONDS = 10.0
# The sender of the worker's database_error signals.
SENDER = "jobs.worker"


def error_message(exc: BaseException) -> str:
    """The exception's text, or its class name; an exception whose ``str()`` raises is
    described by its class rather than lost."""
    try:
        text = str(exc).strip()
    except BaseException as failure:
        return f"{type(exc).__name__} (its message could not be read: {type(failure).__name__})"
    return text or type(exc).__name__


def error_details(exc: BaseException, *, reason: str = "") -> services.ErrorDetails:
    kind = type(exc)
    try:
        trace = "".join(traceback.format_exception(exc))
    except BaseException:
        trace = ""
    return services.ErrorDetails(
        exception_class=f"{kind.__module__}.{kind.__qualname__}", traceback=trace, reason=reason
    )


def announce_database_error(component: str, exc: BaseException) -> None:
    """Announce a database error the worker recovers from (the metrics count them)."""
    database_error.send_robust(SENDER, component=component, error=exc)


def drop_connection() -> None:
    """Forget this thread's connection so the next query reconnects."""
    try:
        connection.close()
    except Exception:  # a broken connection may fail to close; it is discarded either way
        logger.debug("action=connection_close_failed", exc_info=True)


def retry_database[T](write: Callable[[], T], *, within: float, what: str) -> T:
    """Run ``write``, retrying through a lost connection for up to ``within`` seconds.

    Past that the error propagates: the lease is then about to expire and cleanup will
    retry the job.
    """
    deadline = time.monotonic() + within
    delay = 0.2
    while True:
        try:
            return write()
        except (DatabaseError, InterfaceError) as exc:
            announce_database_error("write", exc)
            drop_connection()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            delay = min(delay, remaining)
            logger.warning(
                "action=write_retry what=%s retry_in=%.1fs error=%s",
                what,
                delay,
                error_message(exc),
            )
            time.sleep(delay)
            delay = min(delay * 2, DB_RETRY_MAX_SECONDS)
