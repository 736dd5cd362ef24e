"""The claim stays an index scan however many jobs wait in other queues.

100,000 queued jobs over five queues, written with one ``INSERT … SELECT`` (creating them
through the services would take most of a minute; these tests read plans, not
transitions). The plan is the worker's own statement, ``complete_and_claim`` as the
PostgreSQL driver runs it, executed under ``EXPLAIN (ANALYZE, BUFFERS)`` and rolled back.
"""

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from django.db import connection, transaction
from django.utils import timezone

from jobs import services
from jobs.drivers.postgres import QUERIES
from jobs.models import Job
from tests.factories import inserted_jobs, jobs_waiting_on_a_held_parent
from tests.helpers import plan_nodes

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

QUEUES = ["default", "emails", "reports", "webhooks", "exports"]
JOBS = 100_000


@pytest.fixture
def crowded_queues() -> None:
    """JOBS queued jobs spread evenly over QUEUES; a tenth of them not due for a day, at a
    higher priority, so the claim has future rows in front of the due ones."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {Job._meta.db_table} (id, type, payload, status, priority, attempts,
                max_attempts, available_at, locked_by, locked_until, last_error, result,
                idempotency_key, created_at, updated_at, finished_at, queue,
                timeout_seconds, cancel_requested_at)
            SELECT gen_random_uuid(), 'demo.success', '{{}}', 'queued',
                CASE WHEN n %% 10 = 0 THEN 100 ELSE 50 END, 0, 3,
                now() + CASE WHEN n %% 10 = 0 THEN interval '1 day' ELSE interval '0' END,
                NULL, NULL, '', NULL, NULL, now(), now(), NULL,
                (%s::text[])[1 + n %% %s], NULL, NULL
            FROM generate_series(1, %s) AS n
            """,
            [QUEUES, len(QUEUES), JOBS],
        )
        cursor.execute(f"ANALYZE {Job._meta.db_table}")  # autovacuum is off on the test server


def claim_plan(queue: str) -> dict[str, Any]:
    """The executed plan of one claim from ``queue``, with buffer counts; rolled back."""
    now = timezone.now()
    params = {
        "id": None,
        "attempts": None,
        "result_json": None,
        "completed_message": None,
        "completed_data": None,
        "worker_id": "tests:1:thread-1:0000beef",
        "queue": queue,
        "locked_until": now + timedelta(seconds=30),
        "claimed_message": "Job claimed",
        "claimed_data": "{}",
        "now": now,
        "keys_limited": False,
        "lean": False,
    }
    assert set(params) == QUERIES["complete_and_claim"].params
    with transaction.atomic():
        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + QUERIES["complete_and_claim"].sql,
                params,
            )
            plan = cursor.fetchone()[0]
        transaction.set_rollback(True)
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def test_claiming_from_one_of_several_crowded_queues_reads_only_the_claim_index(
    crowded_queues,
):
    plan = claim_plan("emails")
    job_scans = [
        node
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "jobs_job" and node["Node Type"] != "ModifyTable"
    ]
    assert job_scans, plan
    assert {node["Node Type"] for node in job_scans} <= {"Index Scan", "Index Only Scan"}, plan
    # The row the claim updates is found by its primary key; every read that chooses it
    # goes through job_claim_idx.
    assert {node["Index Name"] for node in job_scans} <= {"job_claim_idx", "jobs_job_pkey"}
    # Claim order comes from the index, never from sorting jobs (the events table may be
    # sorted: the skipped completion half plans a lookup there too).
    job_sorts = [
        node
        for node in plan_nodes(plan)
        if node["Node Type"] == "Sort"
        and any(child.get("Relation Name") == "jobs_job" for child in plan_nodes(node))
    ]
    assert not job_sorts, plan
    # A walk over the queue's 20,000 rows would touch hundreds of pages; a few index
    # probes touch a few dozen.
    buffers = plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
    assert buffers < 200, buffers


def test_a_queue_without_jobs_is_answered_by_the_index_alone(crowded_queues):
    plan = claim_plan("nobody-serves-this")
    buffers = plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
    assert buffers < 20, buffers
    # The per-key limits table holds a handful of rows at most: reading it whole is its
    # cheapest plan (only when the candidate has a concurrency_key). Only reads that ran
    # count: the skipped completion half's event lookup is planned against whatever the
    # events table holds (a table analyzed empty is read whole, rightly), and
    # test_hot_plans owns its plan.
    scanned = [
        node.get("Relation Name")
        for node in plan_nodes(plan)
        if node["Node Type"] == "Seq Scan" and node["Actual Loops"] > 0
    ]
    assert set(scanned) <= {"jobs_concurrencykeylimit"}, plan


def gated_candidate_plan(queue: str) -> dict[str, Any]:
    """The executed plan of the gated claim's candidate statement; rolled back."""
    params = {"queue": queue, "now": timezone.now(), "blocked": ["customer:1"]}
    assert set(params) == QUERIES["gated_candidate"].params
    with transaction.atomic():
        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + QUERIES["gated_candidate"].sql,
                params,
            )
            plan = cursor.fetchone()[0]
        transaction.set_rollback(True)
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def test_claims_stay_index_scans_over_limited_and_unlimited_queues(crowded_queues):
    # 100,000 queued jobs; two queues limited (one paused), three not.
    services.set_queue_limits(
        queue="emails", concurrency_limit=5, rate_limit=100, rate_period_seconds=1
    )
    services.pause_queue(queue="reports")
    for queue in ("webhooks", "emails", "reports"):
        plan = claim_plan(queue)
        job_scans = [
            node
            for node in plan_nodes(plan)
            if node.get("Relation Name") == "jobs_job" and node["Node Type"] != "ModifyTable"
        ]
        assert {node["Node Type"] for node in job_scans} <= {"Index Scan", "Index Only Scan"}
        assert {node["Index Name"] for node in job_scans} <= {"job_claim_idx", "jobs_job_pkey"}
        buffers = plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
        assert buffers < 200, (queue, buffers)
    # The gated claim's own candidate reads the same index, a few probes deep.
    plan = gated_candidate_plan("emails")
    scans = [node for node in plan_nodes(plan) if node.get("Relation Name") == "jobs_job"]
    assert scans and {node["Node Type"] for node in scans} <= {"Index Scan", "Index Only Scan"}
    assert {node["Index Name"] for node in scans} == {"job_claim_idx"}, plan
    assert not [node for node in plan_nodes(plan) if node["Node Type"] == "Sort"], plan
    assert plan["Shared Hit Blocks"] + plan["Shared Read Blocks"] < 200


WAITING = 100_000


def job_reads(plan: dict[str, Any]) -> list[tuple[str, str | None]]:
    """How the plan reads jobs_job: each scan's node type and index, in plan order."""
    return [
        (node["Node Type"], node.get("Index Name"))
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "jobs_job" and node["Node Type"] != "ModifyTable"
    ]


def test_waiting_jobs_leave_the_claim_on_the_same_index_scan():
    inserted_jobs(1_000)
    without = claim_plan("default")
    jobs_waiting_on_a_held_parent(WAITING)
    beside = claim_plan("default")
    assert ("Index Scan", "job_claim_idx") in job_reads(without), without
    assert job_reads(beside) == job_reads(without), beside
    # Waiting rows sit outside job_claim_idx: the claim touches no more pages beside them.
    buffers = {
        name: plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]
        for name, plan in (("without", without), ("beside", beside))
    }
    assert buffers["beside"] <= buffers["without"] + 5, buffers
