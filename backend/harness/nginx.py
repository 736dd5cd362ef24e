"""nginx, the production front door: Debian's nginx with the configuration the `web`
container renders."""

from __future__ import annotations

import contextlib
import importlib.util
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .http import HttpServer
from .processes import REPO_DIR, free_port, wait_until


def load_nginx_conf() -> Any:
    """``scripts/nginx_conf.py``: renders frontend/nginx/default.conf.template as the nginx
    image does and wraps it for Debian's nginx (the same code ``make test-compose`` uses)."""
    path = REPO_DIR / "scripts" / "nginx_conf.py"
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
