"""The HTTP layer: the REST API's views, serializers, pagination, parsers, permission and
throttle classes, the mapping of domain errors to HTTP, the answers shaped for HTTP, and
its URLs (``jobs.urls``, which a project includes under any prefix).

The only part of the app that imports Django REST framework and drf-spectacular, which
the ``api`` extra installs: without them, importing this package (or ``jobs.urls``)
raises ``ImproperlyConfigured`` naming the extra, at start-up, since Django's URL checks
import the project's URLconf.
"""

from ..extras import require

require("api", "The jobs REST API (jobs.urls, jobs.api)")
