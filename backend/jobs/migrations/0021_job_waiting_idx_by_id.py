"""job_waiting_idx on (created_at, id): the settler's window starts after its cursor inside
a run of jobs created at one time instead of sorting the whole run. On PostgreSQL the old
index is dropped and the new one built ``CONCURRENTLY`` (the queue keeps writing; between
the two, the settler's reads go without the index for the length of the build)."""

from importlib import import_module

from django.db import migrations, models

_0018 = import_module("jobs.migrations.0018_job_dependencies")


class RemoveIndexOnline(migrations.RemoveIndex):
    """On PostgreSQL ``DROP INDEX CONCURRENTLY``; elsewhere a plain ``RemoveIndex``."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(
                self.name
            )
            schema_editor.remove_index(model, index, concurrently=True)
        return None


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("jobs", "0020_job_workflow_index"),
    ]

    operations = [
        RemoveIndexOnline(
            model_name="job",
            name="job_waiting_idx",
        ),
        _0018.AddIndexOnline(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "waiting")),
                fields=["created_at", "id"],
                name="job_waiting_idx",
            ),
        ),
    ]
