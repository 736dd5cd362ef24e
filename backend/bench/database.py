"""The benchmark's own PostgreSQL connection, and the database it creates, empties, sizes
and drops.

The benchmark talks to PostgreSQL through its own psycopg connection (``Database``) for
setup, data generation and measurement, and through the project's code (Django, the
worker processes, gunicorn) for what it measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql as pgsql


class Database:
    """A plain psycopg connection (no Django) for setup, data generation and measurement."""

    def __init__(self, conninfo: dict[str, Any]) -> None:
        self.conninfo = conninfo
        # ClientCursor inlines parameters, as Django's cursor does, so EXPLAIN sees the
        # same literals as the services' statements.
        self.conn = psycopg.connect(
            **conninfo, autocommit=True, cursor_factory=psycopg.ClientCursor
        )

    def reconnect(self) -> None:
        """A fresh session; the old backend reports its pending statistics as it exits."""
        self.conn.close()
        self.conn = psycopg.connect(
            **self.conninfo, autocommit=True, cursor_factory=psycopg.ClientCursor
        )

    def execute(self, sql: str, params: Any = None) -> None:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)

    def rows(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def scalar(self, sql: str, params: Any = None) -> Any:
        return self.rows(sql, params)[0][0]

    def explain(self, sql: str, params: Any = None, *, rollback: bool = False) -> list[str]:
        """``EXPLAIN (ANALYZE, BUFFERS)`` lines; data-modifying statements are rolled back."""
        with self.conn.transaction(force_rollback=rollback), self.conn.cursor() as cur:
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            return [row[0] for row in cur.fetchall()]

    def close(self) -> None:
        self.conn.close()


def _drop(conn: psycopg.Connection[Any], name: str) -> None:
    ident = pgsql.Identifier(name)
    conn.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


def recreate_database(conninfo: dict[str, Any], name: str) -> None:
    with psycopg.connect(**{**conninfo, "dbname": "postgres"}, autocommit=True) as conn:
        _drop(conn, name)
        conn.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name)))


def drop_database(conninfo: dict[str, Any], name: str) -> None:
    with psycopg.connect(**{**conninfo, "dbname": "postgres"}, autocommit=True) as conn:
        _drop(conn, name)


def reset_tables(db: Database) -> None:
    db.execute(
        "TRUNCATE jobs_jobevent, jobs_jobdependency, jobs_job, jobs_workflow RESTART IDENTITY"
    )


def server_info(db: Database) -> dict[str, str]:
    names = [
        "server_version",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "autovacuum",
        "max_connections",
        "jit",
    ]
    rows = db.rows("SELECT name, setting, unit FROM pg_settings WHERE name = ANY(%s)", [names])
    return {
        name: f"{int(setting) * 8 // 1024}MB" if unit == "8kB" else setting
        for name, setting, unit in rows
    }


@dataclass(kw_only=True)
class TableSize:
    table: str
    rows: int
    n_live_tup: int
    n_dead_tup: int
    heap_bytes: int
    indexes_bytes: int
    total_bytes: int


@dataclass(kw_only=True)
class IndexSize:
    table: str
    total_bytes: int


def table_sizes(db: Database) -> list[TableSize | IndexSize]:
    """Rows, dead tuples and sizes of both tables, and the size of the claim's index."""
    rows = db.rows(
        """
        SELECT s.relname, s.n_live_tup, s.n_dead_tup, pg_relation_size(s.relid),
               pg_indexes_size(s.relid), pg_total_relation_size(s.relid)
        FROM pg_stat_user_tables AS s
        WHERE s.relname IN ('jobs_job', 'jobs_jobevent') ORDER BY s.relname
        """
    )
    sizes: list[TableSize | IndexSize] = [
        TableSize(
            table=name,
            rows=db.scalar(f"SELECT count(*) FROM {name}"),
            n_live_tup=live,
            n_dead_tup=dead,
            heap_bytes=heap,
            indexes_bytes=indexes,
            total_bytes=total,
        )
        for name, live, dead, heap, indexes, total in rows
    ]
    sizes.append(
        IndexSize(
            table="job_claim_idx", total_bytes=db.scalar("SELECT pg_relation_size('job_claim_idx')")
        )
    )
    return sizes
