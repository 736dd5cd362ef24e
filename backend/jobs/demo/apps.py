from importlib import import_module

from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "jobs.demo"
    label = "jobs_demo"
    verbose_name = "Job queue demo handlers"

    def ready(self) -> None:
        # The demo handlers register themselves on import, in every process that loads the
        # app (the API lists them, the workers run them).
        import_module("jobs.demo.handlers")
