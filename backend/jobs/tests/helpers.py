"""Shared test helpers: real workers, real servers and a private PostgreSQL, each run as
the processes production runs, against the test database (or a server of their own).

The fixtures that start them (``private_postgres``, ``production_server``) are in
``conftest.py``, so every suite can ask for them.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from django.db import connection

from jobs.worker import WorkerConfig, WorkerRunner

BACKEND_DIR = Path(__file__).resolve().parents[2]


# Queries one stats read makes: the counts, the queue names, and on PostgreSQL the
# planner's table estimate.
STATS_QUERIES = 3 if connection.vendor == "postgresql" else 2


def worker_config(threads: int = 1, **overrides: Any) -> WorkerConfig:
    """A worker configuration for tests: polls every 50 ms, 30 s lease."""
    values: dict[str, Any] = {
        "threads": threads,
        "poll_interval_seconds": 0.05,
        "lease_seconds": 30,
        "cleanup_interval_seconds": 5,
        "cleanup_batch_size": 100,
    }
    return WorkerConfig(**(values | overrides))


def worker_runner(threads: int = 1, **overrides: Any) -> WorkerRunner:
    """Real worker threads in this process (``worker_config``); not started yet."""
    return WorkerRunner(worker_config(threads, **overrides))


def run_workers_in_burst(threads: int = 1, **overrides: Any) -> WorkerRunner:
    """Run real worker threads in this process until nothing is claimable."""
    runner = worker_runner(threads, burst=True, **overrides)
    runner.run()
    return runner


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a subprocess that must use this test run's database."""
    env = dict(os.environ)
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        env.update(
            DATABASE_ENGINE="postgres",
            POSTGRES_DB=db["NAME"],
            POSTGRES_HOST=db["HOST"] or "127.0.0.1",
            POSTGRES_PORT=str(db["PORT"] or 5432),
            POSTGRES_USER=db["USER"],
            POSTGRES_PASSWORD=db["PASSWORD"] or "",
        )
    else:
        env.update(DATABASE_ENGINE="sqlite", SQLITE_PATH=str(db["NAME"]))
    env.update(
        DEBUG="true",
        ENABLE_DJANGO_DEBUG_TOOLBAR="false",
        JOB_WORKER_POLL_INTERVAL_MS="50",
        JOB_WORKER_LOG_LEVEL="DEBUG",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def run_manage(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py <args>`` in a child process with ``child_env(**env)``; output captured."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BACKEND_DIR,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class WorkerProcess:
    """``manage.py run_job_workers`` as a real child process with its log in a file."""

    def __init__(self, log_path: Path, *args: str, **env: str) -> None:
        self.log_path = log_path
        self._log = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "run_job_workers", *args],
            cwd=BACKEND_DIR,
            env=child_env(**env),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_for_log(self, text: str, timeout: float = 20) -> None:
        wait_until(lambda: text in self.log(), timeout, f"log line {text!r}")

    def wait_for_threads(self, count: int, timeout: float = 30) -> None:
        """Until ``count`` worker threads and the maintenance thread have started."""
        wait_until(
            lambda: (
                self.log().count("action=thread_started") >= count
                and "action=maintenance_started" in self.log()
            ),
            timeout,
            f"{count} worker threads",
        )

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.proc.send_signal(signum)

    def wait(self, timeout: float = 30) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


def pid_of(worker_id: str) -> str:
    """``hostname:pid:thread-N:random`` -> pid."""
    return worker_id.split(":")[1]


def stop_all(workers: list[WorkerProcess]) -> list[int]:
    """SIGTERM every worker, then their exit codes."""
    for worker in workers:
        worker.signal(signal.SIGTERM)
    return [worker.wait(timeout=30) for worker in workers]


def figures(title: str, **values: object) -> None:
    """One line of measured figures, shown with ``pytest -s``."""
    print(f"\n[fault] {title}: " + ", ".join(f"{k}={v}" for k, v in values.items()))


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- HTTP servers -------------------------------------------------------------------------


class HttpServer:
    """A client for one server on 127.0.0.1; each request on a fresh connection."""

    def __init__(self, port: int) -> None:
        self.port = port

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        body: bytes | dict | None = None,
        https: bool = True,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """Send one request; ``https`` adds ``X-Forwarded-Proto: https`` as a TLS proxy would.

        Returns (status, headers with lower-case names, body); repeated headers are joined.
        """
        all_headers = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        if https:
            all_headers["X-Forwarded-Proto"] = "https"
        if token is not None:
            all_headers["Authorization"] = f"Token {token}"
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        if body is not None:
            all_headers.setdefault("Content-Type", "application/json")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=all_headers)
            response = conn.getresponse()
            received: dict[str, str] = {}
            for name, value in response.getheaders():
                key = name.lower()
                received[key] = f"{received[key]}, {value}" if key in received else value
            return response.status, received, response.read()
        finally:
            conn.close()

    def json(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        """(status, decoded body), or (0, None) while nothing answers on the port."""
        try:
            status, _, body = self.request(method, path, **kwargs)
        except OSError:
            return 0, None
        return status, json.loads(body or b"null")


def production_child_env(**extra: str) -> dict[str, str]:
    """This run's database in production mode (DEBUG=false) behind a pretend TLS proxy:
    requests carrying ``X-Forwarded-Proto: https`` count as HTTPS, so the HTTPS defaults
    (redirect, HSTS, secure cookies) stay on."""
    env = child_env(
        **{
            "DEBUG": "false",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
            **extra,  # a module may set its own secret, e.g. to sign sessions it writes
        }
    )
    env.pop("GUNICORN_CMD_ARGS", None)
    return env


@contextlib.contextmanager
def serve_api(
    log_path: Path, env: dict[str, str], *, server: Literal["gunicorn", "runserver"] = "gunicorn"
) -> Iterator[HttpServer]:
    """The API as a real child process on a free port, ready once /api/health/ answers 200.

    ``gunicorn`` serves ``config.wsgi`` as the Dockerfile does (1 worker, 4 threads);
    ``runserver`` is the local one. Stopped with SIGTERM on exit.
    """
    port = free_port()
    if server == "gunicorn":
        command = [
            *("-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}"),
            *("--workers", "1", "--threads", "4", "--forwarded-allow-ips", "127.0.0.1"),
        ]
    else:
        command = ["manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    client = HttpServer(port)
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, *command],
            cwd=BACKEND_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"{server} exited:\n{log_path.read_text()}")
            return client.json("GET", "/api/health/")[0] == 200

        try:
            wait_until(up, 30, server)
            yield client
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


