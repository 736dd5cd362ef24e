"""HTTP: a client for a server on 127.0.0.1, and the API served by a real child process."""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from .processes import BACKEND_DIR, free_port, terminate, wait_until


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
        body: bytes | dict[str, Any] | None = None,
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


@contextlib.contextmanager
def serve_api(
    log_path: Path,
    env: dict[str, str],
    *,
    server: Literal["gunicorn", "runserver"] = "gunicorn",
    workers: int = 1,
    threads: int = 4,
    gunicorn_args: Sequence[str] = ("--forwarded-allow-ips", "127.0.0.1"),
    health_path: str = "/api/health/",
    cwd: Path = BACKEND_DIR,
    timeout: float = 30,
) -> Iterator[HttpServer]:
    """The API as a real child process on a free port, ready once ``health_path``
    answers 200.

    ``gunicorn`` serves ``config.wsgi`` as the Dockerfile does (gthread, ``workers`` x
    ``threads``); ``runserver`` is the local one. Stopped with SIGTERM on exit.
    """
    port = free_port()
    if server == "gunicorn":
        command = [
            *("-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}"),
            *("--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread"),
            *gunicorn_args,
        ]
    else:
        command = ["manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"]
    client = HttpServer(port)
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, *command], cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT
        )

        def up() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"{server} exited:\n{log_path.read_text()}")
            return client.json("GET", health_path)[0] == 200

        try:
            wait_until(up, timeout, server)
            yield client
        finally:
            terminate(proc)
