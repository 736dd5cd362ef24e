"""Workflows on every driver: ``services.create_workflow`` writes every job and edge in one
transaction or nothing, refuses what it cannot write by field, and the settler then runs
its jobs as any with ``depends_on``; a manual retry of a parent brings back the dependents
cancelled for it."""

import uuid

import pytest

from jobs import drivers, errors, selectors, services
from jobs.limits import DEPENDS_ON_MAX, WORKFLOW_JOBS_MAX
from jobs.models import Job, JobDependency, JobEvent, Workflow
from tests.factories import (
    WORKER,
    cancelled_job,
    failed_job,
    fresh,
    queued_job,
    succeeded_job,
    timeline,
    workflow,
)

pytestmark = pytest.mark.django_db

Status = Job.Status


@pytest.fixture(params=[driver.name for driver in drivers.available_drivers()], autouse=True)
def driver(request):
    (chosen,) = [d for d in drivers.available_drivers() if d.name == request.param]
    with drivers.use_driver(chosen):
        yield chosen


def by_ref(created: services.CreatedWorkflow) -> dict[str, Job]:
    return {row.ref: fresh(row) for row in created.jobs}


def run(job: Job, *, result=None) -> None:
    """Claim ``job`` (it must be the next one) and complete it with ``result``."""
    claimed = services.claim_next_job(worker_id=WORKER)
    assert claimed is not None and claimed.pk == job.pk
    assert services.complete_job(
        job_id=job.pk, worker_id=WORKER, attempt=claimed.attempts, result=result
    )


def fail(job: Job) -> None:
    """Claim ``job`` (it must be the next one) and fail its attempt."""
    claimed = services.claim_next_job(worker_id=WORKER)
    assert claimed is not None and claimed.pk == job.pk
    assert services.fail_job(
        job_id=job.pk, worker_id=WORKER, attempt=claimed.attempts, error="boom"
    )


def refused(*jobs, name: str = "") -> dict[str, list[str]]:
    with pytest.raises(errors.InvalidWorkflow) as raised:
        workflow(*jobs, name=name)
    return raised.value.problems


def test_the_roots_are_queued_and_the_others_wait():
    created = workflow(
        {"ref": "extract"},
        {"ref": "transform", "depends_on": ("extract",)},
        {"ref": "load", "depends_on": ("transform",)},
    )
    jobs = by_ref(created)
    assert [jobs[ref].status for ref in ("extract", "transform", "load")] == [
        Status.QUEUED,
        Status.WAITING,
        Status.WAITING,
    ]
    assert [row.status for row in created.jobs] == [Status.QUEUED, Status.WAITING, Status.WAITING]


def test_every_job_carries_the_workflow_and_its_ref_and_a_created_event():
    created = workflow({"ref": "a"}, {"ref": "b", "depends_on": ("a",)}, name="nightly")
    assert Workflow.objects.get(pk=created.id).name == "nightly"
    for row in created.jobs:
        job = fresh(row)
        assert job.workflow_id == created.id
        assert timeline(job) == ["created"]
    assert sorted(job.ref for job in Job.objects.all()) == ["a", "b"]


def test_the_edges_name_the_parents_by_id():
    created = workflow({"ref": "a"}, {"ref": "b"}, {"ref": "c", "depends_on": ("a", "b")})
    jobs = by_ref(created)
    edges = set(JobDependency.objects.values_list("job_id", "parent_id"))
    assert edges == {(jobs["c"].pk, jobs["a"].pk), (jobs["c"].pk, jobs["b"].pk)}


def test_a_bad_last_item_writes_nothing():
    problems = refused({"ref": "a"}, {"ref": "b", "depends_on": ("a",)}, {"depends_on": ("zz",)})
    assert list(problems) == ["jobs[2].depends_on"]
    assert "'zz'" in problems["jobs[2].depends_on"][0]
    assert not Workflow.objects.exists()
    assert not Job.objects.exists()
    assert not JobEvent.objects.exists()


def test_a_cycle_is_refused_with_its_path():
    problems = refused(
        {"ref": "a", "depends_on": ("c",)},
        {"ref": "b", "depends_on": ("a",)},
        {"ref": "c", "depends_on": ("b",)},
        {"ref": "d"},
    )
    (field,) = problems
    assert field in {"jobs[0].depends_on", "jobs[1].depends_on", "jobs[2].depends_on"}
    (message,) = problems[field]
    assert message.startswith("Cycle: ")
    path = message.removeprefix("Cycle: ").split(".")[0].split(" -> ")
    assert path[0] == path[-1] and sorted(path[:-1]) == ["a", "b", "c"]
    assert not Job.objects.exists()


