"""A schedule whose pass failed keeps why (``error``), and since when (``error_at``)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0012_claim_index_at_utc"),
    ]

    operations = [
        migrations.AddField(
            model_name="schedulestate",
            name="error",
            field=models.TextField(blank=True, db_default="", default=""),
        ),
        migrations.AddField(
            model_name="schedulestate",
            name="error_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
