"""The duty loops of a worker process: the heartbeat in a thread and a back-off of its own,
so that no other duty, hung or failing, delays a renewal; each other duty retried on its
own back-off; the schedule ticker reporting a failing schedule once per change."""

import itertools
import logging
import threading
import time

import pytest
from django.db import OperationalError
from django.utils import timezone

from jobs import services
from jobs.worker.attempts import Attempt, InFlight
from jobs.worker.maintenance import (
    Heartbeat,
    HotTableVacuum,
    LeaseRescuer,
    Maintenance,
    Presence,
    ScheduleTicker,
)
from jobs.worker.maintenance.loop import RETRY_FIRST_SECONDS, DutyLoop
from tests.factories import WORKER, fresh, running_job
from tests.helpers import worker_config

pytestmark = pytest.mark.django_db(transaction=True)

# A 3 s lease: a beat every second.
LEASE_SECONDS = 3
INTERVAL = LEASE_SECONDS / 3


def recorded(monkeypatch, cls, *, fail: int = 0, hang: threading.Event | None = None):
    """Record the monotonic time of each ``cls.run_once`` call; the first ``fail`` calls
    raise a database error, and with ``hang`` every call blocks until it is set."""
    calls: list[float] = []
    original = cls.run_once

    def run_once(self, *args):
        calls.append(time.monotonic())
        if hang is not None:
            hang.wait(30)
        if len(calls) <= fail:
            raise OperationalError("the server closed the connection")
        return original(self, *args)

    monkeypatch.setattr(cls, run_once.__name__, run_once)
    return calls


@pytest.fixture
def one_attempt():
    """A running job and the in-flight set of the process that runs it."""
    job = running_job(lease_seconds=LEASE_SECONDS)
    in_flight = InFlight()
    in_flight.add(Attempt(job=job, worker_id=WORKER, timeout_seconds=None))
    return job, in_flight


def run_maintenance(
    in_flight: InFlight,
    seconds: float,
    *,
    released: threading.Event | None = None,
    **config: object,
) -> None:
    """A process's maintenance for ``seconds``; a hung duty is ``released`` at the end."""
    maintenance = Maintenance(
        worker_config(lease_seconds=LEASE_SECONDS, cleanup_interval_seconds=0.2, **config),
        in_flight,
        stopping=threading.Event(),
        abandon=lambda worker_id: None,
        record=lambda outcome: None,
    )
    maintenance.start()
    try:
        time.sleep(seconds)
        for attempt in in_flight.snapshot():
            assert fresh(attempt.job).locked_until > timezone.now()  # the lease never lapsed
    finally:
        if released is not None:
            released.set()
        maintenance.stop()
        maintenance.join(timeout=10)
    assert not maintenance.beats.is_alive()


def assert_beats_every_interval(beats: list[float], seconds: float) -> None:
    assert len(beats) >= int(seconds / INTERVAL) - 1, beats
    gaps = [later - earlier for earlier, later in itertools.pairwise(beats)]
    assert max(gaps) < 2 * INTERVAL, gaps


def test_a_hung_duty_does_not_delay_the_heartbeat(monkeypatch, one_attempt):
    _, in_flight = one_attempt
    released = threading.Event()
    rescues = recorded(monkeypatch, LeaseRescuer, hang=released)
    beats = recorded(monkeypatch, Heartbeat)
    run_maintenance(in_flight, 4.5, released=released)
    assert len(rescues) == 1  # hung in its first pass the whole time
    assert_beats_every_interval(beats, 4.5)


def test_a_hung_vacuum_delays_neither_presence_nor_the_heartbeat(monkeypatch, one_attempt):
    _, in_flight = one_attempt
    released = threading.Event()
    vacuums = recorded(monkeypatch, HotTableVacuum, hang=released)
    presences = recorded(monkeypatch, Presence)
    beats = recorded(monkeypatch, Heartbeat)
    run_maintenance(in_flight, 4.5, released=released, vacuum_dead_rows=1)
    assert len(vacuums) == 1  # hung in its first pass the whole time
    assert len(presences) >= 6  # every half interval: the process still reads as alive
    assert_beats_every_interval(beats, 4.5)


