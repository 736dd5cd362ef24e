"""Who may do what through the API: Django's model permissions on ``Job``, the ones the
admin uses, for tokens and sessions alike.

* reading anything (jobs, events, stats, config): ``jobs.view_job``;
* creating a job: ``jobs.add_job``;
* retrying and cancelling, one job or in bulk: ``jobs.change_job``.

Production (``DEBUG=false``) sets ``JobModelPermissions`` as DRF's default permission
class; the local demo is open (``AllowAny``). ``manage.py create_job_roles`` makes the
"Job viewers" and "Job operators" groups that hold these permissions.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.contrib.auth import get_backends
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Permission
from django.db.models import Q
from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request

from .models import Job

VIEW = "jobs.view_job"
ADD = "jobs.add_job"
CHANGE = "jobs.change_job"


class JobModelPermissions(DjangoModelPermissions):
    """``DjangoModelPermissions`` on ``Job`` for every view, with two differences:

    * reads need ``view_job`` (DRF's map asks nothing for GET);
    * a view may name the permission its POST needs (``job_permission = CHANGE`` for
      retry and cancel, which change jobs rather than add them).

    Anonymous requests are refused (401 with the authenticate header); authenticated ones
    without the permission get 403.
    """

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": [VIEW],
        "HEAD": [VIEW],
        "OPTIONS": [VIEW],
    }

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not getattr(user, "is_authenticated", False):  # None or AnonymousUser
            return False
        needed = getattr(view, "job_permission", None)
        if needed is not None and request.method == "POST":
            return has_job_perms(user, [needed])
        return has_job_perms(user, self.get_required_permissions(request.method or "", Job))


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
    """``user.has_perms(perms)`` for the jobs app's permissions in one query.

    ModelBackend loads every permission of the user and then of their groups (two
    queries) to answer one API request's one question; this asks for exactly the
    permissions needed, directly or through a group, with the same rules (inactive:
    none, superuser: all). Any other authentication backend gets Django's own check.
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
    held = set(
        Permission.objects.filter(content_type__app_label="jobs", codename__in=wanted)
        .filter(Q(user=user) | Q(group__user=user))
        .values_list("codename", flat=True)
    )
    return held == wanted
