"""The production front door: Debian's nginx with the configuration the `web` container
renders (frontend/nginx/default.conf.template), in front of a real production gunicorn.

Marked slow (servers and seconds of trickling), and part of `make test` like the rest.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from harness import HttpServer, free_port, load_nginx_conf, serve_nginx
from tests.conftest import IN_CI

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

if load_nginx_conf().nginx_binary() is None:
    if IN_CI:
        raise RuntimeError("nginx is required in CI (apt-get install nginx)")
    pytest.skip("nginx is not installed (apt-get install nginx)", allow_module_level=True)

DASHBOARD = b"<!doctype html><title>Job Queue</title><div id=root></div>"


@pytest.fixture(scope="module")
def production_server_env() -> dict[str, str]:
    """As behind a proxy on plain HTTP: no redirect to HTTPS; nginx is the one proxy."""
    return {"DJANGO_SECURE_SSL_REDIRECT": "false", "DJANGO_NUM_PROXIES": "1"}


@pytest.fixture(scope="module")
def static_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    (root / "index.html").write_bytes(DASHBOARD)
    (root / "assets").mkdir()
    (root / "assets" / "index-3f2a.js").write_text("console.log('dashboard')")
    return root


@pytest.fixture(scope="module")
def front_door(production_server, static_root, tmp_path_factory):
    prefix = tmp_path_factory.mktemp("nginx")
    with serve_nginx(prefix, upstream_port=production_server.port, static_root=static_root) as web:
        yield web


def get(server: HttpServer, path: str, **kwargs):
    return server.request("GET", path, https=False, **kwargs)


def test_the_dashboard_is_served_with_security_headers(front_door):
    status, headers, body = get(front_door, "/")
    assert (status, body) == (200, DASHBOARD)
    csp = headers["content-security-policy"]
    for directive in ("default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"):
        assert directive in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-frame-options"] == "DENY"
    assert "strict-transport-security" not in headers  # plain HTTP: HSTS only on TLS
    assert "nginx/" not in headers.get("server", "")


def test_client_side_routes_get_the_dashboard_and_bundles_are_cached(front_door):
    assert get(front_door, "/jobs/0b4c/")[2] == DASHBOARD
    status, headers, _ = get(front_door, "/assets/index-3f2a.js")
    assert status == 200
    assert "max-age=31536000" in headers["cache-control"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_api_and_admin_are_on_the_same_origin(front_door):
    status, headers, body = get(front_door, "/api/health/")
    assert (status, json.loads(body)) == (200, {"ok": True, "database": "ok"})
    assert "content-security-policy" not in headers  # the API's headers are Django's
    assert get(front_door, "/admin/login/")[0] == 200
    status, _, body = front_door.request("POST", "/api/nowhere/", body={}, https=False)
    assert (status, json.loads(body)) == (404, {"detail": "Not found."})


def test_a_body_over_the_proxy_cap_is_a_json_413(front_door):
    status, _, body = front_door.request(
        "POST", "/api/jobs/", body=b"[" + b"1," * 1_000_000 + b"1]", https=False
    )
    assert status == 413
    assert json.loads(body) == {"detail": "Request body is too large."}


def trickle(port: int, stop: threading.Event, opened: list[socket.socket]) -> None:
    """A client that sends a request's headers one short line at a time, never finishing."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        opened.append(sock)
        sock.sendall(b"GET /api/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while not stop.wait(0.3):
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                return


def health_latencies(server: HttpServer, count: int) -> list[float]:
    """Seconds each of ``count`` health requests took; 99 for one that got no answer."""
    latencies = []
    for _ in range(count):
        start = time.monotonic()
        try:
            conn_status = server.request("GET", "/api/health/", https=False)[0]
        except OSError:  # timed out
            conn_status = 0
        latencies.append(time.monotonic() - start if conn_status == 200 else 99.0)
    return latencies


def with_slow_clients(port: int, clients: int, measure):
    stop = threading.Event()
    opened: list[socket.socket] = []
    threads = [
        threading.Thread(target=trickle, args=(port, stop, opened), daemon=True)
        for _ in range(clients)
    ]
    for thread in threads:
        thread.start()
    time.sleep(1)  # every slow client is connected and mid-headers
    try:
        return measure()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=5)


def test_slow_clients_trickling_headers_do_not_starve_health_through_nginx(
    front_door, production_server
):
    latencies = with_slow_clients(front_door.port, 16, lambda: health_latencies(front_door, 5))
    assert max(latencies) < 2, latencies
    # The same slow clients straight at gunicorn (1 worker, 4 threads) hold its threads:
    # what the front door is for.
    direct = HttpServer(production_server.port)
    starved = with_slow_clients(
        production_server.port, 8, lambda: _first_latency_with_timeout(direct, 3)
    )
    assert starved >= 3


def _first_latency_with_timeout(server: HttpServer, timeout: float) -> float:
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
            sock.sendall(b"GET /api/health/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            sock.recv(64)
    except OSError:  # no answer within the timeout
        return timeout
    return time.monotonic() - start


def test_a_stopped_backend_is_a_json_503_from_nginx(static_root, tmp_path):
    closed = free_port()  # nothing listens there
    with serve_nginx(tmp_path / "nginx", upstream_port=closed, static_root=static_root) as web:
        status, headers, body = get(web, "/api/jobs/")
    assert (status, headers["retry-after"]) == (503, "5")
    assert json.loads(body) == {"detail": "The service is unavailable; try again shortly."}


def test_spoofed_forwarded_for_does_not_dodge_the_failed_token_throttle(front_door):
    """nginx appends the address it saw; Django (one proxy) counts that one, whatever
    the client claims. Last in the module: it locks 127.0.0.1 out of token auth."""
    statuses = [
        get(front_door, "/api/jobs/", token="x" * 40, headers={"X-Forwarded-For": f"10.9.0.{n}"})[0]
        for n in range(11)
    ]
    assert statuses == [401] * 10 + [429]
