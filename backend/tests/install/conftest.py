"""The app as a user installs it: a wheel of ./backend, installed with its declared
dependencies into fresh virtualenvs, and PostgreSQL databases of their own.

The wheel and each virtualenv are built once per test run (session fixtures) and shared
by the installation matrix and the example project. Packages come from the index and
cache pip is configured with here, through this virtualenv's pip (``pip --python``), so
a virtualenv holds exactly what the package declares: nothing of this project's pins.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection
from psycopg import sql

from harness import BACKEND_DIR

# What a throwaway project's settings add when it installs django.contrib.admin.
ADMIN_SETTINGS = """
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
"""

# Virtualenv -> the extras installed with the wheel.
VIRTUALENVS = {
    "core": (),  # Django alone
    "postgres": ("postgres",),  # Django and psycopg: no REST framework, no metrics
    "all": ("all",),
}


@dataclass(frozen=True)
class Virtualenv:
    name: str
    root: Path

    @property
    def python(self) -> str:
        return str(self.root / "bin" / "python")

    def site_packages(self) -> Path:
        done = subprocess.run(
            [self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        )
        return Path(done.stdout.strip())

    def has(self, module: str) -> bool:
        probe = (
            f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        )
        return subprocess.run([self.python, "-c", probe]).returncode == 0


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """``pip wheel ./backend``, from a copy (the build writes next to its sources)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "src"
    shutil.copytree(
        BACKEND_DIR,
        source,
        ignore=shutil.ignore_patterns(
            ".venv", "__pycache__", "build", "*.egg-info", "*.sqlite3*", "staticfiles", ".*_cache"
        ),
    )
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "--wheel-dir", str(root / "dist"), str(source)),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = (root / "dist").glob("job_queue_backend-*.whl")
    return built


@pytest.fixture(scope="session")
def virtualenvs(wheel, tmp_path_factory) -> Iterator[dict[str, Virtualenv]]:
    """``name -> Virtualenv`` of ``VIRTUALENVS``, each built on first use."""
    root = tmp_path_factory.mktemp("venvs")

    class Lazy(dict[str, Virtualenv]):
        def __missing__(self, name: str) -> Virtualenv:
            venv = Virtualenv(name, root / name)
            subprocess.run(
                [sys.executable, "-m", "venv", "--without-pip", str(venv.root)],
                check=True,
                timeout=120,
            )
            extras = VIRTUALENVS[name]
            target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
            done = subprocess.run(
                [sys.executable, "-m", "pip", "--python", venv.python, "install", "-q", target],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr
            self[name] = venv
            return venv

    yield Lazy()


@pytest.fixture(scope="session")
def fresh_database(django_db_setup, django_db_blocker) -> Iterator[Any]:
    """``create(name) -> psycopg connection keywords`` of a new PostgreSQL database named
    after this run's test database; every one is dropped at the end."""
    with django_db_blocker.unblock():
        own = dict(connection.settings_dict)
    server = {
        "host": own["HOST"] or "127.0.0.1",
        "port": int(own["PORT"] or 5432),
        "user": own["USER"],
        "password": own["PASSWORD"] or "",
    }
    created: list[str] = []

    def drop(name: str) -> None:
        with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )

    def create(suffix: str) -> dict[str, Any]:
        name = f"{own['NAME']}_{suffix}".replace("-", "_")
        drop(name)
        with psycopg.connect(**server, dbname="postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return {**server, "dbname": name}

    yield create
    for name in created:
        drop(name)


def project_env(database: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a throwaway project's commands: none of this project's variables
    (its settings decide everything), its database in ``POSTGRES_*``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("JOB_", "POSTGRES_", "DJANGO_", "DATABASE_", "PYTHON"))
    }
    env["PYTHONUNBUFFERED"] = "1"
    if database is not None:
        env.update(
            POSTGRES_DB=database["dbname"],
            POSTGRES_HOST=database["host"],
            POSTGRES_PORT=str(database["port"]),
            POSTGRES_USER=database["user"],
            POSTGRES_PASSWORD=database["password"],
        )
    env.update(extra)
    return env
