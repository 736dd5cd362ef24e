"""Worker presence: one row per live worker process, written by its
maintenance thread every half heartbeat interval and deleted on a clean stop, so the
workers page lists idle processes and drops dead ones within one interval. An extension
of the spec's "no worker table"; no job's state is read from it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0006_job_metadata'),
    ]

    operations = [
        migrations.CreateModel(
            name='WorkerPresence',
            fields=[
                ('worker_id', models.CharField(max_length=255, primary_key=True, serialize=False)),
                ('hostname', models.CharField(max_length=255)),
                ('pid', models.IntegerField()),
                ('queues', models.JSONField(default=list)),
                ('threads_configured', models.IntegerField()),
                ('threads', models.JSONField(default=list)),
                ('heartbeat_interval_seconds', models.FloatField()),
                ('started_at', models.DateTimeField()),
                ('last_seen_at', models.DateTimeField()),
            ],
            options={
                'indexes': [models.Index(fields=['last_seen_at'], name='worker_presence_seen_idx')],
            },
        ),
    ]
