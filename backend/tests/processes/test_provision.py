"""``scripts/provision.sh``, the first step of ``make test`` (and so of ``.ci/run``): it
installs the Debian packages the tests need and starts PostgreSQL, or says what it cannot.

The script runs for real, with fakes first on its PATH for the commands that look at or
change the system (``id``, ``sudo``, ``dpkg-query``, ``apt-get``, the PostgreSQL tools): a
package is installed when the fake package database says so, and every command run as root
is written to a log instead of being run. Nothing on this machine is installed or started.
"""

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness import BACKEND_DIR

# The script runs against fakes; nothing here reaches a database.
pytestmark = pytest.mark.engine_independent

SCRIPT = BACKEND_DIR.parent / "scripts" / "provision.sh"
PACKAGES = ("nginx", "chromium", "prometheus", "pgbouncer")

FAKES = {
    # uid: FAKE_UID
    "id": '[ "$1" = -u ] && echo "$FAKE_UID" || exec /usr/bin/id "$@"',
    # passwordless sudo unless FAKE_SUDO=no; logs the command, then plays its effect
    "sudo": """
[ "$FAKE_SUDO" = no ] && exit 1
[ "$*" = "-n true" ] && exit 0
shift  # -n
echo "$*" >> "$FAKE/root.log"
case "$*" in
  *"apt-get install"*) touch "$FAKE/installed/${@: -1}" ;;
  *pg_ctlcluster*) touch "$FAKE/postgres-up" ;;
  *"ALTER ROLE"*) touch "$FAKE/password-set" ;;
esac
""",
    "dpkg-query": '[ -e "$FAKE/installed/${@: -1}" ] && echo installed || echo not-installed',
    # run directly only by root: logs whether a policy-rc.d kept services from starting
    "apt-get": """
policy=no; [ -x "$PROVISION_POLICY_RC_D" ] && policy=yes
echo "apt-get $* (as root, policy-rc.d: $policy)" >> "$FAKE/root.log"
[ "$1" = install ] && touch "$FAKE/installed/${@: -1}"
exit 0
""",
    "pg_isready": '[ -e "$FAKE/postgres-up" ]',
    "pg_lsclusters": "echo '15 main 5432 down postgres /var/lib/postgresql/15/main log'",
    "pg_ctlcluster": "exit 1  # only through sudo",
    # the role logs in once its password is set (or from the start with FAKE_PASSWORD=ok)
    "psql": '[ "$FAKE_PASSWORD" = ok ] || [ -e "$FAKE/password-set" ]',
}


@dataclass
class Run:
    status: int
    output: str
    root_log: list[str]


