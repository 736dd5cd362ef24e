"""Production mode (DEBUG=false), and hostile queries in every server mode.

Settings are read once at import, so production mode is tested in child processes: the
startup refusals and ``check --deploy`` run ``manage.py`` with a production environment,
and the authentication tests talk to a real gunicorn serving the API in production mode
against this test run's database (``production_server`` in conftest.py, behind a pretend
TLS proxy, so the HTTPS defaults stay on). The request-size and hostile-input tests run
in process on the local settings in integration/api/test_security.py.
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
import socket
import subprocess
import sys
import uuid
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from django.utils.crypto import get_random_string
from rest_framework.authtoken.models import Token

from harness import BACKEND_DIR, HttpServer, serve_api
from jobs import services
from jobs.models import Job
from tests.factories import failed_job, queued_job, user_with, workflow
from tests.helpers import child_env, production_child_env
from tests.integration.api.test_security import TOO_MANY_PARAMETERS, feed_with_cursor_position

STRONG_SECRET = secrets.token_urlsafe(50)
DASHBOARD_ORIGIN = "https://dashboard.example.com"
PROD_SQLITE_DIR = Path("/nonexistent")


@pytest.fixture(autouse=True, scope="module")
def _production_sqlite_dir(tmp_path_factory):
    global PROD_SQLITE_DIR
    PROD_SQLITE_DIR = tmp_path_factory.mktemp("production-check")


def production_env(**extra: str) -> dict[str, str]:
    """The documented minimal production environment (see .env.example), nothing else."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(Path.home()),
        "DEBUG": "false",
        "DJANGO_SECRET_KEY": STRONG_SECRET,
        "DJANGO_ALLOWED_HOSTS": "jobs.example.com",
        "DATABASE_ENGINE": "sqlite",
        # Django's model checks open the database; an empty file is enough.
        "SQLITE_PATH": str(PROD_SQLITE_DIR / "check.sqlite3"),
    }
    env.update(extra)
    return {name: value for name, value in env.items() if value is not None}


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BACKEND_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


# --- Startup refusals and check --deploy ------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"DJANGO_SECRET_KEY": None}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "django-insecure-local-development-key-change-me"}, "SECRET_KEY"),
        ({"DJANGO_SECRET_KEY": "  "}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_ALLOWED_HOSTS": ""}, "DJANGO_ALLOWED_HOSTS"),
        ({"DJANGO_ALLOWED_HOSTS": " , "}, "DJANGO_ALLOWED_HOSTS"),
    ],
)
def test_production_refuses_to_start_with_dev_secret_or_no_allowed_hosts(overrides, message):
    result = manage("check", env=production_env(**overrides))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert message in result.stderr


def test_production_starts_with_a_real_secret_and_hosts():
    result = manage("check", env=production_env())
    assert result.returncode == 0, result.stderr


def test_check_deploy_passes_with_the_documented_production_settings():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize(
    ("variable", "value", "warning"),
    [
        ("DJANGO_SECURE_SSL_REDIRECT", "false", "security.W008"),
        ("DJANGO_SECURE_HSTS_SECONDS", "0", "security.W004"),
        ("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", "false", "security.W005"),
        ("DJANGO_SESSION_COOKIE_SECURE", "false", "security.W012"),
        ("DJANGO_CSRF_COOKIE_SECURE", "false", "security.W016"),
    ],
)
def test_https_settings_are_configurable_and_check_deploy_flags_unsafe_values(
    variable, value, warning
):
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", env=production_env(**{variable: value})
    )
    assert result.returncode != 0
    assert warning in result.stdout + result.stderr


PRINT_SETTINGS = """
import json, django
django.setup()
from django.conf import settings
from rest_framework.settings import api_settings
from jobs.api.views import JobListCreateView
print(json.dumps({
    "debug": settings.DEBUG,
    "toolbar": settings.ENABLE_DJANGO_DEBUG_TOOLBAR,
    "toolbar_app": "debug_toolbar" in settings.INSTALLED_APPS,
    "toolbar_middleware": any("debug_toolbar" in m for m in settings.MIDDLEWARE),
    "cors_all": settings.CORS_ALLOW_ALL_ORIGINS,
    "cors_origins": settings.CORS_ALLOWED_ORIGINS,
    "permissions": [c.__name__ for c in JobListCreateView.permission_classes],
    "renderers": [c.__name__ for c in api_settings.DEFAULT_RENDERER_CLASSES],
    "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "proxy_header": settings.SECURE_PROXY_SSL_HEADER,
}))
"""


