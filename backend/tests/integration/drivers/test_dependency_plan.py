"""Waiting jobs cost the claim nothing: they are outside job_claim_idx (status = 'queued'),
so the claim's plan and the pages it reads stay those of a queue without them.

20,000 waiting jobs in the claimed queue, due and at a higher priority than its queued
ones, written with one ``INSERT … SELECT`` as in ``test_claim_plan.py``.
"""

import pytest
from django.db import connection

from jobs.models import Job
from tests.helpers import plan_nodes
from tests.integration.drivers.test_claim_plan import claim_plan

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WAITING = 20_000


@pytest.fixture
def crowded_with_waiting_jobs() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Job._meta.db_table} (id, type, payload, status, priority, attempts,
                max_attempts, available_at, last_error, created_at, updated_at, queue)
            SELECT gen_random_uuid(), 'demo.success', '{{}}',
                CASE WHEN n <= %s THEN 'waiting' ELSE 'queued' END,
                CASE WHEN n <= %s THEN 100 ELSE 50 END, 0, 3, now() - interval '1 minute',
                '', now(), now(), 'default'
            FROM generate_series(1, %s) AS n
            """,
            [WAITING, WAITING, WAITING + 100],
        )
        cursor.execute(f"ANALYZE {Job._meta.db_table}")


def test_the_claim_reads_only_the_claim_index_past_many_waiting_jobs(crowded_with_waiting_jobs):
    plan = claim_plan("default")
    job_scans = [
        node
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "jobs_job" and node["Node Type"] != "ModifyTable"
    ]
    assert job_scans, plan
    assert {node["Node Type"] for node in job_scans} <= {"Index Scan", "Index Only Scan"}, plan
    assert {node["Index Name"] for node in job_scans} <= {"job_claim_idx", "jobs_job_pkey"}
    # The waiting rows, ahead in priority, are never walked: a few dozen pages, not the
    # hundreds 20,000 rows fill.
    buffers = plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
    assert buffers < 200, buffers
