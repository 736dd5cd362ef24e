"""The settler's idle cost stays bounded with 100,000 jobs waiting on an unfinished parent.

The waiting jobs are created at one time, as a bulk create stamps them, and written with one
``INSERT … SELECT`` (creating them through the services would take most of a minute; these
tests read what a pass reads, not transitions). A pass's window statements are captured and
executed again under ``EXPLAIN (ANALYZE, BUFFERS)``: each must read its window's rows from
``job_waiting_idx``, starting at its cursor, never the run of jobs around it.
"""

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from jobs.drivers import get_driver
from jobs.worker.maintenance import dependencies
from tests.factories import jobs_waiting_on_a_held_parent
from tests.helpers import plan_nodes

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

WAITING = 100_000
BATCH = 100


@pytest.fixture
def held_waiting_jobs() -> None:
    """WAITING jobs, all created at one time, waiting on a parent due tomorrow."""
    jobs_waiting_on_a_held_parent(WAITING)


def executed_plan(sql: str) -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
        plan = cursor.fetchone()[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def window_reads(passes: int) -> list[str]:
    """The reads of job_waiting_idx of ``passes`` idle passes (every statement that orders
    waiting jobs by creation, but the decision over a window's jobs, read by their ids)."""
    settler = dependencies.DependencySettler(batch_size=BATCH)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(passes):
            assert settler.run_once() == (0, 0)
            assert settler.windows == 1
    return [
        query["sql"]
        for query in queries.captured_queries
        if "ORDER BY" in query["sql"]
        and "'waiting'" in query["sql"]
        and "EXISTS" not in query["sql"]
    ]


def test_an_idle_pass_is_one_window_of_two_reads_beside_100000_waiting(held_waiting_jobs):
    with CaptureQueriesContext(connection) as queries:
        assert window_reads(passes=3)
    statements = [query["sql"] for query in queries.captured_queries]
    assert len(statements) == 3 * 2, statements
    assert not [sql for sql in statements if "FOR UPDATE" in sql]


def test_each_window_reads_only_its_rows_inside_a_run_created_at_one_time(held_waiting_jobs):
    window = BATCH * dependencies.WINDOWS_PER_PASS
    # The later passes' windows start from a cursor in the middle of the run.
    reads = window_reads(passes=3)[2:]
    assert reads
    for sql in reads:
        plan = executed_plan(sql)
        waiting = [node for node in plan_nodes(plan) if node.get("Index Name") == "job_waiting_idx"]
        assert len(waiting) == 1, plan
        # A range from the cursor, not a walk from the oldest waiting job.
        assert "Index Cond" in waiting[0], plan
        assert waiting[0]["Actual Rows"] <= window, plan
        # What is sorted is the window's jobs, never the run around it.
        sorts = [node for node in plan_nodes(plan) if "Sort" in node["Node Type"]]
        assert all(node["Actual Rows"] <= window for node in sorts), plan


def test_a_window_checks_the_parents_of_its_own_jobs_only_before_any_analyze():
    """A workflow's enqueue leaves thousands of waiting jobs the planner has no statistics
    for: the window's decision still looks at the window's jobs, not at every waiting one
    (with the window as a subquery it checked the parents of all 10,000)."""
    jobs_waiting_on_a_held_parent(10_000, analyze=False)
    with CaptureQueriesContext(connection) as queries:
        settleable, _ = get_driver().find_settleable_jobs(limit=BATCH)
    assert settleable == []
    (decision,) = [query["sql"] for query in queries.captured_queries if "EXISTS" in query["sql"]]
    plan = executed_plan(decision)
    edges_read = [
        node["Actual Loops"]
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "jobs_jobdependency"
    ]
    assert edges_read, plan
    assert max(edges_read) <= BATCH, plan


def test_a_window_s_decision_reads_its_jobs_by_id_beside_100000_waiting(held_waiting_jobs):
    with CaptureQueriesContext(connection) as queries:
        get_driver().find_settleable_jobs(limit=BATCH)
    (decision,) = [query["sql"] for query in queries.captured_queries if "EXISTS" in query["sql"]]
    plan = executed_plan(decision)
    jobs_read = [node for node in plan_nodes(plan) if node.get("Relation Name") == "jobs_job"]
    assert all(node["Actual Rows"] * node["Actual Loops"] <= BATCH for node in jobs_read), plan
