"""Where the README's settings found the throttled authentication classes before the REST
API became the ``jobs.api`` package: ``jobs.throttling.ThrottledTokenAuthentication``
(DRF's ``DEFAULT_AUTHENTICATION_CLASSES``) and ``jobs.throttling.ThrottledModelBackend``
(``AUTHENTICATION_BACKENDS``) keep working. Their home is ``jobs.api.throttling``; like
it, this needs the ``api`` extra.
"""

from .api.throttling import ThrottledModelBackend, ThrottledTokenAuthentication

__all__ = ["ThrottledModelBackend", "ThrottledTokenAuthentication"]
