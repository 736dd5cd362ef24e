"""Who may do what: Django's model permissions on ``Job``, the ones the admin uses, for
tokens and sessions alike.

* reading anything (jobs, events, stats, config): ``jobs.view_job``;
* creating a job: ``jobs.add_job``;
* retrying and cancelling, one job or in bulk: ``jobs.change_job``.

``has_job_perms`` answers the question for a user in one query (the driver's
``held_permissions``) or none; the REST API's permission class
(``jobs.api.permissions.JobModelPermissions``) asks it. Plain Django: no REST framework
here. ``manage.py create_job_roles`` makes the "Job viewers" and "Job operators" groups
that hold these permissions.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

from django.contrib.auth import get_backends
from django.contrib.auth.backends import ModelBackend

from .drivers import get_driver

VIEW = "jobs.view_job"
ADD = "jobs.add_job"
CHANGE = "jobs.change_job"
APP_LABEL = "jobs"

# The user attribute remember_job_perms fills.
_HELD_JOB_PERMS = "_held_job_perms"


_PERMISSION_METHODS = ("has_perm", "get_all_permissions", "get_user_permissions")


@cache
def _model_backend_only() -> bool:
    """Whether every configured backend decides permissions as ModelBackend does."""
    return all(
        isinstance(backend, ModelBackend)
        and all(
            getattr(type(backend), name) is getattr(ModelBackend, name)
            for name in (*_PERMISSION_METHODS, "get_group_permissions")
        )
        for backend in get_backends()
    )


def has_job_perms(user: Any, perms: list[str]) -> bool:
    """``user.has_perms(perms)`` for the jobs app's permissions in one query, or none.

    ModelBackend loads every permission of the user and then of their groups (two
    queries) to answer one API request's one question; this asks for exactly the
    permissions needed, directly or through a group, with the same rules (inactive:
    none, superuser: all). A user read by token authentication comes with the jobs
    permissions they hold (``remember_job_perms``), which answer without a query. Any
    other authentication backend gets Django's own check.
    """
    if not _model_backend_only() or hasattr(user, "_perm_cache"):
        return bool(user.has_perms(perms))
    if not user.is_active:
        return False
    if user.is_superuser:
        return True
    wanted = {perm.split(".", 1)[1] for perm in perms if perm.startswith("jobs.")}
    if len(wanted) != len(perms):
        return bool(user.has_perms(perms))
    held: frozenset[str] | None = getattr(user, _HELD_JOB_PERMS, None)
    if held is None:
        held = get_driver().held_permissions(
            user_pk=user.pk, app_label=APP_LABEL, codenames=sorted(wanted)
        )
    return wanted <= held


def remember_job_perms(user: Any, codenames: Iterable[str]) -> None:
    """Record on a user just read which of the jobs app's permissions they hold (the
    codenames the driver's ``token_user`` reads with the user), for ``has_job_perms`` to
    answer from. Valid for the request that read the user, as Django's own permission cache is."""
    setattr(user, _HELD_JOB_PERMS, frozenset(codenames))
