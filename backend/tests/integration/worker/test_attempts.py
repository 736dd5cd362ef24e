"""Every attempt ends promptly and truthfully, whatever its handler does: the heartbeat keeps
a working handler's lease, timeouts end hung ones without losing capacity, cancellation
reaches running handlers, and hostile handlers or outcomes cannot stop the worker.

These run real worker threads in this process on the test database; the process-level
cases (kill -9, real signals) are in processes/test_worker_processes.py.
"""

import contextlib
import functools
import logging
import threading
import time

import pytest
from django.db import connection

from harness import wait_until
from jobs import selectors, services
from jobs.models import Job, JobEvent
from jobs.worker import WorkerConfig, WorkerRunner
from jobs.worker.attempts import Attempt, InFlight
from jobs.worker.completer import Completer
from jobs.worker.listener import LISTENER_APPLICATION_NAME
from jobs.worker.maintenance import LeaseRescuer, Maintenance
from jobs.worker.queues import QueueSet
from jobs.worker.threads import WorkerThread
from tests.factories import fresh, queued_job, timeline
from tests.helpers import run_workers_in_burst, worker_config

pytestmark = pytest.mark.django_db(transaction=True)

Status = Job.Status
Event = JobEvent.Type


@pytest.fixture(autouse=True)
def no_handler_left_running():
    """Wait (a while) for the threads a test abandoned in hung handlers: one returning in
    the next test would record its outcome there, through that test's patches."""
    yield
    deadline = time.monotonic() + 10
    for thread in threading.enumerate():
        if thread.name.startswith("job-worker-"):
            thread.join(timeout=max(deadline - time.monotonic(), 0))


def config(**overrides) -> WorkerConfig:
    return worker_config(**overrides)


@contextlib.contextmanager
def running(**overrides):
    """A worker runner serving in this process (as ``run_job_workers`` would) until the
    block ends."""
    runner = WorkerRunner(config(**overrides))
    main = threading.Thread(target=runner.run)
    main.start()
    try:
        yield runner
    finally:
        runner.stop()
        main.join(timeout=60)


def status_of(job) -> str:
    return Job.objects.get(pk=job.pk).status


# --- heartbeat --------------------------------------------------------------------------------


def test_a_handler_that_works_three_leases_without_renewing_runs_once(register_handler):
    register_handler("test.long", lambda context: time.sleep(3) or {"slept": 3})
    job = queued_job("test.long")
    stop_cleaning = threading.Event()

    def clean_like_another_process():
        while not stop_cleaning.is_set():
            services.cleanup_expired_jobs(worker_id="another-process")
            time.sleep(0.2)
        connection.close()

    cleaner = threading.Thread(target=clean_like_another_process)
    cleaner.start()
    try:
        run_workers_in_burst(lease_seconds=1, cleanup_interval_seconds=0.5)
    finally:
        stop_cleaning.set()
        cleaner.join()
    job = fresh(job)
    assert (job.status, job.attempts, job.result) == (Status.SUCCEEDED, 1, {"slept": 3})
    # Heartbeats write no event: the timeline reads as the attempt happened.
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.SUCCEEDED]


def test_context_renew_still_writes_a_lease_renewed_event(register_handler):
    register_handler("test.renew", lambda context: context.renew())
    job = queued_job("test.renew")
    run_workers_in_burst()
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.LEASE_RENEWED, Event.SUCCEEDED]


# --- handlers that opted out of the heartbeat (heartbeat=False) --------------------------------


def test_a_handler_without_heartbeat_loses_its_job_to_cleanup_when_its_lease_runs_out(
    register_handler, settings
):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 60  # requeued, and not claimed again here
    register_handler("test.no_heartbeat", lambda context: time.sleep(2.5), heartbeat=False)
    job = queued_job("test.no_heartbeat", max_attempts=2)
    with running(lease_seconds=1, cleanup_interval_seconds=0.2) as runner:
        wait_until(
            lambda: any(thread.jobs_processed for thread in runner.threads),
            10,
            "the late completion",
        )
    job = fresh(job)
    assert (job.status, job.attempts, job.result) == (Status.QUEUED, 1, None)
    assert timeline(job) == [Event.CREATED, Event.CLAIMED, Event.TIMEOUT_REQUEUED]


