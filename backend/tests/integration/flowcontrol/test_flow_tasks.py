"""Flow control through django.tasks: unique and concurrency keys per call."""

import pytest

from jobs.models import Job
from tests import example_tasks

pytestmark = pytest.mark.django_db


def test_a_unique_key_through_using_returns_the_active_jobs_result():
    first = example_tasks.add.using(unique_key="sum-once").enqueue(1, 2)
    again = example_tasks.add.using(unique_key="sum-once").enqueue(3, 4)
    assert again.id == first.id
    assert Job.objects.filter(unique_key="sum-once").count() == 1
    # The task itself keeps no key: a plain call is a new job.
    assert example_tasks.add.enqueue(5, 6).id != first.id


def test_a_concurrency_key_through_using_goes_on_the_job():
    result = example_tasks.add.using(concurrency_key="customer:7").enqueue(1, 2)
    assert Job.objects.get(pk=result.id).concurrency_key == "customer:7"