def settings_in(env: dict[str, str]) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS],
        cwd=BACKEND_DIR,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_production_turns_off_toolbar_open_cors_and_anonymous_access():
    prod = settings_in(
        production_env(
            ENABLE_DJANGO_DEBUG_TOOLBAR="true", DJANGO_CORS_ALLOWED_ORIGINS=DASHBOARD_ORIGIN
        )
    )
    assert prod["debug"] is False
    assert (prod["toolbar"], prod["toolbar_app"], prod["toolbar_middleware"]) == (
        False,
        False,
        False,
    )
    assert prod["cors_all"] is False
    assert prod["cors_origins"] == [DASHBOARD_ORIGIN]
    assert prod["permissions"] == ["JobModelPermissions"]
    assert prod["renderers"] == ["JSONRenderer"]
    assert prod["ssl_redirect"] is True
    assert prod["proxy_header"] is None
    # The local demo, for contrast: open API, any origin.
    local = settings_in(production_env(DEBUG="true", DJANGO_SECRET_KEY=None))
    assert local["permissions"] == ["AllowAny"]
    assert local["cors_all"] is True
    assert local["ssl_redirect"] is False


def test_malformed_proxy_ssl_header_is_refused():
    result = manage("check", env=production_env(DJANGO_SECURE_PROXY_SSL_HEADER="X-Proto"))
    assert result.returncode != 0
    assert "DJANGO_SECURE_PROXY_SSL_HEADER" in result.stderr


# --- The API in production mode: a real server ------------------------------------------


TOOLBAR_SHOWN = """
import json, django
django.setup()
from django.conf import settings
from django.test import RequestFactory
show = settings.DEBUG_TOOLBAR_CONFIG["SHOW_TOOLBAR_CALLBACK"]
paths = ["/admin/", "/admin/jobs/job/", "/api/docs/", "/api/jobs/", "/elsewhere/"]
print(json.dumps({p: show(RequestFactory().get(p, REMOTE_ADDR="127.0.0.1")) for p in paths}))
"""


