from django.db import migrations, models


class Migration(migrations.Migration):
    """job_waiting_idx on (created_at, id): the settler's window starts after its cursor
    inside a run of jobs created at one time instead of sorting the whole run."""

    dependencies = [
        ("jobs", "0018_job_dependencies"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="job",
            name="job_waiting_idx",
        ),
        migrations.AddIndex(
            model_name="job",
            index=models.Index(
                condition=models.Q(("status", "waiting")),
                fields=["created_at", "id"],
                name="job_waiting_idx",
            ),
        ),
    ]
