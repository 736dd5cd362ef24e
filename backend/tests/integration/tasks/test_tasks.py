"""The django.tasks backend: enqueue, the mappings, validation, results, the worker side."""

from __future__ import annotations

import logging
import math
import sys
from datetime import timedelta
from uuid import UUID

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction
from django.tasks import TaskResultStatus, task, task_backends
from django.tasks.base import TASK_MAX_PRIORITY, TASK_MIN_PRIORITY
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued, task_finished, task_started
from django.utils import timezone

from jobs import backends, selectors, services
from jobs.backends import (
    InvalidTaskArguments,
    build_task_result,
    job_priority,
    task_payload,
    task_priority,
)
from jobs.drivers import Owner
from jobs.handlers import JobCancelled, JobTimedOut, LeaseLost, get_handler
from jobs.models import Job, JobEvent, JobStatus
from jobs.services import ErrorDetails
from jobs.storable import UnstorableValue
from tests import example_tasks
from tests.factories import fresh, queued_job, timeline
from tests.helpers import run_workers_in_burst

Event = JobEvent.Type


def backend():
    return task_backends["default"]


@pytest.fixture
def no_backoff(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0


@pytest.fixture
def received():
    """What Django's three task signals carried, in order: (signal name, status when sent,
    TaskResult); every one must come from the backend's class, as Django's backends send
    them. The status is read at once: as with Django's ImmediateBackend, the object sent
    with task_started is the one later finished."""
    seen = []
    signals = {"enqueued": task_enqueued, "started": task_started, "finished": task_finished}

    def receiver_for(name):
        def receiver(sender, task_result, **kwargs):
            assert sender is backends.JobQueueBackend
            seen.append((name, task_result.status, task_result))

        return receiver

    receivers = {name: receiver_for(name) for name in signals}
    for name, receiver in receivers.items():
        signals[name].connect(receiver)
    yield seen
    for name, receiver in receivers.items():
        signals[name].disconnect(receiver)


# --- Mappings (no database) ------------------------------------------------------------


def test_default_task_priority_maps_onto_the_specs_default_job_priority():
    assert job_priority(0) == 50


def test_priority_mapping_keeps_djangos_order_over_its_whole_range():
    mapped = [job_priority(p) for p in range(TASK_MIN_PRIORITY, TASK_MAX_PRIORITY + 1)]
    assert mapped == sorted(set(mapped))
    assert (mapped[0], mapped[-1]) == (-50, 150)


def test_priority_reads_back_and_clamps_api_priorities_to_djangos_range():
    assert [task_priority(job_priority(p)) for p in (-100, -1, 0, 7, 100)] == [-100, -1, 0, 7, 100]
    assert (task_priority(-32768), task_priority(32767)) == (TASK_MIN_PRIORITY, TASK_MAX_PRIORITY)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (JobStatus.QUEUED, TaskResultStatus.READY),
        (JobStatus.RUNNING, TaskResultStatus.RUNNING),
        (JobStatus.SUCCEEDED, TaskResultStatus.SUCCESSFUL),
        (JobStatus.FAILED, TaskResultStatus.FAILED),
        (JobStatus.CANCELLED, TaskResultStatus.FAILED),
    ],
)
def test_every_job_status_maps_to_a_task_status(status, expected):
    assert backends.STATUSES[status] == expected


def test_payload_holds_args_and_kwargs_with_tuples_as_lists():
    assert task_payload((1, (2, "x")), {"k": {"n": None}}) == {
        "args": [1, [2, "x"]],
        "kwargs": {"k": {"n": None}},
    }


@pytest.mark.parametrize(
    ("args", "kwargs", "named"),
    [
        ((1, timezone.now()), {}, "args[1]: a datetime is not JSON"),
        ((), {"tags": {"a"}}, "kwargs['tags']: a set is not JSON"),
        ((), {"counts": {1: "one"}}, "kwargs['counts']: the key 1 is not a string"),
        ((math.nan,), {}, "args[0]: nan is not a JSON number"),
        (([b"bytes"],), {}, "args[0]: a bytes is not JSON"),
        (("a\x00b",), {}, "args[0]: Strings may not contain the NUL character"),
    ],
)
def test_arguments_json_cannot_carry_are_refused_naming_the_argument(args, kwargs, named):
    with pytest.raises(InvalidTaskArguments) as refused:
        task_payload(args, kwargs)
    assert named in str(refused.value)


