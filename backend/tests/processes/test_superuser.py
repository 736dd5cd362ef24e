"""``make superuser`` (``scripts/superuser.sh``) without a terminal: it creates the login
from Django's DJANGO_SUPERUSER_* variables, or fails non-zero saying what to set (Django's
createsuperuser alone prints "skipped" and exits 0)."""

import os
import subprocess
import sys

import pytest

from harness import BACKEND_DIR

# The script runs on an SQLite file of its own, whatever the run's engine.
pytestmark = pytest.mark.engine_independent

SCRIPT = BACKEND_DIR.parent / "scripts" / "superuser.sh"


@pytest.fixture
def sqlite_env(tmp_path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("POSTGRES_", "DJANGO_SUPERUSER_", "DATABASE_"))
    }
    env.update(
        DATABASE_ENGINE="sqlite",
        SQLITE_PATH=str(tmp_path / "db.sqlite3"),
        PY=sys.executable,
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    migrated = subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"],
        cwd=BACKEND_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stderr
    return env


def run_script(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_a_terminal_or_variables_it_fails_naming_them(sqlite_env):
    result = run_script(sqlite_env)
    assert result.returncode != 0
    assert "DJANGO_SUPERUSER_USERNAME DJANGO_SUPERUSER_PASSWORD not set" in result.stderr


def test_without_a_terminal_it_creates_the_login_from_the_variables(sqlite_env):
    env = {
        **sqlite_env,
        "DJANGO_SUPERUSER_USERNAME": "ops",
        "DJANGO_SUPERUSER_PASSWORD": "a-long-password-1",
    }
    result = run_script(env)
    assert result.returncode == 0, result.stderr
    check = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model as m; "
            "u = m().objects.get(username='ops'); "
            "print(u.is_superuser, u.check_password('a-long-password-1'))",
        ],
        cwd=BACKEND_DIR,
        env=sqlite_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.stdout.split()[-2:] == ["True", "True"], check.stderr
