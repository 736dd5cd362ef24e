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
from ..drivers import is_read_only
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


class Incident:
    """A run of database errors in one loop, told in the log as one incident.

    The first error is logged at WARNING as ``action=<action>``, with ``read_only=true``
    when the server refused because it is a standby or still in recovery (``is_read_only``:
    the connection is dropped and made again like a lost one, and the read-write server is
    found then); the retries after it at DEBUG; the first success after them at INFO as
    ``action=database_recovered`` with the failures and the seconds it lasted. A failover
    is then two lines per thread, not one per retry. The back-off doubles from
    ``first_delay`` up to ``DB_RETRY_MAX_SECONDS``.
    """

    def __init__(self, action: str, *, first_delay: float = 0.5, **fields: str) -> None:
        self.action = action
        # Who met it (worker_id=..., what=...), as the log line's first fields.
        self.fields = " ".join(f"{name}={value}" for name, value in fields.items())
        self.first_delay = first_delay
        self.failures = 0
        self.began = 0.0

    def failed(self, exc: BaseException, *, limit: float = DB_RETRY_MAX_SECONDS) -> float:
        """Count ``exc``, log it if it opens the incident; returns the back-off."""
        # The exponent stops growing long before the float would overflow (after ~1,000
        # failures: an outage of hours).
        backoff = self.first_delay * 2.0 ** min(self.failures, 16)
        delay = min(backoff, DB_RETRY_MAX_SECONDS, limit)
        self.record(exc, retry_in=delay)
        return delay

    def record(self, exc: BaseException, *, retry_in: float) -> None:
        """Count ``exc`` and log it if it opens the incident, for a caller that keeps its
        own back-off (``retry_in``: when it tries again)."""
        self.failures += 1
        if self.failures == 1:
            self.began = time.monotonic()
        logger.log(
            logging.WARNING if self.failures == 1 else logging.DEBUG,
            "action=%s %s read_only=%s retry_in=%.1fs error=%s",
            self.action,
            self.fields,
            str(is_read_only(exc)).lower(),
            retry_in,
            error_message(exc),
        )

    def ended(self) -> None:
        """The database answered: close the incident, if one was open."""
        if self.failures:
            logger.info(
                "action=database_recovered %s failures=%d after_s=%.1f",
                self.fields,
                self.failures,
                time.monotonic() - self.began,
            )
            self.failures = 0


def retry_database[T](write: Callable[[], T], *, within: float, what: str) -> T:
    """Run ``write``, retrying through a lost connection (or a read-only server) for up to
    ``within`` seconds.

    Past that the error propagates: the lease is then about to expire and cleanup will
    retry the job.
    """
    deadline = time.monotonic() + within
    incident = Incident("write_retry", first_delay=0.2, what=what)
    while True:
        try:
            result = write()
        except (DatabaseError, InterfaceError) as exc:
            announce_database_error("write", exc)
            drop_connection()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise
            time.sleep(incident.failed(exc, limit=remaining))
            continue
        incident.ended()
        return result
