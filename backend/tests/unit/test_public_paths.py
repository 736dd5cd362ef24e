"""The import paths the READMEs document keep working, wherever the code lives now."""

import pytest
from django.utils.module_loading import import_string

DOCUMENTED = {
    "jobs.backends.JobQueueBackend": "jobs.backends.JobQueueBackend",
    "jobs.handlers.register": "jobs.registry.register",
    "jobs.handlers.JobContext": "jobs.worker.context.JobContext",
    "jobs.handlers.JobCancelled": "jobs.worker.context.JobCancelled",
    "jobs.handlers.JobTimedOut": "jobs.worker.context.JobTimedOut",
    "jobs.handlers.LeaseLost": "jobs.worker.context.LeaseLost",
    "jobs.signals.attempt_started": "jobs.signals.attempt_started",
    "jobs.conf.app_settings": "jobs.conf.app_settings",
    "jobs.permissions.has_job_perms": "jobs.permissions.has_job_perms",
    "jobs.throttling.ThrottledTokenAuthentication": (
        "jobs.api.throttling.ThrottledTokenAuthentication"
    ),
    "jobs.throttling.ThrottledModelBackend": "jobs.api.throttling.ThrottledModelBackend",
    "jobs.drivers.sql.plpgsql_function": "jobs.drivers.sql.plpgsql_function",
    "jobs.drivers.postgres.behind_pooler": "jobs.drivers.postgres.behind_pooler",
    "jobs.worker.WorkerConfig": "jobs.worker.config.WorkerConfig",
    "jobs.worker.WorkerRunner": "jobs.worker.runner.WorkerRunner",
    "jobs.worker.make_worker_id": "jobs.worker_ids.make_worker_id",
    "jobs.urls.urlpatterns": "jobs.api.urls.urlpatterns",
}


@pytest.mark.parametrize(("documented", "home"), DOCUMENTED.items())
def test_a_documented_path_names_the_object_at_its_home(documented, home):
    assert import_string(documented) is import_string(home)


def test_interruptions_are_recorded_under_their_documented_path():
    """The worker stores an exception's class path in the event (TaskResult.errors)."""
    from jobs.handlers import JobCancelled

    assert f"{JobCancelled.__module__}.{JobCancelled.__qualname__}" == "jobs.handlers.JobCancelled"
