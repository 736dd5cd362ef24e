"""jobs_complete_and_claim runs without incremental sorts (issue 25).

A claim's candidates (the first due jobs of one priority, in claim order) could otherwise
be read from jobs_job_available_at_idx, sorted level by level as read: when jobs arrive
over time that index follows the table's order, the planner costs it below
job_claim_idx's random reads, and it walks every finished job on every claim. A worker's
direct connections turn incremental sorts off for their session
(``jobs.drivers.postgres.WORKER_SESSION_SETTINGS``); behind a transaction pooler, where a
session setting would outlive the client, the hot statement runs in this function, which
now carries the setting itself (in force while it runs, then restored). The function's
body is unchanged. PostgreSQL only; reversible.
"""

from django.db import migrations

SIGNATURE = (
    "jobs_complete_and_claim(uuid, integer, text, text, text, text, text, "
    "timestamp with time zone, text, text, timestamp with time zone, boolean)"
)
SET = f"ALTER FUNCTION {SIGNATURE} SET enable_incremental_sort = off"
RESET = f"ALTER FUNCTION {SIGNATURE} RESET enable_incremental_sort"


def _on_postgres(statement):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0011_released_activity"),
    ]

    operations = [
        migrations.RunPython(_on_postgres(SET), _on_postgres(RESET), elidable=False),
    ]