def test_the_debug_toolbar_stays_off_the_admin_and_the_api_under_make_run():
    result = subprocess.run(
        [sys.executable, "-c", TOOLBAR_SHOWN],
        cwd=BACKEND_DIR,
        env={
            **child_env(DEBUG="true", ENABLE_DJANGO_DEBUG_TOOLBAR="true"),
            "DJANGO_SETTINGS_MODULE": "config.settings",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "/admin/": False,
        "/admin/jobs/job/": False,
        "/api/docs/": False,
        "/api/jobs/": False,
        "/elsewhere/": True,  # any other HTML page of the project keeps it
    }


@pytest.fixture(scope="module")
def production_server_env() -> dict[str, str]:
    """The dashboard's origin for CORS; the Debug Toolbar asked for, and must stay off;
    one trusted proxy (tests tell clients apart by X-Forwarded-For); rate limits low
    enough to reach quickly (each failed login costs a password hash)."""
    return {
        "DJANGO_CORS_ALLOWED_ORIGINS": DASHBOARD_ORIGIN,
        "ENABLE_DJANGO_DEBUG_TOOLBAR": "true",
        "DJANGO_NUM_PROXIES": "1",
        "DJANGO_SECRET_KEY": STRONG_SECRET,  # Session.of signs sessions with it
        "DJANGO_THROTTLE_AUTH_FAILURES": "3/minute",
        "DJANGO_THROTTLE_JOB_CREATE": "3/minute",
        # A schedule for the flow control routes to act on.
        "JOB_SCHEDULES_JSON": '{"hourly": {"type": "demo.success", "cron": "0 * * * *"}}',
    }


ALL_JOB_PERMISSIONS = ("view_job", "add_job", "change_job")


@pytest.fixture
def api_token(transactional_db) -> str:
    """A token of an operator who may do everything the API offers."""
    return Token.objects.create(user=user_with(*ALL_JOB_PERMISSIONS, username="operator")).key


_addresses = itertools.count(1)


def client_address() -> dict[str, str]:
    """A client address of its own (the module's server trusts one proxy), so failed
    authentications counted against one test never throttle another."""
    n = next(_addresses)
    return {"X-Forwarded-For": f"10.0.{n // 250}.{n % 250 + 1}"}


# Every API route: (method, path template, permission needed; None: open to anyone).
ROUTES = [
    ("GET", "/api/config/", "view_job"),
    ("GET", "/metrics", "view_job"),
    ("GET", "/api/jobs/", "view_job"),
    ("POST", "/api/jobs/", "add_job"),
    ("POST", "/api/jobs/bulk/", "add_job"),
    ("GET", "/api/jobs/stats/", "view_job"),
    ("GET", "/api/jobs/throughput/", "view_job"),
    ("GET", "/api/jobs/types/", "view_job"),
    ("GET", "/api/workers/", "view_job"),
    ("GET", "/api/jobs/{id}/", "view_job"),
    ("GET", "/api/jobs/{id}/events/", "view_job"),
    ("GET", "/api/jobs/{id}/attempts/", "view_job"),
    ("GET", "/api/jobs/lookup/", "view_job"),
    ("POST", "/api/jobs/{id}/retry/", "change_job"),
    ("POST", "/api/jobs/{id}/cancel/", "change_job"),
    ("POST", "/api/jobs/{id}/run-now/", "change_job"),
    ("POST", "/api/jobs/retry/", "change_job"),
    ("POST", "/api/jobs/cancel/", "change_job"),
    ("GET", "/api/job-events/", "view_job"),
    ("GET", "/api/queues/", "view_job"),
    ("PATCH", "/api/queues/{name}/", "change_job"),
    ("POST", "/api/queues/{name}/pause/", "change_job"),
    ("POST", "/api/queues/{name}/resume/", "change_job"),
    ("GET", "/api/schedules/", "view_job"),
    ("POST", "/api/schedules/{name}/pause/", "change_job"),
    ("POST", "/api/schedules/{name}/resume/", "change_job"),
    ("POST", "/api/schedules/{name}/trigger/", "change_job"),
    ("GET", "/api/workflows/", "view_job"),
    ("POST", "/api/workflows/", "add_job"),
    ("GET", "/api/workflows/{id}/", "view_job"),
    ("GET", "/api/schema/", "authenticated"),
    ("GET", "/api/docs/", "authenticated"),
    ("GET", "/api/health/", None),
    ("GET", "/api/", None),
    ("GET", "/api/auth/session/", None),
    ("POST", "/api/auth/login/", None),
    ("POST", "/api/auth/logout/", None),
]


def _routes(patterns, prefix: str = "") -> list[str]:
    routes = []
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            routes += _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and pattern.name:
            routes.append("/" + prefix + str(pattern.pattern))
    return routes


def test_the_table_covers_every_api_route():
    """A new endpoint has to be added to ROUTES, and so to the permission matrix."""
    api = {
        re.sub(r"<str:(id|name)>", r"{\1}", route)
        for route in _routes(get_resolver().url_patterns)
        if route.startswith("/api/") or route == "/metrics"
    }
    assert api == {path for _, path, _ in ROUTES}


class Session:
    """A browser's session with the server: its cookies, and the CSRF header on writes."""

    def __init__(self, server: HttpServer, session: str, csrf: str) -> None:
        self.server = server
        self.origin = f"https://127.0.0.1:{server.port}"
        self.session = session
        self.csrf = csrf

    @classmethod
    def login(cls, server: HttpServer, username: str, password: str) -> Session:
        """Signed in through /api/auth/login/, as the dashboard does."""
        status, headers, _ = server.request("GET", "/api/auth/session/")
        assert status == 200
        anonymous = cls(server, "", _cookie(headers, "csrftoken"))
        status, headers, body = anonymous.request(
            "POST", "/api/auth/login/", body={"username": username, "password": password}
        )
        assert status == 200, body
        # Django rotates the CSRF token at login.
        return cls(server, _cookie(headers, "sessionid"), _cookie(headers, "csrftoken"))

    @classmethod
    def of(cls, server: HttpServer, user) -> Session:
        """A session of ``user`` written to the shared database (Django's force_login,
        signed with the server's secret): the server's SessionAuthentication and CSRF
        check are the real ones, and no password hash is computed."""
        client = Client()
        with override_settings(SECRET_KEY=STRONG_SECRET):
            client.force_login(user)
        return cls(server, client.cookies["sessionid"].value, get_random_string(32))

    def request(self, method: str, path: str, **kwargs):
        cookies = f"csrftoken={self.csrf}" + (f"; sessionid={self.session}" if self.session else "")
        headers = {"Cookie": cookies, "Origin": self.origin, **kwargs.pop("headers", {})}
        if method != "GET":
            headers["X-CSRFToken"] = self.csrf
        return self.server.request(method, path, headers=headers, **kwargs)


# The matrix: what each kind of user may do through each job endpoint.
MATRIX_ROUTES = [route for route in ROUTES if route[2] and route[2].endswith("_job")]
MATRIX_USERS = [None, (), ("view_job",), ("add_job",), ("change_job",)]


def _target(method: str, template: str) -> tuple[str, dict | None, Job | None, int]:
    """A fresh job the request can succeed on: (path, body, job it may change, status)."""
    if template in ("/api/jobs/{id}/cancel/", "/api/jobs/cancel/"):
        job = queued_job()
    elif template == "/api/jobs/{id}/run-now/":
        job = queued_job(available_at=timezone.now() + timedelta(hours=1))
    else:
        job = failed_job()  # retry succeeds on it; reads find it
    if template == "/api/jobs/lookup/":
        return f"{template}?q={job.pk}", None, job, 200
    if template == "/api/workflows/{id}/":
        return template.format(id=workflow({}).id), None, job, 200
    name = "hourly" if template.startswith("/api/schedules/") else "emails"
    if method == "GET":
        return template.format(id=job.pk), None, job, 200
    if "{name}" in template:
        body = {"concurrency_limit": 3} if method == "PATCH" else None
        success = 201 if template.endswith("/trigger/") else 200
        return template.format(name=name), body, job, success
    bodies = {
        "/api/jobs/": {"type": "demo.success"},
        "/api/jobs/bulk/": {"jobs": [{"type": "demo.success"}]},
        "/api/jobs/retry/": {"ids": [str(job.pk)]},
        "/api/jobs/cancel/": {"ids": [str(job.pk)]},
        "/api/workflows/": {"jobs": [{"type": "demo.success"}]},
    }
    success = 201 if template in ("/api/jobs/", "/api/jobs/bulk/", "/api/workflows/") else 200
    return template.format(id=job.pk), bodies.get(template), job, success


def _assert_permission_matrix(send) -> None:
    """``send(user_permissions or None, method, path, body)`` answers each request; a
    permitted one succeeds, a refused one is 401 (anonymous) or 403 and writes nothing."""
    for permissions in MATRIX_USERS:
        for method, template, needed in MATRIX_ROUTES:
            path, body, job, success = _target(method, template)
            jobs_before = Job.objects.count()
            status, _, answer = send(permissions, method, path, body)
            case = (permissions, method, template, status, answer[:200])
            if permissions is not None and needed in permissions:
                assert status == success, case
            else:
                assert status == (401 if permissions is None else 403), case
                assert Job.objects.count() == jobs_before, case
                assert Job.objects.get(pk=job.pk).status == job.status, case
            # Empty the queue (created and retried jobs): the factories' next claim must
            # take the job they create.
            services.cancel_jobs(status="queued")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_permission_matrix_with_tokens(production_server):
    tokens = {
        permissions: Token.objects.create(user=user_with(*permissions)).key
        for permissions in MATRIX_USERS
        if permissions is not None
    }

    def send(permissions, method, path, body):
        token = None if permissions is None else tokens[permissions]
        return production_server.request(method, path, token=token, body=body)

    _assert_permission_matrix(send)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_permission_matrix_with_sessions(production_server):
    sessions = {
        permissions: Session.of(production_server, user_with(*permissions))
        for permissions in MATRIX_USERS
        if permissions is not None
    }

    def send(permissions, method, path, body):
        if permissions is None:
            return production_server.request(method, path, body=body)
        return sessions[permissions].request(method, path, body=body)

    _assert_permission_matrix(send)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_every_other_route_needs_what_the_table_says(production_server, api_token):
    plain = Token.objects.create(user=user_with()).key  # authenticated, no permission
    for method, path, needed in ROUTES:
        if needed is None or needed.endswith("_job"):
            continue
        assert production_server.request(method, path)[0] == 401, path
        assert production_server.request(method, path, token=plain)[0] == 200, path
    for method, path, needed in ROUTES:
        if needed is None and method == "GET":
            assert production_server.request(method, path)[0] == 200, path


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_wrong_tokens_are_refused_with_401_and_write_nothing(production_server):
    address = client_address()
    status, headers, body = production_server.request(
        "POST",
        "/api/jobs/",
        token=secrets.token_hex(20),
        body={"type": "demo.success"},
        headers=address,
    )
    assert (status, headers.get("www-authenticate")) == (401, "Token")
    assert b"Invalid token" in body
    assert not Job.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_session_api_reports_the_user_and_what_they_may_do(production_server):
    password = secrets.token_urlsafe()
    user = user_with("view_job", "change_job", password=password)
    anonymous = production_server.json("GET", "/api/auth/session/")[1]
    assert anonymous == {
        "login_required": True,
        "authenticated": False,
        "username": None,
        "permissions": {"view": False, "add": False, "change": False},
    }
    session = Session.login(production_server, user.username, password)
    _, _, body = session.request("GET", "/api/auth/session/")
    assert json.loads(body) == {
        "login_required": True,
        "authenticated": True,
        "username": user.username,
        "permissions": {"view": True, "add": False, "change": True},
    }
    assert session.request("POST", "/api/auth/logout/")[0] == 204
    assert session.request("GET", "/api/jobs/")[0] == 401


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_login_needs_the_csrf_token(production_server):
    password = secrets.token_urlsafe()
    user = user_with("view_job", password=password)
    status, _, body = production_server.request(
        "POST", "/api/auth/login/", body={"username": user.username, "password": password}
    )
    assert status == 403 and b"CSRF" in body


# --- Rate limits (the module's server: 3 failures a minute, 3 jobs a minute) --------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_wrong_tokens_from_one_address_are_throttled_and_others_are_not(
    production_server, api_token
):
    address = client_address()
    for _ in range(3):
        wrong = production_server.request("GET", "/api/jobs/", token="x" * 40, headers=address)
        assert wrong[0] == 401
    status, headers, body = production_server.request(
        "GET", "/api/jobs/", token=api_token, headers=address
    )
    assert status == 429, body  # even a right token: the address is locked out for now
    assert 0 < int(headers["retry-after"]) <= 60
    assert json.loads(body)["detail"].startswith("Too many failed authentications")
    other = production_server.request(
        "GET", "/api/jobs/", token=api_token, headers=client_address()
    )
    assert other[0] == 200


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_failed_logins_are_throttled_for_the_api_and_the_admin(production_server):
    password = secrets.token_urlsafe()
    user = user_with("view_job", password=password)
    user.is_staff = True
    user.save()
    address = client_address()
    _, headers, _ = production_server.request("GET", "/api/auth/session/", headers=address)
    csrf = _cookie(headers, "csrftoken")
    origin = f"https://127.0.0.1:{production_server.port}"
    login_headers = {
        **address,
        "Cookie": f"csrftoken={csrf}",
        "X-CSRFToken": csrf,
        "Origin": origin,
    }

    def login(secret: str):
        body = {"username": user.username, "password": secret}
        return production_server.request(
            "POST", "/api/auth/login/", body=body, headers=login_headers
        )

    for _ in range(3):
        status, _, body = login("wrong")
        assert status == 400 and b"Wrong username or password" in body
    assert login(password)[0] == 429
    # The admin's form refuses the right password from that address too.
    status, _, _ = admin_login_attempt(production_server, user.username, password, address)
    assert status == 200  # the form again, not the 302 of a login
    assert login_from_elsewhere(production_server, user.username, password)