def test_a_handler_without_heartbeat_that_renews_its_own_lease_keeps_its_job(register_handler):
    def prove_liveness(context):
        for _ in range(5):
            time.sleep(0.5)
            context.renew()
        return "alive"

    register_handler("test.renews_itself", prove_liveness, heartbeat=False)
    job = queued_job("test.renews_itself", max_attempts=1)
    run_workers_in_burst(lease_seconds=1, cleanup_interval_seconds=0.2)
    job = fresh(job)
    assert (job.status, job.attempts, job.result) == (Status.SUCCEEDED, 1, "alive")
    assert timeline(job).count(Event.LEASE_RENEWED) == 5


# --- timeouts ---------------------------------------------------------------------------------


def test_a_timed_out_handler_is_replaced_so_other_jobs_still_run(register_handler):
    release = threading.Event()
    register_handler("test.hang", lambda context: release.wait(30))
    register_handler("test.quick", lambda context: "done")
    hung = queued_job("test.hang", priority=100, timeout_seconds=1, max_attempts=1)
    with running(threads=1) as runner:
        wait_until(lambda: status_of(hung) == Status.FAILED, 10, "the timeout")
        quick = [queued_job("test.quick") for _ in range(3)]
        wait_until(
            lambda: all(status_of(job) == Status.SUCCEEDED for job in quick), 10, "quick jobs"
        )
        assert len(runner.serving()) == 1  # the configured capacity, kept
        stuck = runner.threads[0]
        assert stuck.abandoned and stuck.is_alive()
        release.set()
        stuck.join(timeout=10)
    hung = fresh(hung)
    assert hung.last_error == "Timed out after 1 s"
    assert timeline(hung)[-1] == Event.FAILED  # and nothing after it from the late return


def test_the_type_s_registered_timeout_applies_when_the_job_sets_none(register_handler):
    from jobs import registry

    registry.register("test.slow_type", description="x", timeout_seconds=1)(
        lambda context: time.sleep(3)
    )
    try:
        job = queued_job("test.slow_type", max_attempts=1)
        run_workers_in_burst()
        assert fresh(job).last_error == "Timed out after 1 s"
    finally:
        registry._REGISTRY.pop("test.slow_type")


def test_the_global_default_timeout_applies_last(register_handler):
    register_handler("test.sleep2", lambda context: time.sleep(2))
    job = queued_job("test.sleep2", max_attempts=1)
    runner = WorkerRunner(config(timeout_seconds=1, burst=True))
    runner.run()
    assert fresh(job).last_error == "Timed out after 1 s"


def test_a_timed_out_attempt_returning_late_leaves_the_next_attempt_of_its_job_in_care(
    register_handler, settings
):
    """Attempt 1 times out and its abandoned thread returns while attempt 2 of the same job
    runs in this process: attempt 2 must still be timed out (and heartbeated), not dropped
    and left to lease expiry."""
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0  # attempt 2 is claimed right away
    register_handler("test.late", lambda context: time.sleep(1.5 if context.attempt == 1 else 3))
    job = queued_job("test.late", timeout_seconds=1, max_attempts=2)
    run_workers_in_burst(lease_seconds=2, cleanup_interval_seconds=0.5)
    job = fresh(job)
    assert (job.status, job.last_error) == (Status.FAILED, "Timed out after 1 s")
    assert timeline(job) == [
        Event.CREATED,
        Event.CLAIMED,
        Event.RETRY_SCHEDULED,
        Event.CLAIMED,
        Event.FAILED,
    ]


def test_a_burst_run_does_not_end_while_a_stuck_thread_s_replacement_starts(
    register_handler, monkeypatch, settings
):
    """The last serving thread is abandoned to a hung handler while its job goes back to the
    queue: the run must wait for the replacement, which runs the retry, instead of ending in
    the instant between the two and leaving the retry claimed by nobody."""
    original_start = WorkerThread.start

    def slow_start(thread: WorkerThread) -> None:
        if thread.number > 1:  # a replacement: widen the instant between the two
            time.sleep(0.5)
        original_start(thread)

    monkeypatch.setattr(WorkerThread, "start", slow_start)
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0  # the retry is due at once
    register_handler("test.hang_once", lambda context: time.sleep(2 if context.attempt == 1 else 0))
    job = queued_job("test.hang_once", timeout_seconds=1, max_attempts=2)
    run_workers_in_burst(cleanup_interval_seconds=0.2)
    assert fresh(job).status == Status.SUCCEEDED


