from importlib import import_module

from django.apps import AppConfig


class JobsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "jobs"
    verbose_name = "Job queue"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the settings checks)
        from .conf import app_settings

        # The demo handlers register themselves on import; projects add their own handler
        # modules through JOB_HANDLER_MODULES so the API and the worker see the same types.
        import_module("jobs.handlers")
        for module in app_settings.JOB_HANDLER_MODULES:
            import_module(module)
