"""The index of jobs by workflow, only where set: built ``CONCURRENTLY`` on PostgreSQL
(``AddIndexOnline`` of 0018), so enqueues and claims go on during the scan of a large jobs
table; hence a migration of its own, non-atomic, apart from 0019's transaction."""

from importlib import import_module

from django.db import migrations, models

_0018 = import_module("jobs.migrations.0018_job_dependencies")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("jobs", "0019_workflows"),
    ]

    operations = [
        _0018.AddIndexOnline(
            model_name="job",
            index=models.Index(
                condition=models.Q(("workflow__isnull", False)),
                fields=["workflow"],
                name="job_workflow_idx",
            ),
        ),
    ]