def test_a_thread_abandoned_in_a_hung_handler_is_on_the_workers_page_with_its_job(
    register_handler,
):
    """Its attempt timed out and a new thread took its place; until the handler returns,
    the process's presence row names the thread and the job it still runs."""
    release = threading.Event()
    register_handler("test.hung", lambda context: release.wait(30))
    job = queued_job("test.hung", timeout_seconds=1, max_attempts=1)

    def abandoned():
        processes = selectors.live_workers()["processes"]
        return [entry for p in processes for entry in p["threads_abandoned"]]

    try:
        with running(lease_seconds=3):
            wait_until(lambda: status_of(job) == Status.FAILED, 20, "timed out")
            wait_until(lambda: abandoned() != [], 10, "abandoned thread listed")
            (entry,) = abandoned()
            assert entry["job"] == {
                "id": str(job.pk),
                "type": "test.hung",
                "attempt": 1,
                "status": Status.FAILED,
            }
            assert entry["abandoned_at"] is not None
            release.set()  # the handler returns: the thread ends and leaves the list
            wait_until(lambda: abandoned() == [], 10, "abandoned thread gone")
    finally:
        release.set()


# --- cancellation -----------------------------------------------------------------------------


def test_a_running_cooperative_handler_stops_within_one_heartbeat(register_handler):
    def cooperative(context):
        while True:
            context.progress("working")
            time.sleep(0.1)

    register_handler("test.cooperative", cooperative)
    job = queued_job("test.cooperative", max_attempts=5)
    with running(lease_seconds=3):  # a heartbeat every second
        wait_until(lambda: status_of(job) == Status.RUNNING, 10, "claim")
        asked = time.monotonic()
        services.cancel_job(job_id=job.pk)
        wait_until(lambda: status_of(job) == Status.CANCELLED, 10, "cancelled")
        assert time.monotonic() - asked < 1 + 1  # one heartbeat, plus slack for the poll
    job = fresh(job)
    assert job.attempts == 1 and job.finished_at is not None
    events = timeline(job)
    assert events[-1] == Event.CANCELLED and events.count(Event.CANCEL_REQUESTED) == 1
    assert job.events.get(type=Event.CANCELLED).data["reason"] == "cancelled"


def test_a_handler_polling_context_cancelled_ends_as_cancelled(register_handler):
    def polite(context):
        while not context.cancelled:
            time.sleep(0.05)
        raise RuntimeError("stopping as asked")

    register_handler("test.polite", polite)
    job = queued_job("test.polite")
    with running(lease_seconds=1):
        wait_until(lambda: status_of(job) == Status.RUNNING, 10, "claim")
        services.cancel_job(job_id=job.pk)
        wait_until(lambda: status_of(job) == Status.CANCELLED, 10, "cancelled")
    assert fresh(job).last_error == "stopping as asked"


def test_a_handler_ignoring_a_cancel_ends_at_its_timeout_as_cancelled(register_handler):
    register_handler("test.deaf", lambda context: time.sleep(5))
    job = queued_job("test.deaf", timeout_seconds=2, max_attempts=3)
    with running(lease_seconds=3):
        wait_until(lambda: status_of(job) == Status.RUNNING, 10, "claim")
        services.cancel_job(job_id=job.pk)
        wait_until(lambda: status_of(job) == Status.CANCELLED, 10, "cancelled at the timeout")
    job = fresh(job)
    assert job.attempts == 1  # not retried, though attempts remain
    assert job.last_error == "Timed out after 2 s"


# --- hostile handlers -------------------------------------------------------------------------


class Unusual(BaseException):
    pass


