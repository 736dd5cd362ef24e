"""The dashboard's sign-in with Django's session: its state, log in, log out."""

from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import answers
from ..serializers.errors import ErrorSerializer
from ..serializers.session import LoginSerializer, SessionSerializer
from ..throttling import AuthFailureThrottle
from .common import BAD_REQUEST, DomainErrorsMixin


class SessionView(DomainErrorsMixin, APIView):
    """Who is signed in; also sets the ``csrftoken`` cookie the dashboard sends back as
    ``X-CSRFToken`` on every POST."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="auth_session", tags=["auth"], responses={200: SessionSerializer})
    def get(self, request: Request) -> Response:
        """The signed-in user (if any) and the job permissions the API grants them."""
        get_token(request._request)
        return Response(SessionSerializer(answers.session_state(request.user)).data)


class LoginView(DomainErrorsMixin, APIView):
    """Sign in with a username and password; the session cookie is set on success.

    CSRF is checked although nobody is signed in yet (login CSRF); a client address past
    its failed-login rate gets 429 without its password being checked.
    """

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="auth_login",
        tags=["auth"],
        request=LoginSerializer,
        responses={
            200: SessionSerializer,
            400: BAD_REQUEST,
            403: OpenApiResponse(ErrorSerializer, description="CSRF check failed."),
            429: OpenApiResponse(ErrorSerializer, description="Too many failed logins."),
        },
    )
    def post(self, request: Request) -> Response:
        SessionAuthentication().enforce_csrf(request)
        credentials = LoginSerializer(data=request.data)
        credentials.is_valid(raise_exception=True)
        throttle = AuthFailureThrottle()
        if throttle.blocked(request):
            raise throttle.refusal()
        # ThrottledModelBackend checks the password; user_login_failed counts a failure.
        user = authenticate(request._request, **credentials.validated_data)
        if user is None:
            raise serializers.ValidationError(
                {"non_field_errors": ["Wrong username or password, or the account is inactive."]}
            )
        login(request._request, user)
        return Response(SessionSerializer(answers.session_state(user)).data)


class LogoutView(DomainErrorsMixin, APIView):
    """End the session (a no-op without one); CSRF-checked like every session write."""

    authentication_classes = [SessionAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(operation_id="auth_logout", tags=["auth"], request=None, responses={204: None})
    def post(self, request: Request) -> Response:
        logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)