def test_refused_arguments_are_a_type_error_like_djangos_and_unstorable_like_ours():
    assert issubclass(InvalidTaskArguments, TypeError)
    assert issubclass(InvalidTaskArguments, UnstorableValue)


@pytest.mark.parametrize(
    "payload", [[], {"args": {}}, {"kwargs": []}, {"args": [], "extra": 1}, "text"]
)
def test_a_payload_of_another_shape_cannot_be_called(payload):
    with pytest.raises(TypeError, match="payload must be"):
        backends.call_arguments(payload)


@pytest.mark.parametrize(
    ("type", "data", "message", "path", "trace"),
    [
        (
            Event.RETRY_SCHEDULED,
            {"exception_class": "builtins.KeyError", "traceback": "Traceback ..."},
            "boom",
            "builtins.KeyError",
            "Traceback ...",
        ),
        (Event.FAILED, {"reason": "timeout"}, "Timed out after 2 s", JobTimedOut, None),
        (Event.TIMEOUT_REQUEUED, {"expired_worker_id": "w"}, "Lease expired", LeaseLost, None),
        (Event.CANCELLED, {}, "Cancelled before it ran", JobCancelled, None),
        (Event.FAILED, {"reason": "unstorable_result"}, "cannot be stored", UnstorableValue, None),
    ],
)
def test_each_attempt_ending_event_becomes_a_task_error(type, data, message, path, trace):
    event = JobEvent(type=type, data=data, message=message)
    error = backends.task_error(event)
    expected = path if isinstance(path, str) else f"{path.__module__}.{path.__qualname__}"
    assert error.exception_class_path == expected
    assert error.traceback == (trace or message)
    assert issubclass(error.exception_class, BaseException)


# --- Task definition -----------------------------------------------------------------------


def test_defining_a_task_registers_it_as_the_handler_of_its_module_path():
    spec = get_handler("tests.example_tasks.add")
    assert spec is not None and spec.fn.task is example_tasks.add
    assert spec.description == "Adds two numbers."


def test_using_copies_keep_the_registered_task():
    example_tasks.add.using(priority=5, max_attempts=9)
    assert get_handler("tests.example_tasks.add").fn.task is example_tasks.add


def test_a_task_cannot_take_the_type_of_an_register_handler():
    def demo_success():
        pass

    demo_success.__module__, demo_success.__qualname__ = "demo", "success"
    with pytest.raises(InvalidTask, match="already the type of an @register handler"):
        task(demo_success)


def test_a_module_path_longer_than_the_type_column_is_refused():
    def fn():
        pass

    fn.__qualname__ = "f" * 120
    with pytest.raises(InvalidTask, match="longer than the job type's 120 characters"):
        task(fn)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be a whole number from 1 to 100"),
        ({"timeout_seconds": 2.5}, "timeout_seconds must be a whole number"),
        ({"queue_name": "no spaces"}, "Queue name 'no spaces'"),
    ],
)
def test_bad_task_options_are_refused_when_the_task_is_defined(options, message):
    with pytest.raises(InvalidTask, match=message):
        example_tasks.add.using(**options)


@pytest.mark.django_db
def test_metadata_given_through_using_goes_on_the_job():
    metadata = {"request_id": "req-9", "tenant": "acme"}
    result = example_tasks.add.using(metadata=metadata).enqueue(1, 2)
    job = Job.objects.get(pk=result.id)
    assert job.metadata == metadata
    # The task itself keeps none; another call without it writes none.
    assert example_tasks.add.metadata is None
    assert Job.objects.get(pk=example_tasks.add.enqueue(3, 4).id).metadata == {}


