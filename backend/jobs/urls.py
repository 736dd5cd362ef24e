"""The app's URLconf: ``path("<any prefix>/", include("jobs.urls"))`` serves the REST API
there, and any other path under that prefix is the API's JSON 404.

Needs the ``api`` extra (see ``jobs.api``).
"""

from .api.urls import urlpatterns

__all__ = ["urlpatterns"]
