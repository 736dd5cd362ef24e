"""This project's PostgreSQL connection settings, from the environment: one server, or a
primary and its standbys.

``POSTGRES_HOST`` may list several hosts (``POSTGRES_PORT`` one port for all, or one per
host), or ``POSTGRES_DSN`` may give a libpq connection string or URI. libpq, through psycopg,
tries the hosts in order, each for at most ``POSTGRES_CONNECT_TIMEOUT`` seconds, and with
``target_session_attrs=read-write`` (the default, ``POSTGRES_TARGET_SESSION_ATTRS``) keeps
the first that accepts writes: a standby, or a server still in recovery, is skipped like
one that is down. Every value lands in ``DATABASES["default"]`` (``HOST``, ``PORT``,
``OPTIONS``), so every connection the app opens gets it: Django's, the worker threads', the
maintenance thread's and the listener's (built from Django's ``get_connection_params``).

TCP keepalives and ``tcp_user_timeout`` (``POSTGRES_TCP_TIMEOUT_SECONDS``) let the kernel
give up on a peer that vanished (a lost host, a partition) instead of waiting for hours.
They are client-side socket options: nothing is sent in the startup packet, so PgBouncer,
which refuses startup parameters it does not know, passes them untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# libpq's target_session_attrs values that make sense for a queue that writes.
TARGET_SESSION_ATTRS = ("read-write", "primary", "any")


def _from_dsn(dsn: str) -> dict[str, str]:
    """The keywords of a libpq connection string or URI (psycopg parses it as libpq does)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {key: str(value) for key, value in conninfo_to_dict(dsn).items()}
    except Exception as exc:  # psycopg.ProgrammingError: the text is not a connection string
        raise ImproperlyConfigured(
            f"POSTGRES_DSN is not a libpq connection string: {exc}"
        ) from None


def hosts_and_ports(host: str, port: str) -> tuple[str, str]:
    """``host`` and ``port`` as libpq takes them: comma-separated, one port for every host
    or one per host (anything else libpq refuses only when it connects). An empty host is
    libpq's default, the local socket."""
    if not host:
        return host, port
    hosts = [item.strip() for item in host.split(",")]
    ports = [item.strip() for item in port.split(",")] if port else []
    if "" in hosts or "" in ports:
        raise ImproperlyConfigured(
            f"POSTGRES_HOST and POSTGRES_PORT must not have empty items, got {host!r} and {port!r}"
        )
    for item in ports:
        if not item.isdigit() or not 0 < int(item) < 65536:
            raise ImproperlyConfigured(f"POSTGRES_PORT must be ports (1-65535), got {port!r}")
    if len(ports) not in (0, 1, len(hosts)):
        raise ImproperlyConfigured(
            f"POSTGRES_PORT lists {len(ports)} ports for {len(hosts)} hosts in POSTGRES_HOST: "
            "give one port for all of them, or one per host"
        )
    return ",".join(hosts), ",".join(ports)


def postgres_database(
    *,
    dsn: str,
    variables: Mapping[str, str | None],
    target_session_attrs: str,
    connect_timeout: int,
    tcp_timeout: int,
    conn_max_age: int,
    prepared_statements: bool,
    transaction_pooling: bool,
) -> dict[str, Any]:
    """``DATABASES["default"]`` for PostgreSQL.

    ``variables`` are the spec's ``POSTGRES_DB``, ``_USER``, ``_PASSWORD``, ``_HOST`` and
    ``_PORT`` as set (``None``: unset); a keyword of ``dsn`` wins over its variable, and
    the spec's defaults fill in what neither gives.
    """
    given = _from_dsn(dsn) if dsn.strip() else {}

    def value(keyword: str, name: str, default: str) -> str:
        if keyword in given:
            return given.pop(keyword)
        set_to = variables.get(name)
        return default if set_to is None else set_to

    name = value("dbname", "POSTGRES_DB", "job_queue")
    user = value("user", "POSTGRES_USER", "postgres")
    password = value("password", "POSTGRES_PASSWORD", "postgres")
    host, port = hosts_and_ports(
        value("host", "POSTGRES_HOST", "localhost"), value("port", "POSTGRES_PORT", "5432")
    )
    attrs = given.pop("target_session_attrs", None) or target_session_attrs
    if attrs not in TARGET_SESSION_ATTRS:
        raise ImproperlyConfigured(
            f"POSTGRES_TARGET_SESSION_ATTRS must be one of {', '.join(TARGET_SESSION_ATTRS)}, "
            f"got {attrs!r}"
        )
    options: dict[str, Any] = {
        # Per host: a server that accepts the TCP connection but never answers (frozen)
        # costs this long before the next host is tried. libpq's minimum is 2.
        "connect_timeout": max(2, connect_timeout),
        "target_session_attrs": attrs,
        # A peer that stops acknowledging (a lost host, a partition) is given up after
        # tcp_timeout seconds with data outstanding, and an idle connection is probed after
        # half of it, its unanswered probes ending it within about the same time.
        "keepalives": 1,
        "keepalives_idle": max(1, tcp_timeout // 2),
        "keepalives_interval": max(1, tcp_timeout // 5),
        "keepalives_count": 3,
        "tcp_user_timeout": tcp_timeout * 1000,
        # psycopg's default threshold; Django's own default is never to prepare.
        **({"server_side_binding": True, "prepare_threshold": 5} if prepared_statements else {}),
    }
    # Whatever else the DSN says (sslmode, application_name, ...) goes to libpq as given.
    options.update(given)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": user,
        "PASSWORD": password,
        "HOST": host,
        "PORT": port,
        "CONN_MAX_AGE": conn_max_age,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": options,
        # QuerySet.iterator()'s WITH HOLD cursors live in one server session.
        "DISABLE_SERVER_SIDE_CURSORS": transaction_pooling,
    }
