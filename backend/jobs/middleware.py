"""Request checks that must hold for every view, the API's and the admin's alike."""

from collections.abc import Callable, Iterator

from django.conf import settings
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from .storable import field_problems


def _query_fields(request: HttpRequest) -> Iterator[tuple[str, str]]:
    for name, values in request.GET.lists():
        for value in values:
            yield name, value


class RefuseUnstorableQueryMiddleware:
    """A query parameter (name or value) with NUL or a lone surrogate is a 400.

    The database refuses such text, so a filter built from it (the API's ``?type=``, the
    admin's ``?status__exact=`` or search ``?q=``) would be a 500; no view is reached.
    Under ``/api/`` the answer is the API's JSON error shape, naming the parameter.

    So is a query string of more than ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` parameters (under
    ``query``): Django refuses to parse it, and with ``DEBUG=true`` its error page, which
    shows the parameters, failed the same way and answered 500.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            problems = field_problems(_query_fields(request))
        except TooManyFieldsSent:
            most = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
            problems = {"query": [f"Too many query parameters: at most {most} are accepted."]}
        if not problems:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse(problems, status=400)
        first = next(iter(problems.items()))
        return HttpResponseBadRequest(
            f"Query parameter {first[0]}: {first[1][0]}", content_type="text/plain"
        )