@pytest.mark.django_db
def test_metadata_of_a_task_and_of_using_for_one_call_and_in_bulk():
    tagged = example_tasks.tagged
    assert Job.objects.get(pk=tagged.enqueue().id).metadata == {"team": "billing"}
    # using() replaces the task's metadata for that call.
    once = tagged.using(metadata={"team": "ops"}).enqueue()
    assert Job.objects.get(pk=once.id).metadata == {"team": "ops"}
    results = tagged.enqueue_many([((), {}), ((), {})])
    assert [Job.objects.get(pk=r.id).metadata for r in results] == [{"team": "billing"}] * 2
    # A dict is no hash key: tasks hash as before, by their other fields.
    assert hash(tagged) == hash(tagged.using(metadata={"other": "x"}))


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"n": 1}, "metadata: The value of 'n' must be a string, got a number."),
        (["request_id"], "metadata: Must be a JSON object of string keys and string values."),
        ({"k" * 129: "v"}, "metadata: Keys must be strings of 1 to 128 characters."),
        ({f"k{n}": "v" for n in range(33)}, "metadata: At most 32 entries are allowed, got 33."),
        ({"k": "\x00"}, "metadata: Strings may not contain the NUL character"),
    ],
    ids=["number", "list", "long-key", "too-many", "nul"],
)
@pytest.mark.django_db
def test_bad_metadata_is_refused_by_using_before_anything_is_written(metadata, message):
    with pytest.raises(InvalidTask) as refused:
        example_tasks.add.using(metadata=metadata)
    assert str(refused.value).startswith(message)
    assert not Job.objects.exists()


def test_a_task_with_heartbeat_false_is_registered_without_the_heartbeat():
    assert get_handler("tests.example_tasks.proves_liveness").heartbeat is False
    assert get_handler("tests.example_tasks.add").heartbeat is True


def test_a_heartbeat_option_that_is_not_a_bool_is_refused_when_the_task_is_defined():
    def fn():
        pass

    fn.__qualname__ = "fn"  # as if at module level, which Django checks first
    with pytest.raises(InvalidTask, match="heartbeat must be True or False"):
        task(heartbeat="no")(fn)


def test_a_task_not_made_by_the_backends_task_class_is_refused():
    from django.tasks import Task

    with pytest.raises(InvalidTask, match="not made by this backend's task_class"):
        Task(func=example_tasks.add.func)


def test_queues_outside_the_backends_list_are_refused(settings):
    settings.TASKS = {
        "default": {"BACKEND": "jobs.backends.JobQueueBackend", "QUEUES": ["default"]}
    }
    with pytest.raises(InvalidTask, match="Queue 'emails' is not valid"):
        example_tasks.add.using(queue_name="emails")


def test_system_checks_report_options_the_backend_would_misread(settings):
    settings.TASKS = {
        "default": {
            "BACKEND": "jobs.backends.JobQueueBackend",
            "QUEUES": ["default"],
            "OPTIONS": {
                "MAX_ATTEMPTS": 0,
                "RETRIES": 3,
                "QUEUE_OPTIONS": {"emails": {"TIMEOUT_SECONDS": 5}, "default": {"X": 1}},
            },
        }
    }
    messages = [error.msg for error in backend().check()]
    assert messages == [
        "TASKS['default']: unknown OPTIONS ['RETRIES'].",
        "TASKS['default']: OPTIONS['QUEUE_OPTIONS']['emails']: 'emails' is not in QUEUES.",
        "TASKS['default']: OPTIONS['QUEUE_OPTIONS']['default'] may only set "
        "['MAX_ATTEMPTS', 'TIMEOUT_SECONDS'].",
        "TASKS['default']: OPTIONS['MAX_ATTEMPTS'] must be a whole number from 1 to 100.",
    ]


# --- Enqueue -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_enqueue_writes_a_job_typed_by_module_path_with_args_and_kwargs():
    result = example_tasks.add.enqueue(2, b=3)
    job = Job.objects.get(pk=result.id)
    assert (job.type, job.payload) == (
        "tests.example_tasks.add",
        {"args": [2], "kwargs": {"b": 3}},
    )
    assert (job.status, job.priority, job.queue, job.max_attempts, job.timeout_seconds) == (
        JobStatus.QUEUED,
        50,
        "default",
        3,
        None,
    )
    assert result.status == TaskResultStatus.READY
    assert result.enqueued_at == job.created_at
    assert (result.args, result.kwargs, result.worker_ids, result.errors) == ([2], {"b": 3}, [], [])


@pytest.mark.django_db
def test_task_options_priority_and_queue_are_written_on_the_job():
    result = example_tasks.configured.enqueue()
    job = Job.objects.get(pk=result.id)
    assert (job.priority, job.queue, job.timeout_seconds, job.max_attempts) == (
        -50,
        "tasks-test",
        30,
        7,
    )


