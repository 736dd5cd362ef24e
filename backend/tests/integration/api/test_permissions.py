"""jobs.permissions.has_job_perms answers as Django's ModelBackend does, in one query."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType

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


def test_other_users_grants_and_other_apps_codenames_do_not_count(user):
    other = get_user_model().objects.create_user("perm-other", password="x")
    other.user_permissions.set(_permissions("view_job"))
    group = Group.objects.create(name="operators")
    group.permissions.set(_permissions("change_job"))
    other.groups.add(group)
    # Same codename, another app: ModelBackend would call it "auth.add_job".
    foreign = Permission.objects.create(
        codename="add_job",
        name="Can add job (auth)",
        content_type=ContentType.objects.get(app_label="auth", model="user"),
    )
    user.user_permissions.add(foreign)
    for asked in ([VIEW], [CHANGE], [ADD]):
        assert _fresh(user).has_perms(asked) is False
        assert has_job_perms(_fresh(user), asked) is False
    assert has_job_perms(_fresh(other), [VIEW, CHANGE]) is True
