"""Database drivers: the statements behind each transition, one implementation per database.

``get_driver()`` picks the implementation once, from the default connection's vendor:
PostgreSQL gets ``PostgresDriver`` (named statements in ``queries.sql``), everything else
``OrmDriver``. ``use_driver()`` pins one explicitly (the driver suite runs both on
PostgreSQL; the benchmark measures the ORM path with it).

Every SQL statement the app writes is here: the transitions' (``queries.sql`` and the
ORM driver's equivalents), the worker's LISTEN, and the health probe and a request's
authentication and permission check (``portable``, the same on both drivers). The
services and selectors come in through this package: ``get_driver()`` and the values the
contract trades are re-exported below. psycopg is imported with ``drivers.postgres``, and
that only when the database is PostgreSQL: on SQLite the app runs with Django alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections
from django.db.utils import DEFAULT_DB_ALIAS

from .base import (
    Analyzed,
    CancelOutcome,
    ClaimCutShort,
    Completion,
    Driver,
    Event,
    Failure,
    Heartbeat,
    JobRow,
    ListenerUnusable,
    Listening,
    NewJob,
    Owner,
    Release,
    RetryOutcome,
    Selection,
    ServerInRecovery,
    Vacuumed,
    unclaimed,
)
from .orm import OrmDriver
from .portable import TokenUser, WaitingJob

__all__ = [
    "Analyzed",
    "CancelOutcome",
    "ClaimCutShort",
    "Completion",
    "Driver",
    "Event",
    "Failure",
    "Heartbeat",
    "JobRow",
    "ListenerUnusable",
    "Listening",
    "NewJob",
    "OrmDriver",
    "Owner",
    "Release",
    "RetryOutcome",
    "Selection",
    "ServerInRecovery",
    "TokenUser",
    "Vacuumed",
    "WaitingJob",
    "available_drivers",
    "get_driver",
    "is_read_only",
    "set_driver",
    "unclaimed",
    "use_driver",
]

_active: Driver | None = None

# SQLSTATE read_only_sql_transaction: a write (or LISTEN) sent to a hot standby or to a
# server still in recovery.
READ_ONLY_SQLSTATE = "25006"


def is_read_only(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps: Django wraps the driver's errors) says the server
    refused because it is read-only, a standby or a server still in recovery. Such a server
    is as good as lost to the queue: the connection is dropped and made again, and libpq's
    ``target_session_attrs=read-write`` then finds the server that accepts writes."""
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "sqlstate", None) == READ_ONLY_SQLSTATE:
            return True
        seen = seen.__cause__
    return False


def _for_vendor(vendor: str) -> Driver:
    if vendor == "postgresql":
        from .postgres import PostgresDriver  # imports psycopg

        return PostgresDriver()
    return OrmDriver()


def get_driver() -> Driver:
    """The process's driver, chosen on first use from the database vendor."""
    global _active
    if _active is None:
        _active = _for_vendor(connections[DEFAULT_DB_ALIAS].vendor)
    return _active


def available_drivers() -> list[Driver]:
    """Every driver that can run on the configured database (the driver suite's matrix)."""
    vendor = connections[DEFAULT_DB_ALIAS].vendor
    return [_for_vendor(vendor), OrmDriver()] if vendor == "postgresql" else [OrmDriver()]


def set_driver(driver: Driver | None) -> Driver | None:
    """Pin the process's driver (``None``: choose by vendor again); returns the previous one."""
    global _active
    previous, _active = _active, driver
    return previous


@contextmanager
def use_driver(driver: Driver) -> Iterator[Driver]:
    """Run the services on ``driver`` inside the block (every thread of this process)."""
    previous = set_driver(driver)
    try:
        yield driver
    finally:
        set_driver(previous)