@pytest.fixture
def provision(tmp_path: Path):
    """``provision(missing=..., uid=..., sudo=..., postgres_up=..., ci=...)`` runs the
    script against the fakes and returns its status, output and the commands run as root."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/bash\n{body}\n")
        path.chmod(0o755)
    (tmp_path / "installed").mkdir()

    def run(
        *,
        missing: tuple[str, ...] = (),
        uid: int = 1000,
        sudo: bool = True,
        postgres_up: bool = True,
        password_ok: bool = True,
        ci: bool = False,
    ) -> Run:
        for package in PACKAGES:
            if package not in missing:
                (tmp_path / "installed" / package).touch()
        if postgres_up:
            (tmp_path / "postgres-up").touch()
        env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "FAKE": str(tmp_path),
            "FAKE_UID": str(uid),
            "FAKE_SUDO": "yes" if sudo else "no",
            "FAKE_PASSWORD": "ok" if password_ok else "no",
            "CI": "true" if ci else "",
            "PROVISION_POLICY_RC_D": str(tmp_path / "policy-rc.d"),
        }
        result = subprocess.run(
            ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
        )
        log = tmp_path / "root.log"
        return Run(
            result.returncode,
            result.stdout + result.stderr,
            log.read_text().splitlines() if log.exists() else [],
        )

    return run


def apt_get(log: list[str]) -> list[str]:
    return [line for line in log if "apt-get" in line]


def test_with_everything_there_it_changes_nothing(provision):
    run = provision()
    assert run.status == 0, run.output
    assert run.root_log == []
    assert "ready: nginx, chromium, prometheus, pgbouncer; PostgreSQL on 127.0.0.1:5432" in (
        run.output
    )


def test_missing_packages_are_installed_through_passwordless_sudo_after_one_apt_update(
    provision,
):
    run = provision(missing=("nginx", "prometheus"))
    assert run.status == 0, run.output
    assert apt_get(run.root_log) == [
        "env DEBIAN_FRONTEND=noninteractive apt-get update -qq",
        "env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx",
        "env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "
        "prometheus",
    ]
    assert "ready:" in run.output


def test_root_installs_directly_with_a_policy_that_keeps_services_stopped(provision, tmp_path):
    run = provision(missing=("pgbouncer",), uid=0, sudo=False)
    assert run.status == 0, run.output
    assert apt_get(run.root_log) == [
        "apt-get update -qq (as root, policy-rc.d: no)",
        "apt-get install -y -qq pgbouncer (as root, policy-rc.d: yes)",
    ]
    assert not (tmp_path / "policy-rc.d").exists()  # removed again: it was not the system's


def test_a_package_that_cannot_be_installed_is_named_with_what_it_would_have_tested(provision):
    run = provision(missing=("prometheus",), sudo=False)
    assert run.status == 0, run.output
    assert apt_get(run.root_log) == []
    assert (
        "MISSING prometheus, which would have tested tests/processes/test_metrics.py: "
        "promtool lints /metrics and a real Prometheus scrapes the API and a worker (installing "
        "packages needs root or passwordless sudo: sudo apt-get install prometheus)"
    ) in run.output
    assert "continuing without it" in run.output


def test_under_ci_a_package_that_cannot_be_installed_fails(provision):
    run = provision(missing=("chromium",), sudo=False, ci=True)
    assert run.status == 1
    assert "MISSING chromium" in run.output and "the end-to-end tests" in run.output
    assert "FAILED: CI=true" in run.output


def test_postgres_installed_but_down_is_started(provision):
    run = provision(postgres_up=False)
    assert run.status == 0, run.output
    assert "pg_ctlcluster --skip-systemctl-redirect 15 main start" in run.root_log
    assert "ready:" in run.output


def test_postgres_down_that_cannot_be_started_fails_under_ci(provision):
    run = provision(postgres_up=False, sudo=False, ci=True)
    assert run.status == 1
    assert "PostgreSQL 15 main on port 5432 is down and could not be started" in run.output


def test_the_role_gets_the_tests_password_only_when_it_cannot_log_in(provision):
    assert not any("ALTER ROLE" in line for line in provision().root_log)
    run = provision(password_ok=False)
    assert run.status == 0, run.output
    assert [line for line in run.root_log if "ALTER ROLE" in line] == [
        "runuser -u postgres -- psql -p 5432 -v ON_ERROR_STOP=1 -qc "
        "ALTER ROLE \"postgres\" PASSWORD 'postgres'"
    ]


def test_make_test_and_ci_provision_through_the_script_first():
    dry_run = subprocess.run(
        ["make", "--dry-run", "--always-make", "test"],
        cwd=BACKEND_DIR.parent,
        env={**os.environ, "MAKEFLAGS": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    commands = [line for line in dry_run.stdout.splitlines() if line.strip()]
    first_test = next(i for i, line in enumerate(commands) if "ruff check" in line)
    assert any("scripts/provision.sh" in line for line in commands[:first_test]), commands[:10]
    ci = (BACKEND_DIR.parent / ".ci" / "run").read_text()
    assert "make test" in ci and "apt-get" not in ci and "pg_ctlcluster" not in ci


@pytest.fixture
def compose_checks_without_nginx(monkeypatch):
    """``scripts/check_compose.py`` (``make test-compose``) on a machine without nginx."""
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    import check_compose
    import nginx_conf

    monkeypatch.setattr(nginx_conf, "nginx_binary", lambda: None)
    monkeypatch.setattr(sys, "argv", ["check_compose.py"])
    return check_compose.main


@pytest.mark.parametrize(("ci", "status"), [("", 0), ("true", 1)], ids=["local", "ci"])
def test_compose_checks_skip_nginx_t_without_nginx_except_under_ci(
    compose_checks_without_nginx, monkeypatch, capsys, ci, status
):
    monkeypatch.setenv("CI", ci)
    assert compose_checks_without_nginx() == status
    output = capsys.readouterr().out
    assert ("SKIPPED: no nginx" in output) == (ci != "true")