@pytest.mark.django_db
def test_run_after_becomes_available_at():
    when = timezone.now() + timedelta(hours=1)
    result = example_tasks.add.using(run_after=when).enqueue(1, 1)
    assert Job.objects.get(pk=result.id).available_at == when


@pytest.mark.django_db
def test_options_default_to_the_queue_then_the_backend_then_the_app_settings(settings):
    settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT = 4
    settings.TASKS = {
        "default": {
            "BACKEND": "jobs.backends.JobQueueBackend",
            "QUEUES": [],
            "OPTIONS": {"TIMEOUT_SECONDS": 60, "QUEUE_OPTIONS": {"emails": {"MAX_ATTEMPTS": 9}}},
        }
    }
    emails = Job.objects.get(pk=example_tasks.add.using(queue_name="emails").enqueue(1, 2).id)
    default = Job.objects.get(pk=example_tasks.add.enqueue(1, 2).id)
    own = Job.objects.get(
        pk=example_tasks.add.using(max_attempts=2, timeout_seconds=5).enqueue(1, 2).id
    )
    assert (emails.max_attempts, emails.timeout_seconds) == (9, 60)
    assert (default.max_attempts, default.timeout_seconds) == (4, 60)
    assert (own.max_attempts, own.timeout_seconds) == (2, 5)


@pytest.mark.django_db
def test_unstorable_arguments_write_nothing():
    with pytest.raises(InvalidTaskArguments, match=r"kwargs\['when'\]"):
        example_tasks.add.enqueue(1, when=timezone.now())
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_enqueue_in_a_committed_transaction_keeps_the_job_and_signals_after_commit(received):
    with transaction.atomic():
        result = example_tasks.add.enqueue(1, 2)
        assert received == []  # not before the job is visible to workers
    assert Job.objects.filter(pk=result.id).exists()
    assert [(name, r.id, status) for name, status, r in received] == [
        ("enqueued", result.id, TaskResultStatus.READY)
    ]


@pytest.mark.django_db(transaction=True)
def test_enqueue_in_a_rolled_back_transaction_leaves_no_job_and_no_signal(received):
    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        result = example_tasks.add.enqueue(1, 2)
        raise Rollback
    assert not Job.objects.filter(pk=result.id).exists()
    assert received == []


# --- Bulk enqueue ----------------------------------------------------------------------


@pytest.mark.django_db
def test_enqueue_many_writes_one_job_and_one_created_event_per_call_in_order():
    results = example_tasks.add.enqueue_many(
        [((1, 2), {}), ([3], {"b": 4}), ((), {"a": 5, "b": 6})]
    )
    jobs = [Job.objects.get(pk=result.id) for result in results]
    assert [job.payload for job in jobs] == [
        {"args": [1, 2], "kwargs": {}},
        {"args": [3], "kwargs": {"b": 4}},
        {"args": [], "kwargs": {"a": 5, "b": 6}},
    ]
    assert {(job.type, job.status, job.priority) for job in jobs} == {
        ("tests.example_tasks.add", JobStatus.QUEUED, 50)
    }
    assert [timeline(job) for job in jobs] == [[Event.CREATED]] * 3
    assert [(result.args, result.kwargs) for result in results] == [
        ([1, 2], {}),
        ([3], {"b": 4}),
        ([], {"a": 5, "b": 6}),
    ]
    assert {(result.status, result.enqueued_at) for result in results} == {
        (TaskResultStatus.READY, jobs[0].created_at)
    }


@pytest.mark.django_db
def test_enqueue_many_results_are_retrievable_with_get_result():
    results = example_tasks.add.enqueue_many([((1, 2), {}), ((3, 4), {})])
    read = [backend().get_result(result.id) for result in results]
    assert [(r.id, r.status, r.args, r.task.module_path) for r in read] == [
        (results[0].id, TaskResultStatus.READY, [1, 2], "tests.example_tasks.add"),
        (results[1].id, TaskResultStatus.READY, [3, 4], "tests.example_tasks.add"),
    ]


