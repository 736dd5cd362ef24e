"""The API as a deployment runs it: gunicorn (gthread, DEBUG=false, token auth) on the
loopback, a keep-alive HTTP client, and the per-endpoint latency sample that the enqueue
and scale scenarios share.
"""

from __future__ import annotations

import http.client
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .common import BACKEND_DIR, free_port, p50_p99_ms, started, timed_calls, wait_for


@dataclass(frozen=True, kw_only=True)
class ServerShape:
    workers: int
    threads: int

    def describe(self) -> str:
        return f"{self.workers} workers x {self.threads} threads, gthread, DEBUG=false, token auth"


@contextmanager
def api_server(
    env: dict[str, str], shape: ServerShape, *, conn_max_age: int, log_dir: Path
) -> Iterator[int]:
    """gunicorn serving ``config.wsgi`` until the block ends; yields its port."""
    port = free_port()
    server_env = dict(env, POSTGRES_CONN_MAX_AGE=str(conn_max_age))
    log_path = log_dir / f"gunicorn-conn-max-age-{conn_max_age}.log"
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(shape.workers),
        "--threads",
        str(shape.threads),
        "--worker-class",
        "gthread",
        "--no-control-socket",
        "--log-level",
        "warning",
    ]
    procs: list[subprocess.Popen[bytes]] = []
    with log_path.open("w") as out, started(procs):
        procs.append(
            subprocess.Popen(
                command, cwd=BACKEND_DIR, env=server_env, stdout=out, stderr=subprocess.STDOUT
            )
        )

        def healthy() -> bool:
            if procs[0].poll() is not None:
                raise RuntimeError(f"gunicorn exited; see {log_path}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/api/health/")
                code = conn.getresponse().status
            except OSError:
                return False
            if code != 200:
                raise RuntimeError(f"GET /api/health/ answered {code}; see {log_path}")
            return True

        wait_for(healthy, timeout=60, interval=0.2, what="gunicorn to answer /api/health/")
        try:
            yield port
        finally:
            procs[0].send_signal(signal.SIGTERM)
            procs[0].wait(timeout=30)


class Client:
    """One keep-alive HTTP connection to the benchmark's server."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=body, headers=self.headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, ConnectionError, http.client.BadStatusLine):
                # The server closed an idle keep-alive connection; reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()


@dataclass(kw_only=True)
class EndpointLatency:
    path: str
    requests: int
    p50_ms: float
    p99_ms: float


def endpoint_latency(port: int, token: str, path: str, *, count: int) -> EndpointLatency:
    """``count`` sequential GETs on one warm keep-alive connection."""
    client = Client(port, token)

    def get() -> None:
        code, _ = client.request("GET", path)
        if code != 200:
            raise RuntimeError(f"GET {path} answered {code}")

    try:
        p50, p99 = p50_p99_ms(timed_calls(get, count))
    finally:
        client.close()
    return EndpointLatency(path=path, requests=count, p50_ms=p50, p99_ms=p99)


def api_token() -> str:
    """The key of a ``bench`` user's DRF token (created on first use). Not a superuser: an
    API client in production holds the job model permissions it needs (jobs.permissions),
    and checking them is part of what a request costs."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from rest_framework.authtoken.models import Token

    user, _ = get_user_model().objects.update_or_create(
        username="bench", defaults={"is_superuser": False, "is_staff": False}
    )
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="jobs", codename__in=["view_job", "add_job", "change_job"]
        )
    )
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