@pytest.mark.parametrize(
    ("raise_it", "error"),
    [
        (lambda: exec("import sys; sys.exit(3)"), "3"),
        (lambda: exec("raise KeyboardInterrupt"), "KeyboardInterrupt"),
        (lambda: exec("raise SystemExit"), "SystemExit"),
    ],
    ids=["sys.exit(3)", "KeyboardInterrupt", "SystemExit"],
)
def test_a_base_exception_fails_the_attempt_and_the_worker_carries_on(
    register_handler, raise_it, error
):
    register_handler("test.exit", lambda context: raise_it())
    register_handler("test.after", lambda context: "still serving")
    hostile = queued_job("test.exit", priority=100, max_attempts=1)
    after = queued_job("test.after")
    runner = WorkerRunner(config(threads=1, burst=True))
    assert runner.run() == 0
    hostile = fresh(hostile)
    assert (hostile.status, hostile.last_error) == (Status.FAILED, error)
    assert (
        hostile.events.get(type=Event.FAILED)
        .data["exception_class"]
        .endswith(("SystemExit", "KeyboardInterrupt"))
    )
    assert fresh(after).status == Status.SUCCEEDED


def test_a_custom_base_exception_is_recorded_with_its_class_and_traceback(register_handler):
    def raise_unusual(context):
        raise Unusual("odd")

    register_handler("test.unusual", raise_unusual)
    job = queued_job("test.unusual", max_attempts=1)
    run_workers_in_burst()
    data = fresh(job).events.get(type=Event.FAILED).data
    assert data["exception_class"] == f"{__name__}.Unusual"
    assert 'raise Unusual("odd")' in data["traceback"]


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


@pytest.mark.parametrize(
    ("exception", "error"),
    [
        (ValueError("nul \x00 inside"), "nul \\u0000 inside"),
        (ValueError("lone \ud800 surrogate"), "lone \\ud800 surrogate"),
        (UnprintableError(), "UnprintableError (its message could not be read: RuntimeError)"),
    ],
    ids=["nul", "surrogate", "str-raises"],
)
def test_an_error_the_database_cannot_store_is_recorded_all_the_same(
    register_handler, exception, error
):
    def fail(context):
        raise exception

    register_handler("test.bad_error", fail)
    job = queued_job("test.bad_error", max_attempts=1)
    run_workers_in_burst()
    job = fresh(job)
    assert (job.status, job.last_error, job.attempts) == (Status.FAILED, error, 1)


@pytest.mark.parametrize(
    ("result", "why"),
    [
        ({"a": "\x00"}, "NUL"),
        (["\udfff"], "lone surrogate"),
        (functools.reduce(lambda inner, _: [inner], range(80), 1), "Nesting"),
        ({"value": float("nan")}, "Not JSON"),
    ],
    ids=["nul", "surrogate", "deep", "nan"],
)
def test_a_result_that_cannot_be_stored_fails_the_attempt_naming_why(register_handler, result, why):
    register_handler("test.bad_result", lambda context: result)
    job = queued_job("test.bad_result", max_attempts=1)
    run_workers_in_burst()
    job = fresh(job)
    assert job.status == Status.FAILED
    assert job.last_error.startswith("Handler returned a result that cannot be stored")
    assert why in job.last_error
    assert job.events.get(type=Event.FAILED).data["reason"] == "unstorable_result"


# --- a thread that dies anyway ----------------------------------------------------------------


class WorkerBug(BaseException):
    """Stands for a bug in the worker itself, escaping the attempt boundary."""


def test_a_thread_that_dies_fails_its_job_at_once_and_is_replaced(register_handler, monkeypatch):
    register_handler("test.ok", lambda context: "fine")
    doomed = queued_job("test.ok", priority=100, max_attempts=1)
    original = Completer.record
    calls = []

    def record_once_broken(self, outcome):
        calls.append(outcome.attempt.job.id)
        if len(calls) == 1:
            raise WorkerBug("the worker's own code failed")
        return original(self, outcome)

    monkeypatch.setattr(Completer, "record", record_once_broken)
    with running(threads=1, lease_seconds=60) as runner:
        wait_until(lambda: status_of(doomed) == Status.FAILED, 10, "the job failed")
        later = queued_job("test.ok")
        wait_until(lambda: status_of(later) == Status.SUCCEEDED, 10, "a replacement served")
        assert runner.threads[0].died is not None
        assert len(runner.serving()) == 1
    assert fresh(doomed).last_error == "Worker thread died: the worker's own code failed"