def test_a_failing_duty_delays_neither_the_heartbeat_nor_the_other_duties(monkeypatch, one_attempt):
    _, in_flight = one_attempt
    rescues = recorded(monkeypatch, LeaseRescuer, fail=1_000)
    presences = recorded(monkeypatch, Presence)
    beats = recorded(monkeypatch, Heartbeat)
    run_maintenance(in_flight, 4.5)
    assert len(rescues) >= 3  # retried on its own back-off, failing every time
    assert len(presences) >= 6  # every half interval, failures beside it or not
    assert_beats_every_interval(beats, 4.5)


def test_a_failed_renewal_is_retried_within_a_third_of_the_interval(monkeypatch, one_attempt):
    _, in_flight = one_attempt
    beats = recorded(monkeypatch, Heartbeat, fail=2)
    run_maintenance(in_flight, 2.5)
    first, second, third, *_ = beats
    assert second - first < RETRY_FIRST_SECONDS + 0.3
    assert third - second < INTERVAL / 3 + 0.3


class Failing:
    """A duty that fails every time it runs, and counts its runs."""

    name = "failing"
    while_stopping = False

    def __init__(self) -> None:
        self.runs = 0

    def next_due(self, now: float) -> float:
        return now

    def run(self, now: float) -> None:
        self.runs += 1
        raise RuntimeError("broken")


def test_a_duty_that_keeps_failing_backs_off_doubling_up_to_its_bound():
    duty = Failing()
    loop = DutyLoop(
        "test",
        [duty],
        worker_id="w",
        stopping=threading.Event(),
        finished=threading.Event(),
        retry_max_seconds=2.0,
    )
    now = 1000.0
    for _ in range(8):
        loop.run_due(now)
        now += 0.01
    assert duty.runs == 1  # not due again before its back-off
    retries = []
    for _ in range(6):
        now = loop._due_at(duty, now)
        retries.append(round(now, 2))
        loop.run_due(now)
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(retries)]
    assert gaps == [1.0, 2.0, 2.0, 2.0, 2.0]


def test_a_schedule_that_starts_failing_is_logged_once(settings, monkeypatch, caplog):
    settings.JOB_SCHEDULES = {"reports": {"type": "demo.success", "interval": 1}}
    ticker = ScheduleTicker(worker_id="w")
    ticker.run_once()  # first sight

    def refusing(specs, **kwargs):
        raise RuntimeError("the database refused the job")

    monkeypatch.setattr(services.schedules, "create_jobs", refusing)
    time.sleep(1.1)
    with caplog.at_level(logging.INFO, logger="jobs.worker"):
        ticker.run_once()
        time.sleep(1.2)
        ticker.run_once()  # past its back-off: it fails the same way
    failed = [r for r in caplog.records if "action=schedule_failed" in r.getMessage()]
    assert len(failed) == 1 and "refused" in failed[0].getMessage()
    assert failed[0].levelno == logging.ERROR


class Outage:
    """A duty whose first ``failures`` runs meet a lost database, and then succeed."""

    name = "outage"
    while_stopping = False

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.runs = 0

    def next_due(self, now: float) -> float:
        return now

    def run(self, now: float) -> None:
        self.runs += 1
        if self.runs <= self.failures:
            raise OperationalError("the server closed the connection")


def test_a_duty_failing_on_the_database_logs_one_incident_and_its_end(caplog):
    duty = Outage(failures=4)
    loop = DutyLoop(
        "test",
        [duty],
        worker_id="w",
        stopping=threading.Event(),
        finished=threading.Event(),
        retry_max_seconds=2.0,
    )
    now = 1000.0
    with caplog.at_level(logging.DEBUG, logger="jobs.worker"):
        for _ in range(5):
            now = loop._due_at(duty, now)
            loop.run_due(now)
    assert duty.runs == 5
    told = [(r.levelname, r.getMessage()) for r in caplog.records if "action=" in r.getMessage()]
    assert [level for level, _ in told] == ["WARNING", "DEBUG", "DEBUG", "DEBUG", "INFO"]
    assert told[0][1].startswith("action=maintenance_database_error worker_id=w duty=outage ")
    assert "retry_in=0.5s" in told[0][1] and "retry_in=2.0s" in told[3][1]
    assert told[4][1].startswith("action=database_recovered worker_id=w duty=outage failures=4 ")
