"""Schedules kept apart from each other: a schedule that cannot run as declared, or whose
pass fails, is shown as failing and never stops the others; a pass never waits on another
process's schedule; the schedules API answers for every declared schedule. On whichever
database the pass runs (SQLite and PostgreSQL)."""

import threading
from datetime import timedelta

import pytest
from django.db import DatabaseError, OperationalError, connection, transaction
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import services
from jobs.models import Job, ScheduleState
from tests.helpers import read_only_error

pytestmark = pytest.mark.django_db

GOOD = {"type": "demo.success", "interval": 60}
SCHEDULES = {
    "a-refused": {"type": "demo.success", "interval": 60, "priority": 40_000},
    "b-failing": {"type": "demo.fail", "interval": 60},
    "c-good": GOOD,
}


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def schedules(settings):
    settings.JOB_SCHEDULES = SCHEDULES
    settings.JOB_SCHEDULE_GRACE_SECONDS = 600
    return SCHEDULES


@pytest.fixture
def refused_jobs(monkeypatch):
    """The database refuses the jobs of type ``demo.fail`` (as a trigger or a constraint
    would), so the schedule ``b-failing`` fails at run time, past every check."""
    create_jobs = services.create_jobs

    def refusing(specs, **kwargs):
        if any(spec.type == "demo.fail" for spec in specs):
            raise RuntimeError("the database refused the job")
        return create_jobs(specs, **kwargs)

    monkeypatch.setattr(services.schedules, "create_jobs", refusing)


def start_and_pass(minutes: int):
    """First sight of every schedule, then a pass ``minutes`` later: its result."""
    start = timezone.now().replace(second=10, microsecond=0)
    services.enqueue_due_ticks(now=start)
    return services.enqueue_due_ticks(now=start + timedelta(minutes=minutes)), start


def test_a_failing_schedule_does_not_stop_the_ones_after_it(schedules, refused_jobs):
    done, _ = start_and_pass(2)
    assert done.created == 2
    assert set(Job.objects.values_list("metadata__schedule", flat=True)) == {"c-good"}
    assert list(done.failed) == ["b-failing"]
    assert "refused" in done.failed["b-failing"]


def test_a_failing_schedule_keeps_its_error_and_its_ticks(schedules, refused_jobs):
    done, start = start_and_pass(2)
    row = ScheduleState.objects.get(name="b-failing")
    assert row.error == done.failed["b-failing"] and row.error_at is not None
    assert row.last_tick_at == start  # its ticks are still owed
    assert ScheduleState.objects.get(name="c-good").error == ""


def test_the_same_error_is_reported_once_and_its_end_once(schedules, refused_jobs, monkeypatch):
    done, start = start_and_pass(2)
    assert "b-failing" in done.failed
    again = services.enqueue_due_ticks(now=start + timedelta(minutes=4))
    assert again.failed == {}  # failing as before: nothing new to report
    monkeypatch.undo()  # the database takes the jobs again
    later = services.enqueue_due_ticks(now=start + timedelta(minutes=8))
    assert later.recovered == ["b-failing"]
    assert Job.objects.filter(metadata__schedule="b-failing").count() > 0
    assert ScheduleState.objects.get(name="b-failing").error == ""
    assert services.enqueue_due_ticks(now=start + timedelta(minutes=8)).recovered == []


def test_a_failing_schedule_is_tried_again_after_a_back_off(schedules, refused_jobs):
    _, start = start_and_pass(2)
    failed_at = ScheduleState.objects.get(name="b-failing").updated_at
    # Tried again at once, it would fail again and touch its row: it waits instead.
    services.enqueue_due_ticks(now=start + timedelta(minutes=2, milliseconds=500))
    assert ScheduleState.objects.get(name="b-failing").updated_at == failed_at


def test_a_schedule_that_fails_again_waits_as_long_as_it_had_been_failing(schedules, refused_jobs):
    _, start = start_and_pass(2)
    failed = start + timedelta(minutes=2)

    def tried_at(seconds: float) -> bool:
        at = failed + timedelta(seconds=seconds)
        services.enqueue_due_ticks(now=at)
        return ScheduleState.objects.get(name="b-failing").updated_at == at

    assert tried_at(1)  # failing for 0 s: the least wait, 1 s
    assert not tried_at(1.5) and tried_at(2)  # failing for 1 s when last tried
    assert not tried_at(3.5) and tried_at(4)  # then 2 s: the wait doubles


