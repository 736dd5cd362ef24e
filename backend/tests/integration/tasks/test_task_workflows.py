"""Workflows of django.tasks tasks: ``chain``, ``group``, ``then`` and ``step`` write their
jobs and edges at once, and a step reads its parents' return values from its context."""

import pytest
from django.db import transaction
from django.tasks import TaskResultStatus
from django.tasks.exceptions import InvalidTask

from jobs import errors, services
from jobs.backends import InvalidTaskArguments
from jobs.models import Job, JobDependency, Workflow
from jobs.workflows import chain, group, step
from tests import example_tasks
from tests.factories import succeeded_job
from tests.helpers import run_workers_in_burst

pytestmark = pytest.mark.django_db


def parents_of(result) -> list[str]:
    """The ids ``result``'s job waits for, in depends_on order."""
    return [
        str(parent)
        for parent in JobDependency.objects.filter(job_id=result.id)
        .order_by("id")
        .values_list("parent_id", flat=True)
    ]


def test_a_chain_makes_each_step_wait_for_the_one_before():
    run = chain(step(example_tasks.add, 1, 2), example_tasks.tagged, example_tasks.configured)
    run = run.enqueue(name="three")
    first, second, third = run.results
    assert parents_of(first) == []
    assert parents_of(second) == [first.id]
    assert parents_of(third) == [second.id]
    assert Workflow.objects.get(pk=run.id).name == "three"
    assert {job.workflow_id for job in Job.objects.all()} == {run.id}


def test_the_results_are_ready_and_name_their_steps():
    run = chain(step(example_tasks.add, 1, 2), step(example_tasks.add, 3, 4)).enqueue()
    assert [result.status for result in run.results] == [TaskResultStatus.READY] * 2
    assert run.refs == ["add", "add-2"]
    assert run.by_ref["add-2"].args == [3, 4]
    assert list(Job.objects.order_by("ref").values_list("ref", flat=True)) == ["add", "add-2"]


def test_only_the_first_step_is_queued():
    run = chain(example_tasks.tagged, example_tasks.tagged).enqueue()
    statuses = [Job.objects.get(pk=result.id).status for result in run.results]
    assert statuses == [Job.Status.QUEUED, Job.Status.WAITING]


def test_a_step_keeps_its_arguments_and_the_options_of_using():
    run = chain(step(example_tasks.add.using(queue_name="tasks-test", priority=10), 1, b=2))
    (result,) = run.enqueue().results
    job = Job.objects.get(pk=result.id)
    assert job.payload == {"args": [1], "kwargs": {"b": 2}}
    assert (job.queue, job.priority) == ("tasks-test", 60)


def test_a_group_then_a_callback_that_waits_for_every_member():
    members = [step(example_tasks.add, n, n) for n in range(3)]
    run = group(*members).then(example_tasks.collect).enqueue()
    *firsts, callback = run.results
    assert parents_of(callback) == [result.id for result in firsts]
    edge_policies = set(
        JobDependency.objects.filter(job_id=callback.id).values_list("on_parent_failure", flat=True)
    )
    assert edge_policies == {"cancel"}


def test_a_callback_on_finish_runs_whatever_became_of_the_members():
    run = group(example_tasks.tagged, example_tasks.tagged).then(example_tasks.collect, on="finish")
    callback = run.enqueue().results[-1]
    policies = JobDependency.objects.filter(job_id=callback.id).values_list(
        "on_parent_failure", flat=True
    )
    assert set(policies) == {"run"}


def test_the_step_after_a_group_in_a_chain_waits_for_every_member():
    run = chain(
        example_tasks.tagged,
        group(step(example_tasks.add, 1, 1), step(example_tasks.add, 2, 2)),
        example_tasks.collect,
    ).enqueue()
    first, left, right, last = run.results
    assert parents_of(left) == parents_of(right) == [first.id]
    assert parents_of(last) == [left.id, right.id]


def test_a_chain_inside_a_group_keeps_its_order():
    run = group(chain(example_tasks.tagged, example_tasks.tagged), example_tasks.tagged)
    run = run.then(example_tasks.collect).enqueue()
    first, second, alone, callback = run.results
    assert parents_of(second) == [first.id]
    assert parents_of(callback) == [second.id, alone.id]


def test_an_unknown_on_is_refused():
    with pytest.raises(ValueError, match="on must be"):
        group(example_tasks.tagged).then(example_tasks.collect, on="always")


def test_bad_arguments_write_nothing():
    with pytest.raises(InvalidTaskArguments, match="add-2"):
        chain(step(example_tasks.add, 1, 2), step(example_tasks.add, {1, 2}, 3)).enqueue()
    assert not Job.objects.exists()
    assert not Workflow.objects.exists()


def test_a_step_with_a_unique_key_is_refused():
    with pytest.raises(InvalidTask, match="unique_key"):
        chain(example_tasks.tagged.using(unique_key="k")).enqueue()
    assert not Job.objects.exists()


def test_a_workflow_rolls_back_with_the_callers_transaction():
    with pytest.raises(RuntimeError), transaction.atomic():
        chain(example_tasks.tagged, example_tasks.tagged).enqueue()
        raise RuntimeError("the caller's work failed")
    assert not Job.objects.exists()
    assert not Workflow.objects.exists()


def test_a_workflow_too_large_is_refused_and_writes_nothing(monkeypatch):
    monkeypatch.setattr("jobs.services.workflows.WORKFLOW_JOBS_MAX", 2)
    with pytest.raises(errors.InvalidWorkflow):
        chain(example_tasks.tagged, example_tasks.tagged, example_tasks.tagged).enqueue()
    assert not Job.objects.exists()


def run_to_the_end(rounds: int) -> None:
    """Workers in this process, a round per step: each round runs what is claimable, then
    settles the jobs waiting on it (a worker process's maintenance does that by itself)."""
    for _ in range(rounds):
        run_workers_in_burst()
        services.settle_waiting_jobs()


@pytest.mark.django_db(transaction=True)
def test_a_chain_passes_each_return_value_to_the_next_step():
    run = chain(
        step(example_tasks.add, 1, 2),
        step(example_tasks.plus_parent, 10),
        step(example_tasks.plus_parent, 100),
    ).enqueue()
    run_to_the_end(3)
    last = run.results[-1]
    last.refresh()
    assert (last.status, last.return_value) == (TaskResultStatus.SUCCESSFUL, 113)


@pytest.mark.django_db(transaction=True)
def test_a_callback_reads_every_members_return_value():
    members = [step(example_tasks.add, n, 0) for n in range(1, 5)]
    run = group(*members).then(example_tasks.collect).enqueue()
    run_to_the_end(2)
    callback = run.results[-1]
    callback.refresh()
    assert callback.return_value == {"count": 4, "sum": 10}


def test_a_registered_handlers_context_reads_the_parents_results_too():
    from jobs.handlers import JobContext

    parent = succeeded_job(result=3)
    child, _ = services.create_job(type="demo.success", depends_on=[parent.pk])
    context = JobContext(
        job_id=child.id, type=child.type, payload={}, attempt=1, worker_id="w", lease_seconds=30
    )
    assert context.parent_results == [3]
