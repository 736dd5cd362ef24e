"""JSON answers where Django would answer in HTML: a path under the API that no view
serves, a CSRF failure, a server error.
"""

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, ResolverMatch, resolve
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import server_error as django_server_error

from ...middleware import is_api_request


@csrf_exempt  # it writes nothing; without this an unsafe method got Django's HTML 403
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    """Any path under the API's prefix that names no endpoint: a JSON 404 for every method
    (the last pattern of ``jobs.urls``, so it answers under whatever prefix the project
    chose).

    A known path without its trailing slash is redirected for GET and HEAD (as
    ``APPEND_SLASH`` would); other methods cannot follow a redirect with their body, so
    they get the 404 with the right path named.
    """
    path = request.path
    if not path.endswith("/"):
        match = _resolve(path + "/")
        if match is not None and match.func is not api_not_found:
            if request.method in ("GET", "HEAD"):
                return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
            return JsonResponse({"detail": f"Not found. Did you mean {path}/ ?"}, status=404)
    return JsonResponse({"detail": "Not found."}, status=404)


def _resolve(path: str) -> ResolverMatch | None:
    try:
        return resolve(path)
    except Resolver404:
        return None


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: JSON for the API (``is_api_request``), Django's page
    elsewhere."""
    if is_api_request(request):
        return JsonResponse({"detail": f"CSRF Failed: {reason}"}, status=403)
    return django_csrf_failure(request, reason)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: an unexpected error of the API (``is_api_request``) is JSON like the
    rest of the API; Django's page elsewhere."""
    if is_api_request(request):
        return JsonResponse({"detail": "Internal server error."}, status=500)
    return django_server_error(request)