@pytest.mark.django_db
def test_enqueue_many_writes_the_tasks_options_on_every_job():
    when = timezone.now() + timedelta(hours=1)
    results = example_tasks.configured.using(run_after=when).enqueue_many([((), {})] * 2)
    assert {
        (job.priority, job.queue, job.timeout_seconds, job.max_attempts, job.available_at)
        for job in Job.objects.filter(pk__in=[result.id for result in results])
    } == {(-50, "tasks-test", 30, 7, when)}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("bad_call", "named"),
    [
        (((1,), {"b": timezone.now()}), r"calls\[2\]: Task argument kwargs\['b'\]"),
        (((1, {2}), {}), r"calls\[2\]: Task argument args\[1\]"),
        (((1,), {5: 2}), r"calls\[2\]: must be an \(args, kwargs\) pair"),
        ((1, 2), r"calls\[2\]: must be an \(args, kwargs\) pair"),
        (((1, 2),), r"calls\[2\]: must be an \(args, kwargs\) pair"),
    ],
)
def test_enqueue_many_refuses_every_call_when_one_is_bad_naming_it(bad_call, named):
    calls = [((1, 2), {}), ((3, 4), {}), bad_call, ((5, 6), {})]
    with pytest.raises(InvalidTaskArguments, match=named) as refused:
        example_tasks.add.enqueue_many(calls)
    assert refused.value.index == 2
    assert not Job.objects.exists()
    assert not JobEvent.objects.exists()


@pytest.mark.django_db
def test_enqueue_many_refuses_a_task_the_backend_cannot_run_and_writes_nothing(settings):
    settings.TASKS = {
        "default": {"BACKEND": "jobs.backends.JobQueueBackend", "QUEUES": ["default"]}
    }
    with pytest.raises(InvalidTask, match="not valid for backend"):
        example_tasks.add.using(queue_name="emails").enqueue_many([((1, 2), {})])
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_enqueue_many_of_no_calls_writes_nothing():
    assert example_tasks.add.enqueue_many([]) == []
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_in_a_committed_transaction_signals_each_result_after_commit(received):
    with transaction.atomic():
        results = example_tasks.add.enqueue_many([((1, 2), {}), ((3, 4), {})])
        assert received == []  # not before the jobs are visible to workers
    assert Job.objects.filter(pk__in=[result.id for result in results]).count() == 2
    assert [(name, r.id, status) for name, status, r in received] == [
        ("enqueued", result.id, TaskResultStatus.READY) for result in results
    ]


@pytest.mark.django_db(transaction=True)
def test_enqueue_many_in_a_rolled_back_transaction_leaves_no_job_and_no_signal(received):
    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic():
        results = example_tasks.add.enqueue_many([((1, 2), {}), ((3, 4), {})])
        raise Rollback
    assert not Job.objects.filter(pk__in=[result.id for result in results]).exists()
    assert not JobEvent.objects.exists()
    assert received == []


@pytest.mark.django_db
def test_aenqueue_many_enqueues_the_same_way():
    results = async_to_sync(example_tasks.add.aenqueue_many)([((1, 2), {}), ((3, 4), {})])
    assert [Job.objects.get(pk=result.id).payload["args"] for result in results] == [
        [1, 2],
        [3, 4],
    ]


@pytest.mark.postgres
@pytest.mark.django_db
def test_enqueue_many_is_one_statement_on_postgresql(django_assert_num_queries):
    with django_assert_num_queries(1):
        results = example_tasks.add.enqueue_many([((n, n), {}) for n in range(50)])
    assert JobEvent.objects.filter(job_id__in=[r.id for r in results]).count() == 50


# --- Results ---------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("result_id", ["not-a-uuid", "0b0e7f4c-0000-4000-8000-000000000000", ""])
def test_unknown_or_malformed_ids_do_not_exist(result_id):
    with pytest.raises(TaskResultDoesNotExist):
        backend().get_result(result_id)


@pytest.mark.django_db
def test_a_handler_jobs_id_is_no_task_result():
    job = queued_job("demo.success")
    with pytest.raises(TaskResultDoesNotExist, match="not a registered task's"):
        backend().get_result(str(job.pk))


def _attempt(job_id, worker, at, error=None):
    """Claim ``job_id`` as ``worker`` at ``at``; fail the attempt with ``error`` or succeed."""
    claimed = services.claim_next_job(worker_id=worker, queue="default", now=at)
    assert claimed is not None and str(claimed.id) == job_id
    if error is None:
        return services.complete_job(
            job_id=job_id, worker_id=worker, attempt=claimed.attempts, result=5, now=at
        )
    return services.fail_job(
        job_id=job_id,
        worker_id=worker,
        attempt=claimed.attempts,
        error=str(error),
        details=ErrorDetails(exception_class="builtins.KeyError", traceback=f"Traceback {error}"),
        now=at,
    )


