"""The activity index holds the released events too: the job types page counts
the claims given back unstarted, read with the claims and attempt endings through
job_event_activity_idx. The index is rebuilt with the new condition; nothing else changes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0010_released_event"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="jobevent",
            name="job_event_activity_idx",
        ),
        migrations.AddIndex(
            model_name="jobevent",
            index=models.Index(
                condition=models.Q(
                    (
                        "type__in",
                        [
                            "claimed",
                            "succeeded",
                            "retry_scheduled",
                            "failed",
                            "timeout_requeued",
                            "cancelled",
                            "released",
                        ],
                    )
                ),
                fields=["created_at"],
                include=("job_type", "type", "worker_id"),
                name="job_event_activity_idx",
            ),
        ),
    ]
