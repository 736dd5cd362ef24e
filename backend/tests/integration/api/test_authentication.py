"""jobs.throttling.ThrottledTokenAuthentication looks a token up as DRF's
TokenAuthentication does, in one statement of its own that also reads the user's jobs
permissions."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token
from rest_framework.exceptions import AuthenticationFailed

from jobs.api.throttling import ThrottledTokenAuthentication
from jobs.permissions import ADD, CHANGE, VIEW, has_job_perms
from tests.factories import user_with

pytestmark = pytest.mark.django_db


def _fields(instance):
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.fields}


def test_a_token_yields_its_own_user_and_itself_as_drf_does(django_assert_num_queries):
    owner = user_with("view_job")
    owner.email, owner.first_name, owner.is_staff = "owner@example.com", "Ada", True
    owner.save()
    Token.objects.create(user=user_with("add_job"))  # another user's token, not this one
    key = Token.objects.create(user=owner).key

    with django_assert_num_queries(1):
        user, token = ThrottledTokenAuthentication().authenticate_credentials(key)
        assert token.user is user  # filled, as select_related fills it
    drf_user, drf_token = TokenAuthentication().authenticate_credentials(key)

    assert _fields(user) == _fields(drf_user) == _fields(get_user_model().objects.get(pk=owner.pk))
    assert _fields(token) == _fields(drf_token)
    assert user.has_perm("jobs.view_job") and not user.has_perm("jobs.add_job")


def test_an_unknown_key_is_refused_as_drf_refuses_it():
    Token.objects.create(user=user_with())
    with pytest.raises(AuthenticationFailed) as drf:
        TokenAuthentication().authenticate_credentials("0" * 40)
    with pytest.raises(AuthenticationFailed) as ours:
        ThrottledTokenAuthentication().authenticate_credentials("0" * 40)
    assert str(ours.value.detail) == str(drf.value.detail) == "Invalid token."


def test_an_inactive_users_token_is_refused_as_drf_refuses_it():
    user = user_with("view_job")
    user.is_active = False
    user.save()
    key = Token.objects.create(user=user).key
    with pytest.raises(AuthenticationFailed) as drf:
        TokenAuthentication().authenticate_credentials(key)
    with pytest.raises(AuthenticationFailed) as ours:
        ThrottledTokenAuthentication().authenticate_credentials(key)
    assert str(ours.value.detail) == str(drf.value.detail) == "User inactive or deleted."


def test_a_tokens_user_comes_with_their_jobs_permissions_checked_without_a_query(
    django_assert_num_queries,
):
    owner = user_with("view_job")
    operators = Group.objects.create(name="operators")
    operators.permissions.set(
        Permission.objects.filter(codename="add_job", content_type__app_label="jobs")
    )
    owner.groups.add(operators)
    # Same codename, another app: not a jobs permission.
    owner.user_permissions.add(
        Permission.objects.create(
            codename="change_job",
            name="Can change job (auth)",
            content_type=ContentType.objects.get(app_label="auth", model="user"),
        )
    )
    user_with("change_job", "delete_job")  # another user's grants
    key = Token.objects.create(user=owner).key

    with django_assert_num_queries(1):
        user, _ = ThrottledTokenAuthentication().authenticate_credentials(key)
    django_user = get_user_model().objects.get(pk=owner.pk)
    for asked in ([VIEW], [ADD], [VIEW, ADD], [CHANGE], [VIEW, CHANGE]):
        with django_assert_num_queries(0):
            ours = has_job_perms(user, asked)
        assert ours is django_user.has_perms(asked), asked
    assert has_job_perms(user, [VIEW, ADD]) and not has_job_perms(user, [CHANGE])


def test_a_tokens_user_without_permissions_is_refused_every_check_without_a_query(
    django_assert_num_queries,
):
    key = Token.objects.create(user=user_with()).key
    user, _ = ThrottledTokenAuthentication().authenticate_credentials(key)
    with django_assert_num_queries(0):
        assert not any(has_job_perms(user, [perm]) for perm in (VIEW, ADD, CHANGE))
