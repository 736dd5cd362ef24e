"""A server that refuses writes because it is read-only (a hot standby, a primary being
demoted) is a lost connection to the worker: dropped, retried with back-off, told once in
the log, and no job is touched meanwhile."""

import logging
from datetime import timedelta

import pytest
from django.db import InternalError, OperationalError, connection, transaction
from django.utils import timezone

from harness import wait_until
from jobs import services, signals
from jobs.drivers import is_read_only
from jobs.models import Job
from jobs.worker import recovery
from jobs.worker.attempts import Attempt, InFlight, Outcome
from jobs.worker.completer import InlineCompleter
from jobs.worker.maintenance.heartbeat import Heartbeat
from jobs.worker.recovery import Incident
from tests.factories import WORKER, fresh, queued_job, running_job, timeline
from tests.helpers import read_only_error, worker_runner

Status = Job.Status


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_write_a_read_only_server_refuses_is_recognised_as_read_only():
    with pytest.raises(InternalError) as refused, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
        services.create_job(type="demo.success", payload={})
    assert is_read_only(refused.value)
    assert not Job.objects.exists()


def test_other_database_errors_are_not_read_only():
    assert not is_read_only(InternalError("deadlock detected"))


def test_an_incident_logs_its_first_error_then_its_recovery_and_backs_off(caplog):
    incident = Incident("database_error", worker_id="w1")
    with caplog.at_level(logging.DEBUG, logger="jobs.worker"):
        delays = [incident.failed(read_only_error()) for _ in range(7)]
        incident.ended()
        incident.ended()  # nothing open: nothing logged
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    told = [(r.levelname, r.getMessage().split(" read_only")[0]) for r in caplog.records]
    assert told[0] == ("WARNING", "action=database_error worker_id=w1")
    assert "read_only=true" in caplog.records[0].getMessage()
    assert [level for level, _ in told[1:7]] == ["DEBUG"] * 6
    assert told[7][0] == "INFO"
    assert told[7][1].startswith("action=database_recovered worker_id=w1 failures=7 after_s=")
    assert len(told) == 8


@pytest.mark.django_db(transaction=True)
def test_a_thread_whose_claims_meet_a_read_only_server_retries_and_then_runs_the_job(
    monkeypatch, caplog
):
    job = queued_job("demo.success", payload={"sleep_seconds": 0})
    refusals = []
    claim = services.claim_jobs

    def refused_twice(**kwargs):
        if len(refusals) < 2:
            refusals.append(kwargs["worker_ids"])
            raise read_only_error()
        return claim(**kwargs)

    monkeypatch.setattr(services, "claim_jobs", refused_twice)
    runner = worker_runner(threads=1, claim_batch_size=1)
    with caplog.at_level(logging.INFO, logger="jobs.worker"):
        runner.start()
        try:
            wait_until(lambda: fresh(job).status == Status.SUCCEEDED, 15, "the job")
        finally:
            runner.stop()
            runner.wait()
    # Untouched while refused: claimed once, on its first attempt, and it succeeded.
    assert fresh(job).attempts == 1
    events = timeline(job)
    assert events[:2] == ["created", "claimed"] and events.count("claimed") == 1
    lines = [r.getMessage() for r in caplog.records]
    assert sum("action=database_error" in line for line in lines) == 1
    assert sum("read_only=true" in line for line in lines) == 1
    assert sum("action=database_recovered" in line and "failures=2" in line for line in lines) == 1


@pytest.mark.django_db(transaction=True)
def test_a_failure_whose_write_gives_up_is_left_to_the_rescuer_not_heartbeated(monkeypatch):
    job = running_job(max_attempts=2, lease_seconds=30)
    in_flight = InFlight()
    attempt = Attempt(job=job, worker_id=WORKER, started=0.0)
    in_flight.add(attempt)
    finished = []
    signals.attempt_finished.connect(
        lambda sender, outcome, **kwargs: finished.append(outcome), weak=False, dispatch_uid="t"
    )

    def unreachable(**kwargs):
        raise OperationalError("could not connect to server")

    # The database stays away for the whole lease the write retries within.
    monkeypatch.setattr(services, "fail_jobs", unreachable)
    monkeypatch.setattr(recovery.time, "sleep", lambda seconds: None)
    completer = InlineCompleter(in_flight=in_flight, lease_seconds=1)
    try:
        completer.record(Outcome.failed(attempt, "boom", services.ErrorDetails()))
    finally:
        signals.attempt_finished.disconnect(dispatch_uid="t")
    monkeypatch.undo()
    assert finished == ["lease_lost"]
    assert in_flight.snapshot() == []
    # The database is back: the heartbeat no longer renews it, so its lease lapses and the
    # rescuer retries the job.
    assert Heartbeat(in_flight, lease_seconds=30).run_once().renewed == 0
    later = timezone.now() + timedelta(seconds=31)
    assert services.cleanup_expired_jobs(now=later).total == 1
    assert fresh(job).status == Status.QUEUED
