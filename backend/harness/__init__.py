"""Infrastructure the tests and the benchmark share: child processes and free ports, an
HTTP client and the API served by gunicorn, private PostgreSQL, PgBouncer, Prometheus
and nginx servers, and an OTLP receiver for the spans processes export.

Not part of the app (``pip install ./backend`` leaves it out) and independent of it: it
imports nothing of ``jobs`` and nothing of Django, so the tests and the benchmark build
on it without importing each other.
"""

from .http import HttpServer, serve_api
from .nginx import load_nginx_conf, serve_nginx
from .otlp import OtlpReceiver, ReceivedSpan, otlp_receiver
from .pgbouncer import PrivatePgBouncer, pgbouncer_binary
from .postgres import PrivatePostgres, postgres_bin_dir
from .processes import (
    BACKEND_DIR,
    REPO_DIR,
    WorkerProcess,
    free_port,
    started,
    terminate,
    wait_until,
)
from .prometheus import (
    PROMETHEUS,
    PROMTOOL,
    metric_samples,
    prometheus_query,
    prometheus_server,
    promtool_check_metrics,
)

__all__ = [
    "BACKEND_DIR",
    "PROMETHEUS",
    "PROMTOOL",
    "REPO_DIR",
    "HttpServer",
    "OtlpReceiver",
    "PrivatePgBouncer",
    "PrivatePostgres",
    "ReceivedSpan",
    "WorkerProcess",
    "free_port",
    "load_nginx_conf",
    "metric_samples",
    "otlp_receiver",
    "pgbouncer_binary",
    "postgres_bin_dir",
    "prometheus_query",
    "prometheus_server",
    "promtool_check_metrics",
    "serve_api",
    "serve_nginx",
    "started",
    "terminate",
    "wait_until",
]
