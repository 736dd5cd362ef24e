"""Rate limits: failed authentications per client address, job creation per user.

Rates come from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (scopes ``auth_failures``
and ``job_create``; ``None`` turns one off). Counts live in Django's default cache, so
with the default per-process cache each gunicorn worker process counts on its own.
"""

from __future__ import annotations

from functools import cache
from typing import Any, cast

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import Field, ForeignKey, Model
from django.db.models.expressions import Col
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from ..permissions import APP_LABEL, held_job_permissions_join, remember_job_perms

# A view argument the throttles below never read.
_NO_VIEW: Any = None


class _RateFromSettings:
    """The scope's rate as the settings say now (DRF reads it once, at import); a scope
    the project does not configure is not limited."""

    scope: str

    def get_rate(self) -> str | None:
        # Typed by the stubs as numbers; DRF's settings hold rate strings like "10/minute".
        rates: dict[str, Any] = api_settings.DEFAULT_THROTTLE_RATES
        rate: str | None = rates.get(self.scope)
        return rate


class AuthFailureThrottle(_RateFromSettings, SimpleRateThrottle):
    """Failed logins and wrong tokens from one client address (``NUM_PROXIES`` says
    which address that is behind a proxy). Only failures count, but once an address has
    used them up it is refused, right credentials or not, until the window has passed:
    a guesser learns nothing more from it."""

    scope = "auth_failures"
    num_requests: int  # set by SimpleRateThrottle.__init__ from the rate
    duration: int

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def blocked(self, request: Request | HttpRequest) -> bool:
        """True while this client has used up its failures; records nothing."""
        if self.rate is None:
            return False
        self.key = self.get_cache_key(_drf(request), _NO_VIEW)
        self.now = self.timer()
        self.history = [t for t in self.cache.get(self.key, []) if t > self.now - self.duration]
        return len(self.history) >= self.num_requests

    def record_failure(self, request: Request | HttpRequest) -> None:
        self.allow_request(_drf(request), _NO_VIEW)  # counts the failure (nothing once blocked)

    def refusal(self) -> Throttled:
        return Throttled(
            wait=self.wait(), detail="Too many failed authentications from this address."
        )


def _drf(request: Request | HttpRequest) -> Request:
    """DRF's request around a Django one (the password backend gets Django's)."""
    return request if isinstance(request, Request) else Request(request)


class ThrottledTokenAuthentication(TokenAuthentication):
    """DRF's token authentication; a client past its failure rate is refused (429)
    before its token is even looked up, and each wrong token counts as a failure."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        throttle = AuthFailureThrottle()
        if throttle.blocked(request):
            raise throttle.refusal()
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            throttle.record_failure(request)
            raise

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        """DRF's answer (the token's user, and the token; 401 for an unknown key or an
        inactive user) from one statement written once per process."""
        token_model = self.get_model()
        sql, converters, user_fields, token_fields = _token_user_sql(token_model)
        with connection.cursor() as cursor:
            cursor.execute(sql, [APP_LABEL, key])
            rows = cursor.fetchall()  # one per jobs permission the user holds, or one
        if not rows:
            raise AuthenticationFailed(_("Invalid token."))
        values = list(rows[0])
        for index, column, convert in converters:
            values[index] = convert(values[index], column, connection)
        user = get_user_model().from_db(DEFAULT_DB_ALIAS, user_fields, values[: len(user_fields)])
        if not user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        token: Any = token_model.from_db(DEFAULT_DB_ALIAS, token_fields, values[len(user_fields) :])
        token.user = user  # the relation DRF's select_related would have filled
        remember_job_perms(user, (row[-1] for row in rows if row[-1] is not None))
        return user, token


@cache
def _token_user_sql(
    token_model: type[Model],
) -> tuple[str, list[tuple[int, Col, Any]], list[str], list[str]]:
    """The user and the token of one key, and the user's jobs permissions: the statement
    (parameters: the app label and the key; a row per permission held, or one), the
    converters its rows need to read as the ORM reads them (SQLite's booleans are integers
    and its datetimes text; PostgreSQL's need none), and the attribute names of the
    user's and the token's part (the permission's codename comes last).

    DRF asks ``Token.objects.select_related("user").get(key=key)``: compiling that
    queryset on every request cost four times what running this statement does (0.58
    against 0.13 ms of CPU per authentication here). Tables and columns come from the models,
    so a custom user model is read the same way. The permissions come along so that the
    request's permission check needs no statement of its own (``jobs.permissions``).
    """
    user_model = get_user_model()

    def quoted(field: Field[Any, Any]) -> str:
        return connection.ops.quote_name(cast(str, field.column))  # concrete: never None

    def table(model: type[Model]) -> str:
        return connection.ops.quote_name(model._meta.db_table)

    users = list(user_model._meta.concrete_fields)
    tokens = list(token_model._meta.concrete_fields)
    relation = cast("ForeignKey[Any, Any]", token_model._meta.get_field("user"))
    key = cast("Field[Any, Any]", token_model._meta.get_field("key"))
    user_pk = user_model._meta.pk
    selected = [f"u.{quoted(field)}" for field in users] + [f"t.{quoted(f)}" for f in tokens]
    sql = (
        f"SELECT {', '.join(selected)}, p.codename FROM {table(token_model)} AS t"
        f" JOIN {table(user_model)} AS u ON u.{quoted(user_pk)} = t.{quoted(relation)}"
        f"{held_job_permissions_join(f'u.{quoted(user_pk)}')}"
        f" WHERE t.{quoted(key)} = %s"
    )
    # Every connection of the alias has this one's backend and settings.
    columns = [field.get_col("u") for field in users] + [field.get_col("t") for field in tokens]
    converters = [
        (index, column, convert)
        for index, column in enumerate(columns)
        for convert in connection.ops.get_db_converters(column)
        + column.get_db_converters(connection)
    ]
    return sql, converters, [field.attname for field in users], [f.attname for f in tokens]


class ThrottledModelBackend(ModelBackend):
    """Django's password backend, refusing a client past its failure rate without
    checking the password; used by the admin's login and ``/api/auth/login/`` alike.
    Failures are counted by ``record_login_failure`` (the ``user_login_failed`` signal)."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        if request is not None and AuthFailureThrottle().blocked(request):
            raise PermissionDenied("too many failed logins")  # stops every backend
        return super().authenticate(request, username, password, **kwargs)


def record_login_failure(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """``user_login_failed`` receiver: a wrong password counts against the client."""
    if request is not None:
        AuthFailureThrottle().record_failure(request)


class JobCreateThrottle(_RateFromSettings, UserRateThrottle):
    """``POST /api/jobs/`` per user (per address for anonymous clients of the open
    demo); reads are not limited."""

    scope = "job_create"

    def allow_request(self, request: Request, view: Any) -> bool:
        if request.method != "POST":
            return True
        return super().allow_request(request, view)