@pytest.mark.django_db
def test_result_has_a_worker_per_attempt_an_error_per_failure_and_the_return_value(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    result = example_tasks.add.enqueue(2, 3)
    times = [timezone.now() + timedelta(seconds=s) for s in (1, 2, 3)]
    _attempt(result.id, "w1", times[0], error="first")
    _attempt(result.id, "w2", times[1], error="second")
    _attempt(result.id, "w3", times[2])
    read = example_tasks.add.get_result(result.id)
    assert read.status == TaskResultStatus.SUCCESSFUL
    assert read.return_value == 5
    assert read.worker_ids == ["w1", "w2", "w3"]
    assert [(e.exception_class_path, e.traceback) for e in read.errors] == [
        ("builtins.KeyError", "Traceback first"),
        ("builtins.KeyError", "Traceback second"),
    ]
    assert (read.started_at, read.last_attempted_at, read.finished_at) == (
        times[0],
        times[2],
        times[2],
    )
    assert (read.enqueued_at, read.args, read.kwargs) == (result.enqueued_at, [2, 3], {})
    assert read.task.func is example_tasks.add.func


@pytest.mark.django_db
def test_a_claim_released_before_it_started_is_no_attempt_of_the_result(settings):
    settings.JOB_WORKER_BACKOFF_BASE_SECONDS = 0
    result = example_tasks.add.enqueue(2, 3)
    now = timezone.now()
    services.claim_jobs(worker_ids=["w0"], queue="default", now=now)
    services.release_unstarted_jobs(owners=[Owner(UUID(result.id), "w0", 1)], now=now)
    times = [now + timedelta(seconds=s) for s in (1, 2)]
    _attempt(result.id, "w1", times[0], error="first")
    _attempt(result.id, "w2", times[1])
    history = selectors.attempt_history(result.id)
    assert [(e.type, e.worker_id) for e in history] == [
        (Event.CLAIMED, "w0"),
        (Event.RELEASED, "w0"),
        (Event.CLAIMED, "w1"),
        (Event.RETRY_SCHEDULED, "w1"),
        (Event.CLAIMED, "w2"),
    ]
    read = example_tasks.add.get_result(result.id)
    assert (read.status, read.worker_ids, read.attempts) == (
        TaskResultStatus.SUCCESSFUL,
        ["w1", "w2"],
        2,
    )
    assert [e.traceback for e in read.errors] == ["Traceback first"]
    assert (read.started_at, read.last_attempted_at) == (times[0], times[1])


@pytest.mark.django_db
def test_refresh_follows_the_job():
    result = example_tasks.add.enqueue(2, 3)
    _attempt(result.id, "w1", timezone.now())
    result.refresh()
    assert (result.status, result.return_value, result.worker_ids) == (
        TaskResultStatus.SUCCESSFUL,
        5,
        ["w1"],
    )


@pytest.mark.django_db
def test_a_cancelled_task_reads_as_failed_with_a_job_cancelled_error():
    result = example_tasks.add.enqueue(2, 3)
    services.cancel_job(job_id=result.id)
    read = backend().get_result(result.id)
    assert read.status == TaskResultStatus.FAILED
    assert [e.exception_class for e in read.errors] == [JobCancelled]
    with pytest.raises(ValueError, match="Task failed"):
        read.return_value  # noqa: B018


@pytest.mark.django_db
def test_a_deferred_or_backed_off_job_reads_its_run_after_and_priority():
    when = timezone.now() + timedelta(minutes=5)
    result = example_tasks.add.using(run_after=when, priority=-7).enqueue(1, 1)
    read = backend().get_result(result.id)
    assert (read.task.run_after, read.task.priority, read.task.queue_name) == (when, -7, "default")


@pytest.mark.django_db
def test_a_job_created_through_the_api_with_another_payload_shape_is_still_readable():
    job, _ = services.create_job(type="tests.example_tasks.add", payload={"a": 1})
    read = backend().get_result(str(job.id))
    assert (read.args, read.kwargs) == ([], {"payload": {"a": 1}})


@pytest.mark.django_db
def test_aget_result_reads_the_same_result():
    result = example_tasks.add.enqueue(2, 3)
    read = async_to_sync(backend().aget_result)(result.id)
    assert (read.id, read.status) == (result.id, TaskResultStatus.READY)


@pytest.mark.django_db
def test_a_result_is_built_from_two_queries(django_assert_num_queries):
    result = example_tasks.add.enqueue(2, 3)
    with django_assert_num_queries(2):
        backend().get_result(result.id)


@pytest.mark.django_db
def test_a_first_attempts_history_read_from_the_claimed_row_is_the_stored_one():
    example_tasks.add.enqueue(1, 2)
    claimed = services.claim_next_job(worker_id="w1", queue="default")
    assert [(e.type, e.worker_id, e.created_at) for e in backends._history_at_claim(claimed)] == [
        (e.type, e.worker_id, e.created_at) for e in selectors.attempt_history(claimed.id)
    ]


@pytest.mark.django_db
def test_a_first_attempt_after_a_manual_retry_reads_the_earlier_attempts():
    result = example_tasks.fail_while_flagged.enqueue("x")
    _attempt(result.id, "w1", timezone.now(), error="first")
    services.retry_job(job_id=result.id)
    claimed = services.claim_next_job(worker_id="w2", queue="default")
    assert claimed.attempts == 1
    history = backends._history_at_claim(claimed)
    assert [(e.type, e.worker_id) for e in history] == [
        (Event.CLAIMED, "w1"),
        (Event.FAILED, "w1"),
        (Event.CLAIMED, "w2"),
    ]


def test_building_from_a_row_without_history_gives_an_unstarted_result():
    now = timezone.now()
    job = Job(
        type="tests.example_tasks.add",
        payload={"args": [1], "kwargs": {}},
        created_at=now,
        available_at=now,
    )
    read = build_task_result(job, [], task=example_tasks.add, backend="default")
    assert (read.status, read.started_at, read.worker_ids, read.task.run_after) == (
        TaskResultStatus.READY,
        None,
        [],
        None,
    )


# --- The worker ------------------------------------------------------------------------

pytest_worker = pytest.mark.django_db(transaction=True)


@pytest_worker
def test_the_worker_runs_a_task_and_sends_djangos_signals_in_order(received):
    result = example_tasks.add.enqueue(20, 22)
    runner = run_workers_in_burst()
    assert [(name, status) for name, status, _ in received] == [
        ("enqueued", TaskResultStatus.READY),
        ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.SUCCESSFUL),
    ]
    started, finished = received[1][2], received[2][2]
    assert started.worker_ids == [runner.threads[0].worker_id]
    assert (finished.return_value, finished.id) == (42, result.id)
    # Built without reading the events back, and equal to what they say.
    assert finished == backend().get_result(result.id)