def test_an_attempt_whose_outcome_could_not_be_recorded_is_not_its_thread_s_current_any_more(
    register_handler, monkeypatch
):
    register_handler("test.boom", lambda context: 1 / 0)
    queued_job("test.boom")

    def record_broken(self, outcome):
        raise RuntimeError("the worker's own code failed")

    monkeypatch.setattr(Completer, "record", record_broken)
    runner = WorkerRunner(config(threads=1))
    thread = WorkerThread(
        1,
        config=runner.config,
        stopping=runner.stop_event,
        waker=runner.waker,
        fetcher=runner.fetcher,
        executor=runner.executor,
        completer=runner.completer,
        in_flight=runner.in_flight,
    )
    with pytest.raises(RuntimeError):  # the loop logs it and carries on
        thread.run_once()
    # A later death of the thread must not fail it a second time.
    assert thread.current is None


def test_a_process_whose_threads_keep_dying_exits_non_zero(monkeypatch):
    def broken_claim(self):
        raise WorkerBug("claim is broken")

    monkeypatch.setattr(WorkerThread, "run_once", broken_claim)
    runner = WorkerRunner(config(threads=2))
    assert runner.run() == 1
    assert runner.gave_up


# --- queues -----------------------------------------------------------------------------------


def test_a_worker_serves_only_its_queues(register_handler):
    register_handler("test.ok", lambda context: "fine")
    emails = queued_job("test.ok", queue="emails")
    default = queued_job("test.ok")
    WorkerRunner(config(queues=("emails",), burst=True)).run()
    assert (status_of(emails), status_of(default)) == (Status.SUCCEEDED, Status.QUEUED)


def test_a_worker_takes_its_queues_in_turn_so_none_starves(register_handler):
    order = []
    register_handler("test.track", lambda context: order.append(context.queue))
    for _ in range(3):
        queued_job("test.track", queue="busy", priority=100)
    queued_job("test.track", queue="quiet", priority=0)
    WorkerRunner(config(burst=True)).run()
    assert order[:2] in (["busy", "quiet"], ["quiet", "busy"])
    assert sorted(order) == ["busy", "busy", "busy", "quiet"]


def test_busy_threads_look_up_the_queues_once_a_second_idle_ones_once_a_poll(monkeypatch):
    lookups = []
    monkeypatch.setattr(selectors, "active_queues", lambda: lookups.append(1) or ["default"])
    now = [1000.0]
    queues = QueueSet(("*",), refresh_seconds=0.02, clock=lambda: now[0])
    assert queues.current(busy=True) == ["default"]
    for _ in range(49):  # a busy thread asks on every job: 50 jobs in the same second
        now[0] += 0.019
        queues.current(busy=True)
    assert len(lookups) == 1
    queues.current()  # an idle thread, more than a poll interval later
    assert len(lookups) == 2
    now[0] += 1.0
    queues.current(busy=True)
    assert len(lookups) == 3


def test_a_queue_announced_between_lookups_is_served_at_once(monkeypatch):
    monkeypatch.setattr(selectors, "active_queues", lambda: ["default"])
    queues = QueueSet(("*",), refresh_seconds=60, clock=lambda: 0.0)
    assert queues.current(busy=True) == ["default"]
    assert queues.serves("emails")
    assert queues.current(busy=True) == ["default", "emails"]


# --- the maintenance thread's wake-ups ---------------------------------------------------------


@pytest.mark.parametrize(("timeout_seconds", "wakes"), [(None, False), (5, True)])
def test_only_an_attempt_with_a_deadline_wakes_the_maintenance_thread_as_it_starts(
    timeout_seconds, wakes
):
    job = services.claim_next_job(worker_id="w", queue=queued_job("test.ok").queue)
    assert job is not None
    in_flight = InFlight()
    attempt = Attempt(job=job, worker_id="w", timeout_seconds=timeout_seconds)
    in_flight.add(attempt)
    assert not in_flight.changed.is_set()  # held: no deadline yet
    in_flight.start(attempt)
    assert in_flight.changed.is_set() is wakes
    assert [attempt.job.id for attempt in in_flight.snapshot()] == [job.id]