def admin_login_attempt(server: HttpServer, username: str, password: str, address: dict):
    _, page_headers, page = server.request("GET", "/admin/login/", headers=address)
    csrf_cookie = _cookie(page_headers, "csrftoken")
    form_token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    origin = f"https://127.0.0.1:{server.port}"
    form = f"username={username}&password={password}&csrfmiddlewaretoken={form_token.decode()}"
    return server.request(
        "POST",
        "/admin/login/?next=/admin/",
        body=form.encode(),
        headers={
            **address,
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf_cookie}",
            "Origin": origin,
            "Referer": origin + "/admin/login/",
        },
    )


def login_from_elsewhere(server: HttpServer, username: str, password: str) -> bool:
    return admin_login_attempt(server, username, password, client_address())[0] == 302


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_job_creation_is_limited_per_user(production_server):
    busy, other = (Token.objects.create(user=user_with("add_job")).key for _ in range(2))
    body = {"type": "demo.success"}
    for _ in range(3):
        assert production_server.request("POST", "/api/jobs/", token=busy, body=body)[0] == 201
    status, headers, _ = production_server.request("POST", "/api/jobs/", token=busy, body=body)
    assert status == 429 and int(headers["retry-after"]) > 0
    assert production_server.request("POST", "/api/jobs/", token=other, body=body)[0] == 201
    assert Job.objects.count() == 4


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_health_stays_open_and_unknown_token_on_it_is_ignored(production_server):
    for token in (None, "not-a-token"):
        status, _, body = production_server.request("GET", "/api/health/", token=token)
        assert status == 200
        assert json.loads(body) == {"ok": True, "database": "ok"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_drf_create_token_command_makes_a_token_the_api_accepts(production_server):
    user_with("view_job", username="dashboard")
    out = StringIO()
    call_command("drf_create_token", "dashboard", stdout=out)
    key = re.search(r"[0-9a-f]{40}", out.getvalue()).group(0)
    assert production_server.request("GET", "/api/jobs/", token=key)[0] == 200
    assert production_server.request("GET", "/api/jobs/")[0] == 401


def _cookie(headers: dict[str, str], name: str) -> str:
    match = re.search(rf"{name}=([^;]+)", headers.get("set-cookie", ""))
    assert match, headers
    return match.group(1)


def admin_login(server: HttpServer, *permissions: str) -> tuple[dict[str, str], dict[str, str]]:
    """A new staff user with these job permissions logs in through the admin's form, as a
    browser would.

    Returns the headers of the login page and of the successful login's response.
    """
    password = secrets.token_urlsafe()
    user = user_with(*permissions, username="staff", password=password)
    user.is_staff = True
    user.save()
    status, page_headers, page = server.request("GET", "/admin/login/")
    assert status == 200
    csrf_cookie = _cookie(page_headers, "csrftoken")
    form_token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    origin = f"https://127.0.0.1:{server.port}"
    form = f"username=staff&password={password}&csrfmiddlewaretoken={form_token.decode()}"
    status, headers, _ = server.request(
        "POST",
        "/admin/login/?next=/admin/",
        body=form.encode(),
        headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": f"csrftoken={csrf_cookie}",
            "Origin": origin,
            "Referer": origin + "/admin/login/",
        },
    )
    assert status == 302, (status, headers)
    return page_headers, headers


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_admin_login_cookies_are_secure_and_the_session_httponly(production_server):
    page_headers, login_headers = admin_login(production_server)
    assert "secure" in page_headers["set-cookie"].lower()
    set_cookie = login_headers["set-cookie"].lower()
    assert "sessionid=" in set_cookie and "secure" in set_cookie and "httponly" in set_cookie


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_session_from_the_admin_login_is_accepted_by_the_api(production_server):
    session = _cookie(admin_login(production_server, "view_job")[1], "sessionid")
    status, _, body = production_server.request(
        "GET", "/api/jobs/stats/", headers={"Cookie": f"sessionid={session}"}
    )
    assert status == 200, body


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_staff_without_job_permissions_is_refused_by_the_api_as_by_the_admin(production_server):
    session = _cookie(admin_login(production_server)[1], "sessionid")
    cookie = {"Cookie": f"sessionid={session}"}
    assert production_server.request("GET", "/admin/jobs/job/", headers=cookie)[0] == 403
    assert production_server.request("GET", "/api/jobs/", headers=cookie)[0] == 403


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_session_does_not_excuse_an_api_write_from_csrf_protection(production_server):
    session = _cookie(admin_login(production_server, "add_job")[1], "sessionid")
    status, _, body = production_server.request(
        "POST",
        "/api/jobs/",
        body=json.dumps({"type": "demo.success"}).encode(),
        headers={"Cookie": f"sessionid={session}"},
    )
    assert status == 403 and b"CSRF" in body
    assert not Job.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_plain_http_is_redirected_to_https(production_server):
    status, headers, _ = production_server.request("GET", "/api/jobs/", https=False)
    assert status == 301
    assert headers["location"].startswith("https://")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_health_probes_over_plain_http_are_not_redirected(production_server):
    # Probes inside the network speak plain HTTP.
    assert production_server.request("GET", "/api/health/", https=False)[0] == 200


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_hsts_asks_for_a_year_with_subdomains_and_preload(production_server):
    _, headers, _ = production_server.request("GET", "/api/health/")
    assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"


