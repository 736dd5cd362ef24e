"""The API as a deployment runs it: gunicorn (gthread, DEBUG=false, token auth) on the
loopback, a keep-alive HTTP client, and the per-endpoint latency sample that the enqueue
and scale scenarios share.
"""

from __future__ import annotations

import http.client
import itertools
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness import serve_api

from .figures import p50_p99_ms, timed_calls


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
    server_env = dict(env, POSTGRES_CONN_MAX_AGE=str(conn_max_age))
    with serve_api(
        log_dir / f"gunicorn-conn-max-age-{conn_max_age}.log",
        server_env,
        workers=shape.workers,
        threads=shape.threads,
        gunicorn_args=("--no-control-socket", "--log-level", "warning"),
        timeout=60,
    ) as server:
        yield server.port


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
class PostLoad:
    """What ``post_load`` sent: its wall time, each request's seconds and the answers."""

    seconds: float
    latencies: list[float]
    status_codes: Counter[int]


def post_load(
    port: int,
    token: str,
    path: str,
    body: Callable[[int], bytes],
    *,
    concurrency: int,
    total: int,
    seconds: float = math.inf,
) -> PostLoad:
    """POST ``body(index)`` to ``path`` for each index below ``total`` from ``concurrency``
    keep-alive clients, each taking the next index when its answer came (or stopping at
    ``seconds``)."""
    counter = itertools.count()
    latencies: list[float] = []
    codes: Counter[int] = Counter()
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client_loop() -> None:
        client = Client(port, token)
        mine: list[float] = []
        seen: Counter[int] = Counter()
        try:
            while (index := next(counter)) < total and time.perf_counter() < deadline:
                payload = body(index)
                start = time.perf_counter()
                code, _ = client.request("POST", path, payload)
                mine.append(time.perf_counter() - start)
                seen[code] += 1
        finally:
            client.close()
            with lock:
                latencies.extend(mine)
                codes.update(seen)

    threads = [threading.Thread(target=client_loop) for _ in range(concurrency)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return PostLoad(seconds=time.perf_counter() - began, latencies=latencies, status_codes=codes)


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
    return str(token.key)
