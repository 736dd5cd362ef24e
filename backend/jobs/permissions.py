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

from typing import Any

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
            return bool(user.has_perm(needed))
        return bool(user.has_perms(self.get_required_permissions(request.method or "", Job)))