PREFLIGHT = {
    "Access-Control-Request-Method": "GET",
    "Access-Control-Request-Headers": "authorization",
}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cors_allows_the_configured_dashboard_origin_only(production_server):
    _, allowed, _ = production_server.request(
        "OPTIONS", "/api/jobs/", headers={"Origin": DASHBOARD_ORIGIN, **PREFLIGHT}
    )
    assert allowed.get("access-control-allow-origin") == DASHBOARD_ORIGIN
    _, refused, _ = production_server.request(
        "OPTIONS", "/api/jobs/", headers={"Origin": "https://evil.example", **PREFLIGHT}
    )
    assert "access-control-allow-origin" not in refused


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_debug_toolbar_stays_off_in_production_even_when_enabled(production_server):
    assert production_server.request("GET", "/__debug__/render_panel/")[0] == 404
    _, _, page = production_server.request("GET", "/admin/login/")
    assert b"djdt" not in page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_production_api_answers_json_even_to_a_browser(production_server, api_token):
    _, headers, _ = production_server.request(
        "GET", "/api/jobs/", token=api_token, headers={"Accept": "text/html"}
    )
    assert headers["content-type"].startswith("application/json")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_production_server_refuses_a_deeply_nested_body_with_400(production_server, api_token):
    status, _, _ = production_server.request(
        "POST", "/api/jobs/", token=api_token, body=b"[" * 200_000
    )
    assert status == 400


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_production_server_refuses_an_announced_terabyte_at_once_and_keeps_serving(
    production_server, api_token
):
    # Nothing of the body is sent: the refusal must not wait for it.
    with socket.create_connection(("127.0.0.1", production_server.port), timeout=10) as sock:
        sock.sendall(
            b"POST /api/jobs/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Proto: https\r\n"
            + f"Authorization: Token {api_token}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 1099511627776\r\n\r\n"
        )
        assert sock.recv(64).startswith(b"HTTP/1.1 413")
    assert production_server.request("GET", "/api/health/")[0] == 200