# --- nginx: the production front door ---------------------------------------------------------


def load_nginx_conf() -> Any:
    """``scripts/nginx_conf.py``: renders frontend/nginx/default.conf.template as the nginx
    image does and wraps it for Debian's nginx (the same code ``make test-compose`` uses)."""
    path = BACKEND_DIR.parent / "scripts" / "nginx_conf.py"
    spec = importlib.util.spec_from_file_location("nginx_conf", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def serve_nginx(prefix: Path, *, upstream_port: int, static_root: Path) -> Iterator[HttpServer]:
    """Debian's nginx with the front door's configuration on a free port, proxying to
    ``upstream_port`` on 127.0.0.1 and serving ``static_root``; stopped on exit."""
    nginx_conf = load_nginx_conf()
    binary = nginx_conf.nginx_binary()
    assert binary, "nginx is not installed (apt-get install nginx)"
    port = free_port()
    values = {
        "NGINX_API_UPSTREAM": f"127.0.0.1:{upstream_port}",
        "NGINX_LISTEN_PORT": f"127.0.0.1:{port}",
        "NGINX_STATIC_ROOT": str(static_root),
    }
    main = nginx_conf.write_config(prefix, values)
    proc = subprocess.Popen(
        [binary, "-p", str(prefix), "-c", str(main)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"nginx exited:\n{(prefix / 'error.log').read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return True
        return False

    try:
        wait_until(listening, 15, "nginx")
        yield HttpServer(port)
    finally:
        proc.send_signal(signal.SIGQUIT)  # graceful: let open requests finish
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# --- A private PostgreSQL server ------------------------------------------------------------


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

    def migrate(self) -> None:
        """Create the project's tables with ``manage.py migrate``, as a deployment does."""
        result = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=BACKEND_DIR,
            env=child_env(**self.env()),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr

    def query(self, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, dbname=self.database, user="postgres"
        ) as conn:
            return conn.execute(sql).fetchall()

    def destroy(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already stopped
            self.pg_ctl("-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


# --- Prometheus (Debian's prometheus package: /usr/bin/prometheus and promtool) -------------

PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")


def promtool_check_metrics(text: bytes) -> None:
    """``promtool check metrics`` (Prometheus's exposition linter) passes on ``text``."""
    result = subprocess.run(
        [str(PROMTOOL), "check", "metrics"], input=text, capture_output=True, timeout=30
    )
    assert result.returncode == 0, (result.stdout + result.stderr).decode()


def metric_samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


@contextlib.contextmanager
def prometheus_server(
    log_path: Path, scrape_configs: list[dict[str, Any]], *, interval: str = "1s"
) -> Iterator[HttpServer]:
    """A real Prometheus scraping ``scrape_configs`` every ``interval``, with its data in a
    temporary directory; ready once /-/ready answers 200. Stopped with SIGTERM on exit."""
    root = Path(tempfile.mkdtemp(prefix="jobq-prom-"))
    config = {"global": {"scrape_interval": interval}, "scrape_configs": scrape_configs}
    (root / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    client = HttpServer(port)
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"prometheus exited:\n{log_path.read_text()}")
            try:
                return client.request("GET", "/-/ready", https=False)[0] == 200
            except OSError:
                return False

        try:
            wait_until(ready, 30, "prometheus")
            yield client
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            shutil.rmtree(root, ignore_errors=True)


def prometheus_query(server: HttpServer, query: str) -> dict[tuple[tuple[str, str], ...], float]:
    """An instant query through Prometheus's HTTP API: labels (without __name__) -> value."""
    from urllib.parse import urlencode

    status, body = server.json("GET", "/api/v1/query?" + urlencode({"query": query}), https=False)
    assert status == 200 and body["status"] == "success", body
    return {
        tuple(sorted((k, v) for k, v in item["metric"].items() if k != "__name__")): float(
            item["value"][1]
        )
        for item in body["data"]["result"]
    }


# --- PgBouncer (Debian's pgbouncer package: /usr/sbin/pgbouncer) ----------------------------

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
