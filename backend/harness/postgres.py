"""A private PostgreSQL server, for tests that stop, restart or reconfigure one, and a
streaming standby of it for the ones that fail it over."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .processes import BACKEND_DIR, free_port, wait_until


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

    def __init__(self, bin_dir: Path, database: str = "private", *, name: str = "pg") -> None:
        self.bin_dir = bin_dir
        self.name = name
        self.root = Path(tempfile.mkdtemp(prefix=f"jobq-{name}-"))
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

    # Replication and failover ---------------------------------------------------------------

    def standby(self, name: str = "standby") -> PrivatePostgres:
        """A streaming standby of this server, started: ``pg_basebackup -R`` (the backup
        writes ``primary_conninfo`` and ``standby.signal``) into a data directory of its
        own, on a port of its own. Its ``application_name`` is ``name``."""
        standby = PrivatePostgres(self.bin_dir, self.database, name=name)
        standby._run(
            str(self.bin_dir / "pg_basebackup"),
            *("-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"),
            *("-D", str(standby.data), "-R", "-X", "stream", "-c", "fast", "--no-sync"),
            "-d",
            f"application_name={name}",
        )
        standby.start()
        return standby

    def set_synchronous_standbys(self, names: str) -> None:
        """``synchronous_standby_names`` (``''``: asynchronous), reloaded; with a name, a
        commit returns once that standby has flushed it (``synchronous_commit=on``)."""
        self.query(f"ALTER SYSTEM SET synchronous_standby_names = '{names}'", autocommit=True)
        self.query("SELECT pg_reload_conf()", autocommit=True)

    def wait_for_standby(self, name: str, *, state: str, timeout: float = 30) -> None:
        """Until ``pg_stat_replication`` shows standby ``name`` streaming, its ``sync_state``
        being ``state`` (``sync`` or ``async``)."""

        def streaming() -> bool:
            rows = self.query(
                "SELECT sync_state FROM pg_stat_replication "
                f"WHERE application_name = '{name}' AND state = 'streaming'"
            )
            return rows == [(state,)]

        wait_until(streaming, timeout, f"standby {name} streaming ({state})")

    def promote(self) -> None:
        """``pg_ctl promote``: the standby ends recovery and accepts writes."""
        self.pg_ctl("-w", "promote")

    def in_recovery(self) -> bool:
        return bool(self.query("SELECT pg_is_in_recovery()")[0][0])

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def processes(self) -> list[int]:
        """The postmaster and every process it started (backends, walsender, ...)."""
        postmaster = self.postmaster_pid()
        found = [postmaster]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                # pid (comm) state ppid ...: comm may hold spaces, so split after it.
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                    found.append(int(stat.parent.name))
        return found

    def kill_postmaster(self) -> None:
        """kill -9 of the postmaster alone, as a crashed host: its port closes, and its
        backends, seeing it gone, end their sessions."""
        os.kill(self.postmaster_pid(), signal.SIGKILL)

    def freeze(self) -> list[int]:
        """SIGSTOP of the postmaster and every process it started: the server stops
        answering while its sockets stay open and the kernel still acknowledges (a paused
        VM). Returns the processes stopped, for ``thaw``.

        The postmaster first: a connection it accepted while its children were being
        listed would get a backend that is never stopped, and a server half frozen (that
        backend's commit waiting for ever on a stopped walsender; seen as a client stuck
        on a statement). Stopped, it forks nothing more, so the list is complete."""
        os.kill(self.postmaster_pid(), signal.SIGSTOP)
        stopped = self.processes()
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        return stopped

    def thaw(self, stopped: list[int]) -> None:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

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

    def query(self, sql: str, *, autocommit: bool = False) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            dbname=self.database,
            user="postgres",
            autocommit=autocommit,
            connect_timeout=5,
        ) as conn:
            cursor = conn.execute(sql)
            return cursor.fetchall() if cursor.description else []

    def destroy(self) -> None:
        with contextlib.suppress(FileNotFoundError, ValueError, OSError):
            self.thaw(self.processes())  # a frozen server would not stop
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.pg_ctl("-m", "immediate", "-w", "stop")  # fails when already stopped
        shutil.rmtree(self.root, ignore_errors=True)