# --- Inputs that reached a 500: a 400 naming the field, in every server mode --------------


# More than Python converts to an integer (4,300 digits): the id lookup raised ValueError.
HUGE_CURSOR = feed_with_cursor_position("9" * 5_000)

# gunicorn answers 414 itself to a request line over 4,094 bytes, before Django sees it: a
# 5,000-digit position cannot reach it there, 2,900 digits (3,900 bytes) are the most that can.
GUNICORN_HUGE_CURSOR = feed_with_cursor_position("9" * 2_900)

SERVER_MODES = [
    ("runserver", True),
    ("runserver", False),
    ("gunicorn", True),
    ("gunicorn", False),
]


@pytest.fixture(
    scope="module",
    params=SERVER_MODES,
    ids=[f"{server}-{'debug' if debug else 'production'}" for server, debug in SERVER_MODES],
)
def server_mode(request, django_db_setup, django_db_blocker, tmp_path_factory):
    """The API in each server mode on this run's test database: ``runserver`` and gunicorn,
    each with ``DEBUG=true`` (the Debug Toolbar on, as it is by default) and ``DEBUG=false``."""
    server, debug = request.param
    with django_db_blocker.unblock():
        env = child_env(ENABLE_DJANGO_DEBUG_TOOLBAR="true") if debug else production_child_env()
    log = tmp_path_factory.mktemp("server-mode") / f"{server}.log"
    with serve_api(log, env, server=server) as api:
        yield server, api


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("bad_input", "field"),
    [("cursor", "cursor"), ("parameters", "query")],
    ids=["huge-cursor", "2000-parameters"],
)
def test_hostile_queries_are_a_json_400_naming_the_field_in_every_server_mode(
    server_mode, bad_input, field
):
    server, api = server_mode
    token = Token.objects.create(user=user_with("view_job")).key
    if bad_input == "cursor":
        path = GUNICORN_HUGE_CURSOR if server == "gunicorn" else HUGE_CURSOR
    else:
        path = TOO_MANY_PARAMETERS
    status, headers, body = api.request("GET", path, token=token)
    assert status == 400, body[:300]
    assert headers["content-type"] == "application/json", headers
    assert list(json.loads(body)) == [field]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_too_many_query_parameters_on_a_page_outside_the_api_are_a_400_in_every_server_mode(
    server_mode,
):
    _, api = server_mode
    status, headers, body = api.request("GET", "/admin/login/?" + "&".join(["a"] * 2_000))
    assert status == 400, body[:300]
    assert headers["content-type"].startswith("text/plain"), headers
    assert body.startswith(b"Query parameter query: Too many query parameters")


