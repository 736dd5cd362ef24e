"""The released event: a claimed attempt whose handler never started, given back
at a worker's graceful shutdown. The event type constraint admits it; nothing else changes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0009_hot_tables"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="jobevent",
            name="job_event_type_valid",
        ),
        migrations.AlterField(
            model_name="jobevent",
            name="type",
            field=models.CharField(
                choices=[
                    ("created", "Created"),
                    ("claimed", "Claimed"),
                    ("progress", "Progress"),
                    ("lease_renewed", "Lease renewed"),
                    ("succeeded", "Succeeded"),
                    ("retry_scheduled", "Retry scheduled"),
                    ("failed", "Failed"),
                    ("timeout_requeued", "Timeout requeued"),
                    ("manual_retry", "Manual retry"),
                    ("cancel_requested", "Cancel requested"),
                    ("cancelled", "Cancelled"),
                    ("released", "Released"),
                ],
                max_length=32,
            ),
        ),
        migrations.AddConstraint(
            model_name="jobevent",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    (
                        "type__in",
                        [
                            "created",
                            "claimed",
                            "progress",
                            "lease_renewed",
                            "succeeded",
                            "retry_scheduled",
                            "failed",
                            "timeout_requeued",
                            "manual_retry",
                            "cancel_requested",
                            "cancelled",
                            "released",
                        ],
                    )
                ),
                name="job_event_type_valid",
            ),
        ),
    ]
