"""Prometheus (Debian's prometheus package: /usr/bin/prometheus and promtool)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .http import HttpServer
from .processes import free_port, terminate, wait_until

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
            terminate(proc)
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
