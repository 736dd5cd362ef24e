"""The REST API's permission class: Django's model permissions on ``Job`` (the rules in
``jobs.permissions``) for every view.

Production (``DEBUG=false``) sets ``JobModelPermissions`` as DRF's default permission
class; the local demo is open (``AllowAny``).
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import DjangoModelPermissions
from rest_framework.request import Request

from ..models import Job
from ..permissions import ADD, CHANGE, VIEW, has_job_perms

__all__ = ["ADD", "CHANGE", "VIEW", "JobModelPermissions"]


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
