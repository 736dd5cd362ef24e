"""jobs.permissions.has_job_perms answers as Django's ModelBackend does, in one query."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from jobs.permissions import ADD, CHANGE, VIEW, has_job_perms

pytestmark = pytest.mark.django_db


def _permissions(*codenames):
    return Permission.objects.filter(content_type__app_label="jobs", codename__in=codenames)


def _fresh(user):
    # A new instance: no permission cache from an earlier check.
    return get_user_model().objects.get(pk=user.pk)


@pytest.fixture
def user():
    return get_user_model().objects.create_user("perm-user", password="x")


@pytest.mark.parametrize(
    ("direct", "grouped", "asked", "expected"),
    [
        ((), (), [VIEW], False),
        (("view_job",), (), [VIEW], True),
        ((), ("add_job",), [ADD], True),
        (("view_job",), ("add_job",), [VIEW, ADD], True),
        (("view_job",), (), [VIEW, CHANGE], False),
    ],
)
def test_direct_and_group_permissions_count_as_for_django(
    user, direct, grouped, asked, expected, django_assert_num_queries
):
    user.user_permissions.set(_permissions(*direct))
    group = Group.objects.create(name="g")
    group.permissions.set(_permissions(*grouped))
    user.groups.add(group)
    assert _fresh(user).has_perms(asked) is expected
    fresh = _fresh(user)
    with django_assert_num_queries(1):
        assert has_job_perms(fresh, asked) is expected


def test_inactive_users_have_none_and_superusers_all(user, django_assert_num_queries):
    user.user_permissions.set(_permissions("view_job"))
    user.is_active = False
    user.save()
    inactive = _fresh(user)
    with django_assert_num_queries(0):
        assert has_job_perms(inactive, [VIEW]) is False
    admin = _fresh(get_user_model().objects.create_superuser("perm-admin", password="x"))
    with django_assert_num_queries(0):
        assert has_job_perms(admin, [VIEW, ADD, CHANGE]) is True
