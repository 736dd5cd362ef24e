"""PgBouncer (Debian's pgbouncer package: /usr/sbin/pgbouncer)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Literal

from .processes import free_port, wait_until

PGBOUNCER = Path("/usr/sbin/pgbouncer")


def pgbouncer_binary() -> Path | None:
    """Debian's pgbouncer, or one on PATH; ``None`` if it is not installed."""
    if PGBOUNCER.exists():
        return PGBOUNCER
    found = shutil.which("pgbouncer")
    return Path(found) if found else None


class PrivatePgBouncer:
    """A real pgbouncer in front of a PostgreSQL server, on a free port of 127.0.0.1, with
    its configuration, log and pidfile in a temporary directory; a context manager.

    ``pool_size`` caps the server connections per database (``default_pool_size`` and
    ``max_db_connections``): clients beyond it wait for a connection to be released, which
    in ``transaction`` mode happens at every commit. Clients are let in without a password
    (``auth_type = trust``); pgbouncer logs in to PostgreSQL with the password in its
    auth_file, so a server with password authentication works too. pgbouncer refuses to
    run as root: as root it runs as the postgres OS user, like ``PrivatePostgres``.
    """

    def __init__(
        self,
        binary: Path,
        *,
        server_port: int,
        server_host: str = "127.0.0.1",
        user: str = "postgres",
        password: str = "",
        pool_size: int = 4,
        pool_mode: Literal["session", "transaction", "statement"] = "transaction",
    ) -> None:
        self.binary = binary
        self.server_host = server_host
        self.server_port = server_port
        self.user = user
        self.password = password
        self.pool_size = pool_size
        self.pool_mode = pool_mode
        self.root = Path(tempfile.mkdtemp(prefix="jobq-pgbouncer-"))
        self.log_path = self.root / "pgbouncer.log"
        self.pidfile = self.root / "pgbouncer.pid"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def config(self) -> str:
        # Any database name maps to the same name on the server: the test database too.
        return "\n".join(
            [
                "[databases]",
                f"* = host={self.server_host} port={self.server_port}",
                "[pgbouncer]",
                "listen_addr = 127.0.0.1",
                f"listen_port = {self.port}",
                "unix_socket_dir =",  # no socket file to collide with another instance's
                "auth_type = trust",
                f"auth_file = {self.root / 'userlist.txt'}",
                f"admin_users = {self.user}",
                f"pool_mode = {self.pool_mode}",
                f"default_pool_size = {self.pool_size}",
                f"max_db_connections = {self.pool_size}",
                "min_pool_size = 0",
                "reserve_pool_size = 0",
                "max_client_conn = 500",
                "ignore_startup_parameters = extra_float_digits",
                f"logfile = {self.log_path}",
                f"pidfile = {self.pidfile}",
                "",
            ]
        )

    def start(self) -> None:
        (self.root / "pgbouncer.ini").write_text(self.config())
        quoted = self.password.replace('"', '""')
        (self.root / "userlist.txt").write_text(f'"{self.user}" "{quoted}"\n')
        if self.as_user:
            for path in self.root.iterdir():
                shutil.chown(path, "postgres")
        self.proc = subprocess.Popen(
            [*self.as_user, str(self.binary), str(self.root / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # it logs to logfile as well
        )

        def listening() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"pgbouncer exited:\n{self.log()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), 1),
            ):
                return True
            return False

        wait_until(listening, 15, "pgbouncer")

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def env(self) -> dict[str, str]:
        """The settings' environment variables that point Django at this pgbouncer."""
        return {"POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(self.port)}

    def admin(self, command: str) -> list[dict[str, Any]]:
        """A command on pgbouncer's admin console (``SHOW POOLS``, ...), rows as dicts."""
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, dbname="pgbouncer", user=self.user, autocommit=True
        ) as conn:
            cursor = conn.execute(command)
            names = [column.name for column in cursor.description or []]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def server_connections(self, database: str) -> int:
        """Server connections pgbouncer holds to ``database`` now, in any state."""
        states = ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login")
        return sum(
            int(pool[state])
            for pool in self.admin("SHOW POOLS")
            if pool["database"] == database
            for state in states
        )

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError):
            # Signal pgbouncer itself: runuser may not pass SIGTERM on.
            os.kill(int(self.pidfile.read_text().strip()), signal.SIGTERM)  # immediate
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> PrivatePgBouncer:
        try:
            self.start()
        except BaseException:
            self.stop()
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
