"""Job dependencies through django.tasks: ``task.using(depends_on=[...])``."""

import pytest
from django.tasks import TaskResultStatus

from jobs import errors
from jobs.models import Job, JobDependency
from tests import example_tasks

pytestmark = pytest.mark.django_db


def test_a_task_enqueued_with_depends_on_waits_for_the_given_results():
    parent = example_tasks.add.enqueue(1, 2)
    child = example_tasks.add.using(depends_on=[parent]).enqueue(3, 4)
    assert Job.objects.get(pk=child.id).status == Job.Status.WAITING
    assert list(
        JobDependency.objects.filter(job_id=child.id).values_list("parent_id", flat=True)
    ) == [Job.objects.get(pk=parent.id).pk]
    assert example_tasks.add.get_result(child.id).status == TaskResultStatus.READY


def test_the_run_policy_through_using_goes_on_the_edges():
    parent = example_tasks.add.enqueue(1, 2)
    child = example_tasks.add.using(depends_on=[parent.id], on_parent_failure="run").enqueue(3, 4)
    edge = JobDependency.objects.get(job_id=child.id)
    assert edge.on_parent_failure == "run"


def test_an_unknown_parent_is_refused():
    with pytest.raises(errors.InvalidDependencies):
        example_tasks.add.using(depends_on=["00000000-0000-0000-0000-000000000000"]).enqueue(1, 2)
