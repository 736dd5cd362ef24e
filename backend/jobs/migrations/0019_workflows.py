"""Workflows: a set of jobs and their dependency edges written in one transaction.

``jobs_workflow`` (id, name, created_at), and two columns appended to ``jobs_job``: the
nullable ``workflow_id`` (indexed only where set, so a job outside a workflow costs no
index entry) and ``ref``, the step's name within it ("" by default). Both are added
without a table rewrite: a nullable column, and a constant default.

``jobs_complete_and_claim`` returns jobs_job's columns, so it is dropped before the columns
are added and created again with them (as migration 0015 did for claimed_at/claimed_by).
"""

from importlib import import_module

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models

_0009 = import_module("jobs.migrations.0009_hot_tables")
_0015 = import_module("jobs.migrations.0015_claimed_by_and_lean_timeline")

_COLUMNS_0015 = "claimed_by character varying(255))"
CREATE = _0015.CREATE.replace(
    _COLUMNS_0015,
    "claimed_by character varying(255), workflow_id uuid, ref character varying(200))",
    1,
)
assert CREATE != _0015.CREATE
DROP = _0015.DROP


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0018_job_dependencies'),
    ]

    operations = [
        migrations.RunPython(_0009._on_postgres(DROP), _0009._on_postgres(_0015.CREATE), elidable=False),
        migrations.CreateModel(
            name='Workflow',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('name', models.CharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'indexes': [models.Index(fields=['created_at'], name='workflow_created_at_idx')],
            },
        ),
        # In the model's order: the table's column order is what JobRow follows.
        migrations.AddField(
            model_name='job',
            name='workflow',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='jobs', to='jobs.workflow'),
        ),
        migrations.AddField(
            model_name='job',
            name='ref',
            field=models.CharField(blank=True, db_default='', default='', max_length=200),
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(condition=models.Q(('workflow__isnull', False)), fields=['workflow'], name='job_workflow_idx'),
        ),
        migrations.RunPython(_0009._on_postgres(CREATE), _0009._on_postgres(DROP), elidable=False),
    ]