def test_a_job_downstream_of_a_cycle_is_not_named_in_it():
    problems = refused(
        {"ref": "x", "depends_on": ("a",)},
        {"ref": "a", "depends_on": ("b",)},
        {"ref": "b", "depends_on": ("a",)},
    )
    assert problems == {
        "jobs[1].depends_on": [
            "Cycle: a -> b -> a. A job cannot wait for itself, even through others."
        ]
    }


def test_a_job_that_waits_for_itself_is_a_cycle():
    problems = refused({"ref": "a", "depends_on": ("a",)})
    assert problems["jobs[0].depends_on"][0].startswith("Cycle: a -> a.")


def test_a_diamond_is_no_cycle():
    created = workflow(
        {"ref": "top"},
        {"ref": "left", "depends_on": ("top",)},
        {"ref": "right", "depends_on": ("top",)},
        {"ref": "bottom", "depends_on": ("left", "right")},
    )
    assert JobDependency.objects.filter(job_id=created.jobs[3].id).count() == 2


def test_more_parents_inside_the_workflow_than_the_bound_are_refused(monkeypatch):
    monkeypatch.setattr("jobs.services.workflows.WORKFLOW_DEPENDS_ON_MAX", 2)
    problems = refused({"ref": "a"}, {"ref": "b"}, {"ref": "c"}, {"depends_on": ("a", "b", "c")})
    assert problems == {"jobs[3].depends_on": ["At most 2 parents of this workflow."]}


def test_a_ref_used_twice_is_refused():
    problems = refused({"ref": "a"}, {"ref": "a"})
    assert problems == {"jobs[1].ref": ["Also used by jobs[0]."]}


def test_a_parent_named_twice_is_refused():
    problems = refused({"ref": "a"}, {"ref": "b", "depends_on": ("a", "a")})
    assert problems == {"jobs[1].depends_on": ["A parent is named twice."]}


def test_more_jobs_than_the_bound_are_refused():
    problems = refused(*({} for _ in range(WORKFLOW_JOBS_MAX + 1)))
    assert list(problems) == ["jobs"]
    assert not Job.objects.exists()


def test_more_outside_parents_than_the_plain_bound_are_refused():
    outside = tuple(str(uuid.uuid4()) for _ in range(DEPENDS_ON_MAX + 1))
    problems = refused({"ref": "a", "depends_on": outside})
    assert any("outside this workflow" in reason for reason in problems["jobs[0].depends_on"])


def test_an_unknown_outside_parent_is_refused():
    missing = str(uuid.uuid4())
    problems = refused({"ref": "a", "depends_on": (missing,)})
    assert problems == {
        "jobs[0].depends_on": [f"No ref of this workflow and no such job: {missing}."]
    }


def test_a_step_may_wait_for_a_job_outside_that_succeeded_already():
    outside = succeeded_job()
    created = workflow({"ref": "a", "depends_on": (str(outside.pk),)}, {"ref": "b"})
    assert by_ref(created)["a"].status == Status.QUEUED
    assert created.jobs[0].status == Status.QUEUED


def test_a_known_idempotency_key_writes_nothing():
    queued_job(idempotency_key="k")
    problems = refused({"ref": "a"}, {"ref": "b", "idempotency_key": "k"})
    assert problems == {
        "jobs[1].idempotency_key": ["A job with this idempotency key exists already."]
    }
    assert Job.objects.count() == 1
    assert not Workflow.objects.exists()


def test_the_steps_run_one_after_another_through_the_settler():
    created = workflow({"ref": "a"}, {"ref": "b", "depends_on": ("a",)})
    jobs = by_ref(created)
    run(jobs["a"], result=3)
    assert services.claim_next_job(worker_id=WORKER) is None
    assert services.settle_waiting_jobs() == (1, 0)
    assert fresh(jobs["b"]).status == Status.QUEUED


def test_a_callback_waits_for_every_member_of_its_group():
    # Priorities: the members are claimed in this order (they share one created_at).
    members = [{"ref": f"m{index}", "priority": 10 - index} for index in range(3)]
    created = workflow(*members, {"ref": "done", "depends_on": ("m0", "m1", "m2")})
    jobs = by_ref(created)
    for ref in ("m0", "m1"):
        run(jobs[ref])
    services.settle_waiting_jobs()
    assert fresh(jobs["done"]).status == Status.WAITING
    run(jobs["m2"])
    services.settle_waiting_jobs()
    assert fresh(jobs["done"]).status == Status.QUEUED


def test_parent_results_come_in_depends_on_order():
    created = workflow(
        {"ref": "a", "priority": 2},
        {"ref": "b", "priority": 1},
        {"ref": "c", "depends_on": ("b", "a")},
    )
    jobs = by_ref(created)
    run(jobs["a"], result="from a")
    run(jobs["b"], result={"from": "b"})
    assert selectors.parent_results(jobs["c"].pk) == [{"from": "b"}, "from a"]


