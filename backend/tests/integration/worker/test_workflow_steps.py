"""A workflow's next step follows its parent's outcome at once: the worker that recorded the
outcome brings its settler's next pass forward, whatever the settler's cadence."""

import threading
import time
from types import SimpleNamespace

import pytest

from harness import wait_until
from jobs.models import Job
from jobs.worker import WorkerRunner
from jobs.worker.attempts import InFlight
from jobs.worker.maintenance.dependencies import SOON_SECONDS, DependencySettler
from tests.factories import fresh, workflow
from tests.helpers import worker_config

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status

# Longer than any test here runs: only the settler's first pass, at start, and the passes a
# finished member asks for remain.
AN_HOUR = 3600.0


def serving_with_a_slow_settler() -> tuple[WorkerRunner, threading.Thread]:
    runner = WorkerRunner(worker_config(threads=2))
    runner.maintenance.settler.interval_seconds = AN_HOUR
    main = threading.Thread(target=runner.run)
    main.start()
    return runner, main


def test_a_chain_s_next_step_runs_without_waiting_for_the_settler_s_cadence():
    created = workflow(
        {"ref": "a"}, {"ref": "b", "depends_on": ("a",)}, {"ref": "c", "depends_on": ("b",)}
    )
    last = created.jobs[-1]
    runner, main = serving_with_a_slow_settler()
    try:
        wait_until(
            lambda: fresh(last).status == Status.SUCCEEDED, timeout=15, what="the chain to end"
        )
    finally:
        runner.stop()
        main.join(timeout=60)


def test_a_failed_member_s_dependents_are_cancelled_without_waiting_for_the_cadence(
    register_handler,
):
    register_handler("test.broken", lambda context: 1 / 0)
    created = workflow(
        {"ref": "a", "type": "test.broken", "max_attempts": 1},
        {"ref": "b", "depends_on": ("a",)},
    )
    dependent = created.jobs[-1]
    runner, main = serving_with_a_slow_settler()
    try:
        wait_until(
            lambda: fresh(dependent).status == Status.CANCELLED,
            timeout=15,
            what="the dependent to be cancelled",
        )
    finally:
        runner.stop()
        main.join(timeout=60)


def gap_asked_after_a_pass(settler: DependencySettler) -> float:
    """How long after a pass that settled nothing the next one comes when a member
    finishes."""
    settler.run(time.monotonic())
    passed = time.monotonic()
    settler.soon()
    return round(settler.next_due(passed) - passed, 1)


def test_a_busy_process_asks_for_passes_that_settle_nothing_less_and_less_often():
    """Members finishing one after another while the callback of their fan-in still waits:
    each pass that settles nothing doubles the gap, up to the settler's interval."""
    in_flight = InFlight()
    in_flight.add(SimpleNamespace(job=SimpleNamespace(id="a running job", attempts=1)))
    settler = DependencySettler(batch_size=10, interval_seconds=1.0, in_flight=in_flight)
    settler.soon()
    gaps = [gap_asked_after_a_pass(settler) for _ in range(5)]
    assert gaps == [0.2, 0.4, 0.8, 1.0, 1.0]


def test_an_idle_process_asks_for_the_next_pass_at_once_whatever_came_before():
    in_flight = InFlight()
    busy = SimpleNamespace(job=SimpleNamespace(id="a running job", attempts=1))
    in_flight.add(busy)
    settler = DependencySettler(batch_size=10, interval_seconds=1.0, in_flight=in_flight)
    settler.soon()
    for _ in range(4):
        gap_asked_after_a_pass(settler)
    in_flight.remove(busy)
    assert gap_asked_after_a_pass(settler) == SOON_SECONDS
