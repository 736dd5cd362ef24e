from importlib import import_module

from django.apps import AppConfig
from django.contrib.auth.signals import user_login_failed
from django.db.backends.signals import connection_created
from django.utils.module_loading import autodiscover_modules

from .extras import installed


class JobsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "jobs"
    verbose_name = "Job queue"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the settings checks)
        from .conf import app_settings

        if installed("api"):
            # The API's password backend refuses an address past its failed logins; this
            # counts them (the admin's login too). Without the api extra there is neither.
            from .api.throttling import record_login_failure

            user_login_failed.connect(
                record_login_failure, dispatch_uid="jobs.record_login_failure"
            )

        # Every PostgreSQL connection's statements under the client-side deadline.
        from .drivers.deadline import watch_connection

        connection_created.connect(watch_connection, dispatch_uid="jobs.watch_connection")
        # Connects Django's task signals to the worker's attempt signals.
        import_module("jobs.backends")
        # Projects add their own handler modules through JOB_HANDLER_MODULES so the API and
        # the worker see the same types (the demo ones are the jobs.demo app's).
        for module in app_settings.JOB_HANDLER_MODULES:
            import_module(module)
        # A django.tasks task registers itself when it is defined: importing every app's
        # `tasks` module (as the admin does with `admin`) gives the API and every worker
        # the same tasks without a setting.
        autodiscover_modules("tasks")
