"""``manage.py create_job_roles``: the two operator groups the API's permissions expect."""

from typing import Any

from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand

# Group name -> the jobs.Job permissions it holds (see jobs/permissions.py).
ROLES: dict[str, tuple[str, ...]] = {
    "Job viewers": ("view_job",),
    "Job operators": ("view_job", "add_job", "change_job"),
}


class Command(BaseCommand):
    help = (
        'Create or update the groups "Job viewers" (read jobs, events and stats) and '
        '"Job operators" (also create, retry and cancel jobs). Add users to them in the '
        "admin. Safe to run again: each group ends with exactly its permissions."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        for name, codenames in ROLES.items():
            group, created = Group.objects.get_or_create(name=name)
            permissions = Permission.objects.filter(
                content_type__app_label="jobs",
                content_type__model="job",
                codename__in=codenames,
            )
            group.permissions.set(permissions)
            verb = "Created" if created else "Updated"
            self.stdout.write(f"{verb} group {name!r}: {', '.join(sorted(codenames))}")
