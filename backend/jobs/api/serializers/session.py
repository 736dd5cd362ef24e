"""The dashboard's sign-in: the login body and the session's state."""

from typing import Any

from rest_framework import serializers


class LoginSerializer(serializers.Serializer[Any]):
    username = serializers.CharField(max_length=150, trim_whitespace=False)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class JobPermissionsSerializer(serializers.Serializer[dict[str, Any]]):
    view = serializers.BooleanField(help_text="jobs.view_job: read jobs, events and stats.")
    add = serializers.BooleanField(help_text="jobs.add_job: create jobs.")
    change = serializers.BooleanField(help_text="jobs.change_job: retry and cancel jobs.")


class SessionSerializer(serializers.Serializer[dict[str, Any]]):
    login_required = serializers.BooleanField(
        help_text="False on the open local demo (DEBUG=true): the API needs no sign-in."
    )
    authenticated = serializers.BooleanField()
    username = serializers.CharField(allow_null=True)
    permissions = JobPermissionsSerializer(help_text="What this user may do through the API.")