# --- A database outage: JSON 503 from every endpoint ------------------------------------------


@pytest.mark.slow
def test_every_endpoint_answers_json_503_while_the_database_is_down(private_postgres, tmp_path):
    private_postgres.migrate(child_env())
    make_token = (
        "from django.contrib.auth import get_user_model;"
        "from rest_framework.authtoken.models import Token;"
        "user = get_user_model().objects.create_superuser('ops', password='x');"
        "print(Token.objects.create(user=user).key)"
    )
    created = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", make_token],
        cwd=BACKEND_DIR,
        env=child_env(**private_postgres.env()),
        capture_output=True,
        text=True,
        timeout=60,
    )
    token = created.stdout.strip().splitlines()[-1]
    env = production_child_env(**private_postgres.env())
    with serve_api(tmp_path / "gunicorn.log", env) as server:
        assert server.request("GET", "/api/jobs/", token=token)[0] == 200
        browser = Session(
            server, "", _cookie(server.request("GET", "/api/auth/session/")[1], "csrftoken")
        )
        private_postgres.pg_ctl("-m", "fast", "-w", "stop")
        for method, template, _ in ROUTES:
            if template in ("/api/auth/logout/", "/api/"):
                # Without a session there is nothing to end (204); the index lists URLs:
                # neither reads the database.
                continue
            path = template.format(id=uuid.uuid4(), name="hourly")
            body = (
                {"type": "demo.success", "ids": [str(uuid.uuid4())]} if method == "POST" else None
            )
            if template == "/api/jobs/":
                body = {"type": "demo.success"}
            if template == "/api/auth/login/":  # the password check reads the users table
                login = {"username": "ops", "password": "x"}
                status, headers, answer = browser.request(method, path, body=login)
            else:
                status, headers, answer = server.request(method, path, token=token, body=body)
            assert status == 503, (method, path, status, answer[:300])
            assert headers["content-type"].startswith("application/json"), (path, headers)
            assert json.loads(answer)["detail"], path
