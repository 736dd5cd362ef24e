"""The package's optional parts and the extra that installs each.

``pip install job-queue-backend`` installs Django and the app's core: models, drivers,
services, the worker and the ``django.tasks`` backend. The rest is optional, so a project
that does not use it does not install it; a part whose extra is missing says which extra
to install, at start-up, instead of failing on its first request.

A leaf of the app: it imports nothing else of ``jobs``.
"""

from __future__ import annotations

from importlib.util import find_spec

from django.core.exceptions import ImproperlyConfigured

DISTRIBUTION = "job-queue-backend"

# Extra -> the modules it installs.
EXTRAS: dict[str, tuple[str, ...]] = {
    "postgres": ("psycopg",),
    "api": ("rest_framework", "drf_spectacular"),
    "metrics": ("prometheus_client",),
    "unfold": ("unfold",),
    # A submodule: other opentelemetry-* distributions share the namespace package.
    "otel": ("opentelemetry.trace",),
}


class MissingExtra(ImproperlyConfigured):
    """A part of the app was asked for without the extra that installs it."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    return [module for module in EXTRAS[extra] if not _findable(module)]


def _findable(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:  # a submodule's parent package is not installed either
        return False


def installed(extra: str) -> bool:
    return not missing(extra)


def install_command(extra: str) -> str:
    return f'pip install "{DISTRIBUTION}[{extra}]"'


def require(extra: str, part: str) -> None:
    """Raise ``MissingExtra`` naming ``part``, the modules missing and the command that
    installs them, unless ``extra`` is installed."""
    absent = missing(extra)
    if absent:
        raise MissingExtra(
            f"{part} needs {' and '.join(absent)}, not installed here: {install_command(extra)}"
        )