def failed_chain() -> dict[str, Job]:
    """a -> b -> c where a failed for good and the settler cancelled b, then c."""
    created = workflow(
        {"ref": "a", "max_attempts": 1, "type": "demo.fail"},
        {"ref": "b", "depends_on": ("a",)},
        {"ref": "c", "depends_on": ("b",)},
    )
    jobs = by_ref(created)
    fail(jobs["a"])
    services.settle_waiting_jobs()
    services.settle_waiting_jobs()
    assert [fresh(jobs[ref]).status for ref in "abc"] == [Status.FAILED] + [Status.CANCELLED] * 2
    return jobs


def test_a_manual_retry_of_the_parent_brings_its_dependents_back_to_waiting():
    jobs = failed_chain()
    services.retry_job(job_id=jobs["a"].pk)
    assert [fresh(jobs[ref]).status for ref in "abc"] == [
        Status.QUEUED,
        Status.WAITING,
        Status.WAITING,
    ]


def test_each_revived_dependent_gets_an_event_naming_its_parent():
    jobs = failed_chain()
    services.retry_job(job_id=jobs["a"].pk, actor=services.Actor(user="ops", via="api"))
    for child, parent in (("b", "a"), ("c", "b")):
        event = JobEvent.objects.filter(job_id=jobs[child].pk).order_by("id").last()
        assert event.type == "manual_retry"
        assert event.message == services.RESUMED_MESSAGE
        assert event.data["parent_id"] == str(jobs[parent].pk)
        assert event.data["previous_status"] == "cancelled"
        assert event.data["actor"] == {"user": "ops", "via": "api"}
        assert fresh(jobs[child]).finished_at is None


def test_the_revived_workflow_runs_to_the_end():
    jobs = failed_chain()
    services.retry_job(job_id=jobs["a"].pk)
    for ref in "abc":
        run(jobs[ref])
        services.settle_waiting_jobs()
    assert [fresh(jobs[ref]).status for ref in "abc"] == [Status.SUCCEEDED] * 3


def test_a_bulk_retry_brings_the_dependents_back_too():
    jobs = failed_chain()
    assert services.retry_jobs(status="failed").retried == 1
    assert fresh(jobs["b"]).status == Status.WAITING


def test_a_dependent_an_operator_cancelled_stays_cancelled():
    parent = queued_job(priority=100, max_attempts=1)
    child = queued_job(depends_on=[parent.pk])
    services.cancel_jobs(ids=[child.pk])
    fail(parent)
    services.settle_waiting_jobs()
    services.retry_job(job_id=parent.pk)
    assert fresh(child).status == Status.CANCELLED


def test_a_dependent_cancelled_for_another_parent_stays_cancelled():
    first = failed_job()
    second = failed_job()
    child = queued_job(depends_on=sorted([first.pk, second.pk]))
    named = JobEvent.objects.get(job_id=child.pk, type="cancelled").data["parent_id"]
    other = first if str(first.pk) != named else second
    services.retry_job(job_id=other.pk)
    assert fresh(child).status == Status.CANCELLED


def test_a_retried_parent_with_a_dependent_that_ran_leaves_it_alone():
    parent = failed_job()
    child = queued_job(depends_on=[parent.pk], on_parent_failure="run")
    run(child)
    services.retry_job(job_id=parent.pk)
    assert fresh(child).status == Status.SUCCEEDED


def test_a_cancelled_parent_retried_brings_its_dependents_back_too():
    parent = cancelled_job()
    child = queued_job(depends_on=[parent.pk])
    assert child.status == Status.CANCELLED
    services.retry_job(job_id=parent.pk)
    assert fresh(child).status == Status.WAITING


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_retry_waits_for_a_settler_cancelling_the_dependent_and_brings_it_back():
    """The race the lock closes: a settler read the parent as failed and is cancelling the
    dependent, uncommitted, when the parent is retried. The retry waits for that settler's
    row lock and then sees its cancel, instead of missing a dependent still waiting in its
    own snapshot (which would leave it cancelled for a parent already retried)."""
    import threading
    import time

    from django.db import connection, transaction

    parent = queued_job(max_attempts=1, priority=100)
    child = queued_job(depends_on=[parent.pk])
    fail(parent)
    cancelling = threading.Event()

    def settler() -> None:
        try:
            with transaction.atomic():
                assert services.settle_waiting_jobs() == (0, 1)
                cancelling.set()
                time.sleep(0.5)  # the retry starts meanwhile
        finally:
            connection.close()

    thread = threading.Thread(target=settler)
    thread.start()
    assert cancelling.wait(10)
    started = time.monotonic()
    services.retry_job(job_id=parent.pk)
    waited = time.monotonic() - started
    thread.join()
    assert fresh(child).status == Status.WAITING
    assert waited >= 0.2  # it did wait for the settler's commit
