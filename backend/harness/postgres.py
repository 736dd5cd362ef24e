"""A private PostgreSQL server, for tests that stop, restart or reconfigure one."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .processes import BACKEND_DIR, free_port


def postgres_bin_dir() -> Path | None:
    """The newest installed PostgreSQL's server binaries (initdb, pg_ctl), if any."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class PrivatePostgres:
    """A throwaway PostgreSQL server: its own data directory, port and socket directory.

    Tests stop, restart or reconfigure this server, never the shared one on
    127.0.0.1:5432 that other test runs use at the same time. It is the same server binary,
    started and stopped with ``pg_ctl``, so a restart is real: every backend is terminated
    and the port closes.
    """

    def __init__(self, bin_dir: Path, database: str = "private") -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="jobq-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.database = database
        # initdb refuses to run as root: run the server as the postgres OS user then.
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        subprocess.run([*self.as_user, *args], check=True, capture_output=True, timeout=60)

    def pg_ctl(self, *args: str) -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), *args)

    def init_and_start(self) -> None:
        self._run(
            str(self.bin_dir / "initdb"),
            *("-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"),
        )
        self.start()
        subprocess.run(
            [
                str(self.bin_dir / "psql"),
                *self.dsn_args("postgres"),
                "-c",
                f"CREATE DATABASE {self.database}",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self.pg_ctl("-o", options, "-w", "start")

    def dsn_args(self, database: str) -> list[str]:
        return ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database]

    def env(self) -> dict[str, str]:
        """The settings' environment variables that point Django at this server."""
        return {
            "DATABASE_ENGINE": "postgres",
            "POSTGRES_HOST": "127.0.0.1",
            "POSTGRES_PORT": str(self.port),
            "POSTGRES_DB": self.database,
            "POSTGRES_USER": "postgres",
            "POSTGRES_PASSWORD": "postgres",
        }

    def migrate(self, env: dict[str, str]) -> None:
        """Create the project's tables with ``manage.py migrate``, as a deployment does;
        ``env`` is the child's environment, pointed at this server here."""
        result = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=BACKEND_DIR,
            env={**env, **self.env()},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, dbname=self.database, user="postgres"
        ) as conn:
            return conn.execute(sql).fetchall()

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.pg_ctl("-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