@pytest_worker
def test_a_task_without_heartbeat_renews_its_own_lease_through_its_context():
    result = example_tasks.proves_liveness.enqueue(3)
    run_workers_in_burst()
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, 3)
    renewed = JobEvent.objects.filter(job_id=result.id, type=JobEvent.Type.LEASE_RENEWED)
    assert renewed.count() == 3


@pytest_worker
def test_a_retried_task_starts_each_attempt_and_finishes_once_as_failed(received, no_backoff):
    result = example_tasks.always_fails.enqueue("nope")
    run_workers_in_burst()
    assert [(name, status) for name, status, _ in received] == [
        ("enqueued", TaskResultStatus.READY),
        ("started", TaskResultStatus.RUNNING),
        ("started", TaskResultStatus.RUNNING),
        ("finished", TaskResultStatus.FAILED),
    ]
    finished = received[-1][2]
    assert [e.exception_class for e in finished.errors] == [ValueError, ValueError]
    assert all("ValueError: nope" in e.traceback for e in finished.errors)
    assert finished == backend().get_result(result.id)


@pytest_worker
def test_djangos_log_line_for_a_failed_task_carries_its_exception(caplog, no_backoff):
    """django.tasks logs task_finished with sys.exc_info(), as Django's own backends send it
    while the task's exception is being handled: the line of a failed task has the
    traceback of its last attempt."""
    tasks_logger = logging.getLogger("django.tasks")  # the project's LOGGING stops propagation
    tasks_logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="django.tasks"):
            result = example_tasks.always_fails.enqueue("no luck")
            run_workers_in_burst()
    finally:
        tasks_logger.removeHandler(caplog.handler)
    (failed,) = [
        r for r in caplog.records if r.name == "django.tasks" and r.levelno >= logging.ERROR
    ]
    assert failed.getMessage().startswith(f"Task id={result.id} ")
    assert failed.exc_info is not None and failed.exc_info[0] is ValueError
    assert str(failed.exc_info[1]) == "no luck"
    assert "ValueError: no luck" in caplog.handler.format(failed)


