from importlib import import_module

from django.apps import AppConfig
from django.contrib.auth.signals import user_login_failed
from django.core.signals import setting_changed
from django.db.backends.signals import connection_created
from django.utils.module_loading import autodiscover_modules

from .extras import installed
from .signals import attempt_finished, attempt_started


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
        # Django's task signals follow the worker's attempt signals (the django.tasks
        # backend's receivers), and a changed TASKS setting drops the backend classes the
        # backend remembers.
        from .backends import forget_senders, on_attempt_finished, on_attempt_started

        setting_changed.connect(forget_senders, dispatch_uid="jobs.backends.forget_senders")
        attempt_started.connect(on_attempt_started, dispatch_uid="jobs.backends.attempt_started")
        attempt_finished.connect(on_attempt_finished, dispatch_uid="jobs.backends.attempt_finished")
        # Projects add their own handler modules through JOB_HANDLER_MODULES so the API and
        # the worker see the same types (the demo ones are the jobs.demo app's).
        for module in app_settings.JOB_HANDLER_MODULES:
            import_module(module)
        # A django.tasks task registers itself when it is defined: importing every app's
        # `tasks` module (as the admin does with `admin`) gives the API and every worker
        # the same tasks without a setting.
        autodiscover_modules("tasks")