@pytest.mark.parametrize(
    "failure",
    [lambda: OperationalError("the server closed the connection"), read_only_error],
    ids=["lost-connection", "read-only-server"],
)
def test_a_pass_the_database_fails_is_raised_and_sets_no_schedule_apart(
    schedules, monkeypatch, failure
):
    start = timezone.now().replace(second=10, microsecond=0)
    services.enqueue_due_ticks(now=start)  # first sight
    create_jobs = services.create_jobs

    def failing(specs, **kwargs):
        raise failure()

    monkeypatch.setattr(services.schedules, "create_jobs", failing)
    with pytest.raises(DatabaseError):
        services.enqueue_due_ticks(now=start + timedelta(minutes=2))
    assert not ScheduleState.objects.exclude(error="").exists()
    # The database answers again: the ticks owed are enqueued at once, no back-off.
    monkeypatch.setattr(services.schedules, "create_jobs", create_jobs)
    assert services.enqueue_due_ticks(now=start + timedelta(minutes=2, seconds=1)).created == 4


def test_a_schedule_that_cannot_run_is_set_aside(schedules):
    done, _ = start_and_pass(2)
    assert not ScheduleState.objects.filter(name="a-refused").exists()
    assert Job.objects.filter(metadata__schedule="c-good").count() == 2
    assert done.failed.keys() <= {"b-failing"}


def test_the_schedule_list_shows_every_schedule_and_which_fail(api, schedules, refused_jobs):
    start_and_pass(2)
    response = api.get("/api/schedules/")
    assert response.status_code == 200
    by_name = {entry["name"]: entry for entry in response.json()}
    assert list(by_name) == ["a-refused", "b-failing", "c-good"]
    refused = by_name["a-refused"]
    assert (refused["runnable"], refused["priority"], refused["next_run_at"]) == (
        False,
        40_000,
        None,
    )
    assert "priority" in refused["error"] and refused["error_at"] is None
    failing = by_name["b-failing"]
    assert failing["runnable"] and "refused" in failing["error"]
    assert failing["error_at"] is not None
    assert by_name["c-good"]["error"] is None


def test_a_schedule_of_any_shape_is_listed_not_a_500(api, settings):
    settings.JOB_SCHEDULES = {
        "list-payload": {**GOOD, "payload": [["a", 1]]},
        "not-a-dict": ["type", "demo.success"],
        "string-priority": {**GOOD, "priority": "high", "queue": 7},
        "huge-interval": {"type": "demo.success", "interval": 10**12},
        "nul": {**GOOD, "payload": {"t": "a\x00b"}},
    }
    response = api.get("/api/schedules/")
    assert response.status_code == 200
    body = response.json()
    assert [entry["runnable"] for entry in body] == [False] * 5
    assert all(entry["error"] for entry in body)


def test_triggering_a_schedule_that_cannot_run_is_a_409_that_writes_nothing(api, schedules):
    response = api.post("/api/schedules/a-refused/trigger/")
    assert response.status_code == 409
    assert "priority" in response.json()["detail"]
    assert not Job.objects.exists()


def test_a_trigger_whose_answer_fails_leaves_no_job(api, schedules, monkeypatch):
    def broken(name):
        raise RuntimeError("the answer could not be built")

    monkeypatch.setattr("jobs.selectors.schedule_detail", broken)
    api.raise_request_exception = False
    response = api.post("/api/schedules/c-good/trigger/")
    assert response.status_code == 500
    assert not Job.objects.exists()


def test_a_schedule_that_cannot_run_can_still_be_paused(api, schedules):
    response = api.post("/api/schedules/a-refused/pause/")
    assert response.status_code == 200
    assert response.json()["paused"] is True


def test_metrics_say_which_schedules_fail(api, schedules, refused_jobs):
    start_and_pass(2)
    body = api.get("/metrics").content.decode()
    assert 'jobqueue_schedule_failing{schedule="a-refused"} 1.0' in body
    assert 'jobqueue_schedule_failing{schedule="b-failing"} 1.0' in body
    assert 'jobqueue_schedule_failing{schedule="c-good"} 0.0' in body


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_pass_skips_a_schedule_another_process_holds_instead_of_waiting(settings):
    settings.JOB_SCHEDULES = {"held": GOOD, "free": GOOD}
    settings.JOB_SCHEDULE_GRACE_SECONDS = 600
    start = timezone.now().replace(second=10, microsecond=0)
    services.enqueue_due_ticks(now=start)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic():
                ScheduleState.objects.select_for_update().get(name="held")
                holding.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        done = services.enqueue_due_ticks(now=start + timedelta(minutes=2))
    finally:
        release.set()
        holder.join()
    assert done.created == 2  # "free"'s two ticks; "held" was left to its holder
    assert not Job.objects.filter(metadata__schedule="held").exists()
    assert done.failed == {}
