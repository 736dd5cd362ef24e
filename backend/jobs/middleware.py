"""Request checks that must hold for every view, the API's and the admin's alike, and how a
request is known to be the API's wherever the project mounted it."""

from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    JsonResponse,
    QueryDict,
)
from django.urls import Resolver404, get_resolver

from .storable import field_problems

API_PACKAGE = "jobs.api"


def is_api_request(request: HttpRequest) -> bool:
    """Whether ``request`` is for the REST API, under whatever prefix the project included
    ``jobs.urls``: its path resolves to a view of ``jobs.api`` (the API's JSON 404 for an
    unknown path under the prefix included), or to another Django REST framework view of
    the project (its schema and docs pages). Decided by the URLconf, not by the path's
    spelling; no REST framework import."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = get_resolver(getattr(request, "urlconf", None)).resolve(request.path_info)
        except Resolver404:
            return False
    return _is_api_view(match.func)


def _is_api_view(view: Any) -> bool:
    module = getattr(view, "__module__", None) or ""
    if module == API_PACKAGE or module.startswith(API_PACKAGE + "."):
        return True
    view_class = getattr(view, "view_class", None)  # set by as_view(), DRF's included
    return isinstance(view_class, type) and any(
        klass.__module__.startswith("rest_framework.") for klass in view_class.__mro__
    )


def _query_fields(request: HttpRequest) -> Iterator[tuple[str, str]]:
    for name, values in request.GET.lists():
        for value in values:
            yield name, value


class RefuseUnstorableQueryMiddleware:
    """A query parameter (name or value) with NUL or a lone surrogate is a 400.

    The database refuses such text, so a filter built from it (the API's ``?type=``, the
    admin's ``?status__exact=`` or search ``?q=``) would be a 500; no view is reached.
    For the API (``is_api_request``) the answer is its JSON error shape, naming the
    parameter.

    So is a query string of more than ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` parameters (under
    ``query``): Django refuses to parse it, and with ``DEBUG=true`` its error page, which
    shows the parameters, failed the same way and answered 500. The refused request's
    ``GET`` is then left empty, so nothing that reads it after the 400 (the Debug
    Toolbar's request panel, outside this middleware) parses the query string again and
    turns the 400 into a 500.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            problems = field_problems(_query_fields(request))
        except TooManyFieldsSent:
            most = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
            problems = {"query": [f"Too many query parameters: at most {most} are accepted."]}
            request.GET = QueryDict()
        if not problems:
            return self.get_response(request)
        if is_api_request(request):
            return JsonResponse(problems, status=400)
        first = next(iter(problems.items()))
        return HttpResponseBadRequest(
            f"Query parameter {first[0]}: {first[1][0]}", content_type="text/plain"
        )
