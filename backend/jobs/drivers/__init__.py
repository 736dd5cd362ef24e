"""Database drivers: the statements behind each transition, one implementation per database.

``get_driver()`` picks the implementation once, from the default connection's vendor:
PostgreSQL gets ``PostgresDriver`` (named statements in ``queries.sql``), everything else
``OrmDriver``. ``use_driver()`` pins one explicitly (the driver suite runs both on
PostgreSQL; the benchmark measures the ORM path with it).

Every statement the app runs is here, the worker's LISTEN included. psycopg is imported
with ``drivers.postgres``, and that only when the database is PostgreSQL: on SQLite the
app runs with Django alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connections
from django.db.utils import DEFAULT_DB_ALIAS

from .base import Completion, Driver, JobRow, ListenerUnusable, Listening, Owner
from .orm import OrmDriver

__all__ = [
    "Completion",
    "Driver",
    "JobRow",
    "ListenerUnusable",
    "Listening",
    "OrmDriver",
    "Owner",
    "available_drivers",
    "get_driver",
    "set_driver",
    "use_driver",
]

_active: Driver | None = None


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
