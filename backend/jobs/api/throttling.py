"""Rate limits: failed authentications per client address, job creation per user.

Rates come from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (scopes ``auth_failures``
and ``job_create``; ``None`` turns one off). Counts live in Django's default cache, so
with the default per-process cache each gunicorn worker process counts on its own.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle, UserRateThrottle

from ..drivers import get_driver
from ..permissions import APP_LABEL, remember_job_perms

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
        inactive user) from one statement (the driver's ``token_user``), which reads the
        user's jobs permissions too: the request's permission check then needs no
        statement of its own (``jobs.permissions``)."""
        found = get_driver().token_user(self.get_model(), key, app_label=APP_LABEL)
        if found is None:
            raise AuthenticationFailed(_("Invalid token."))
        if not found.user.is_active:
            raise AuthenticationFailed(_("User inactive or deleted."))
        remember_job_perms(found.user, found.codenames)
        return found.user, found.token


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