def test_a_stop_asked_during_a_maintenance_pass_ends_the_thread_at_once(monkeypatch):
    """The runner sets ``finished`` and wakes the thread; a stop that lands while a pass
    runs must not wait for the next deadline (5 s of cleanup interval here)."""
    in_pass, release = threading.Event(), threading.Event()

    def slow_rescue(self):
        in_pass.set()
        release.wait(10)
        return services.CleanupResult(requeued=0, failed=0)

    monkeypatch.setattr(LeaseRescuer, "run_once", slow_rescue)
    in_flight = InFlight()
    maintenance = Maintenance(
        config(cleanup_interval_seconds=5),
        in_flight,
        stopping=threading.Event(),
        abandon=lambda worker_id: None,
        record=lambda outcome: None,
    )
    maintenance.start()
    assert in_pass.wait(10)
    maintenance.finished.set()  # what WorkerRunner.wait() does once no thread serves
    in_flight.changed.set()
    release.set()
    maintenance.join(timeout=2)
    assert not maintenance.is_alive()


# --- a lost connection inside the handler's own writes -----------------------------------------


@pytest.mark.postgres
def test_progress_survives_the_loss_of_the_worker_s_connection(register_handler):
    def lose_connection(context):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    def work(context):
        with contextlib.suppress(Exception):
            lose_connection(context)
        context.progress("after the connection was lost")
        context.renew()
        return "done"

    register_handler("test.reconnect", work)
    job = queued_job("test.reconnect")
    run_workers_in_burst()
    job = fresh(job)
    assert job.status == Status.SUCCEEDED
    assert Event.PROGRESS in timeline(job) and Event.LEASE_RENEWED in timeline(job)


# --- wake-up on enqueue -------------------------------------------------------------------------


def claimed_after(job) -> float:
    """Seconds from the job's creation to its claim."""
    claimed = JobEvent.objects.get(job_id=job.pk, type=Event.CLAIMED).created_at
    return (claimed - fresh(job).created_at).total_seconds()


@pytest.mark.postgres
def test_a_new_job_wakes_an_idle_worker_long_before_its_next_poll(register_handler):
    register_handler("test.ok", lambda context: "fine")
    with running(threads=2, poll_interval_seconds=5) as runner:
        wait_until(runner.listener.listening.is_set, 10, "LISTEN")
        time.sleep(0.2)  # both threads are now asleep in their 5 s poll
        jobs = []
        for _ in range(3):
            jobs.append(queued_job("test.ok"))
            wait_until(lambda: status_of(jobs[-1]) == Status.SUCCEEDED, 5, "the job")
    assert max(claimed_after(job) for job in jobs) < 1


@pytest.mark.postgres
def test_the_listener_hears_the_probes_it_sends_itself(settings):
    settings.JOB_WORKER_LISTEN_PROBE_SECONDS = 1
    with running(threads=1) as runner:
        wait_until(lambda: runner.listener.probes_answered >= 2, 10, "two probes back")
        assert runner.listener.listening.is_set()


@pytest.mark.postgres
def test_a_listener_whose_probe_does_not_come_back_listens_again(settings, monkeypatch, caplog):
    from jobs.drivers.postgres import PostgresDriver

    settings.JOB_WORKER_LISTEN_PROBE_SECONDS = 1
    lost = []
    # The probe goes out but never arrives, as when the listener's backend is gone.
    monkeypatch.setattr(PostgresDriver, "probe", lambda self, channel, token: lost.append(token))
    with caplog.at_level(logging.INFO, logger="jobs.worker"), running(threads=1) as runner:
        wait_until(
            lambda: sum("action=listening" in r.getMessage() for r in caplog.records) >= 2,
            10,
            "a second LISTEN",
        )
    assert runner.listener.probes_answered == 0 and lost
    assert any("did not come back" in r.getMessage() for r in caplog.records)


@pytest.mark.postgres
def test_polling_still_finds_jobs_when_notifications_are_lost(register_handler):
    register_handler("test.ok", lambda context: "fine")
    with running(threads=1, poll_interval_seconds=0.5) as runner:
        wait_until(runner.listener.listening.is_set, 10, "LISTEN")
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = %s AND datname = current_database()",
                [LISTENER_APPLICATION_NAME],
            )
            assert cursor.fetchone()[0] == 1
        job = queued_job("test.ok")
        wait_until(lambda: status_of(job) == Status.SUCCEEDED, 5, "a poll finds it")
        wait_until(runner.listener.listening.is_set, 10, "LISTEN again")  # it reconnects