@pytest_worker
def test_a_context_task_sees_its_attempt_and_reports_progress(no_backoff):
    result = example_tasks.flaky.enqueue(succeed_on=2)
    run_workers_in_burst()
    result.refresh()
    assert result.return_value == {"succeeded_on": 2}
    assert len(result.worker_ids) == 2 and len(result.errors) == 1
    progress = JobEvent.objects.filter(job_id=result.id, type=Event.PROGRESS)
    assert [e.data for e in progress.order_by("id")] == [{"attempt": 1}, {"attempt": 2}]


@pytest_worker
def test_coroutine_tasks_run_in_the_worker_threads():
    added = example_tasks.async_add.enqueue(2, 3)
    noted = example_tasks.async_progress.enqueue("from a coroutine")
    run_workers_in_burst()
    added.refresh()
    noted.refresh()
    assert (added.return_value, noted.return_value) == (5, 1)
    assert timeline(Job(pk=noted.id)).count(Event.PROGRESS) == 1


@pytest_worker
def test_a_type_naming_any_other_importable_function_is_refused_never_called(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr("os.system", calls.append)
    # A module that would leave a mark if the worker imported it.
    (tmp_path / "jobs_test_trap.py").write_text(
        f"open({str(tmp_path / 'imported')!r}, 'w').close()\ndef run(*a, **k): pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    shell, _ = services.create_job(
        type="os.system", payload={"args": ["touch /tmp/owned"], "kwargs": {}}, max_attempts=1
    )
    trap, _ = services.create_job(type="jobs_test_trap.run", max_attempts=1)
    run_workers_in_burst()
    for job, type in ((shell, "os.system"), (trap, "jobs_test_trap.run")):
        job = fresh(job)
        assert job.status == JobStatus.FAILED
        assert job.last_error == f"No handler or task is registered for job type {type!r}"
    assert calls == []
    assert "jobs_test_trap" not in sys.modules and not (tmp_path / "imported").exists()


@pytest_worker
def test_a_manual_retry_through_the_api_runs_a_failed_task_again(client):
    example_tasks.FLAGS.add("retry-me")
    try:
        result = example_tasks.fail_while_flagged.enqueue("retry-me")
        run_workers_in_burst()
        assert fresh(Job(pk=result.id)).status == JobStatus.FAILED
    finally:
        example_tasks.FLAGS.discard("retry-me")
    response = client.post(f"/api/jobs/{result.id}/retry/")
    assert response.status_code == 200 and response.json()["status"] == JobStatus.QUEUED
    run_workers_in_burst()
    result.refresh()
    assert (result.status, result.return_value) == (TaskResultStatus.SUCCESSFUL, "retry-me")
    assert len(result.worker_ids) == 2
    assert [e.exception_class for e in result.errors] == [RuntimeError]


@pytest.mark.django_db
def test_the_api_lists_a_task_job_with_its_module_path_queue_and_arguments(client):
    result = example_tasks.add.using(queue_name="maths").enqueue(1, b=2)
    listed = client.get("/api/jobs/", {"type": "example_tasks.add", "queue": "maths"}).json()
    assert [(j["id"], j["type"], j["queue"], j["payload"]) for j in listed["results"]] == [
        (result.id, "tests.example_tasks.add", "maths", {"args": [1], "kwargs": {"b": 2}})
    ]


@pytest.mark.django_db
def test_the_api_creates_task_jobs_by_module_path_and_refuses_other_paths(client):
    created = client.post(
        "/api/jobs/",
        {"type": "tests.example_tasks.add", "payload": {"args": [1, 2]}},
        content_type="application/json",
    )
    refused = client.post(
        "/api/jobs/",
        {"type": "os.system", "payload": {"args": ["id"]}},
        content_type="application/json",
    )
    assert created.status_code == 201
    assert backend().get_result(created.json()["id"]).args == [1, 2]
    assert refused.status_code == 400
    assert refused.json()["type"][0].startswith("No handler is registered for 'os.system'.")
