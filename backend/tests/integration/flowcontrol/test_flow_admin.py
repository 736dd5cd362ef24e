"""Flow control in the admin: the same actions as the API, through the services."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission

from jobs import services
from jobs.models import Job, QueueSettings, ScheduleState

pytestmark = pytest.mark.django_db


def test_admin_pauses_and_resumes_queues(admin_client):
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    url = "/admin/jobs/queuesettings/"
    for action, paused in (("pause_queues", True), ("resume_queues", False)):
        response = admin_client.post(url, {"action": action, ACTION_CHECKBOX_NAME: ["emails"]})
        assert response.status_code == 302
        assert (QueueSettings.objects.get(name="emails").paused_at is not None) is paused


def test_admin_adds_a_queue_limit_through_the_service(admin_client):
    response = admin_client.post(
        "/admin/jobs/queuesettings/add/",
        {"name": "reports", "concurrency_limit": 3, "rate_limit": "", "rate_period_seconds": ""},
    )
    assert response.status_code == 302, response.content[:500]
    assert QueueSettings.objects.get(name="reports").concurrency_limit == 3


def test_admin_triggers_pauses_and_resumes_schedules(admin_client, settings):
    settings.JOB_SCHEDULES = {"hourly": {"type": "demo.success", "cron": "0 * * * *"}}
    services.enqueue_due_ticks()
    url = "/admin/jobs/schedulestate/"
    admin_client.post(url, {"action": "trigger_schedules", ACTION_CHECKBOX_NAME: ["hourly"]})
    assert ScheduleState.objects.get(name="hourly").last_job_id is not None
    admin_client.post(url, {"action": "pause_schedules", ACTION_CHECKBOX_NAME: ["hourly"]})
    assert ScheduleState.objects.get(name="hourly").paused_at is not None
    admin_client.post(url, {"action": "resume_schedules", ACTION_CHECKBOX_NAME: ["hourly"]})
    assert ScheduleState.objects.get(name="hourly").paused_at is None


def test_admin_triggers_no_schedule_when_one_of_those_selected_cannot_run(admin_client, settings):
    settings.JOB_SCHEDULES = {
        "hourly": {"type": "demo.success", "cron": "0 * * * *"},
        "nightly": {"type": "demo.success", "cron": "0 3 * * *"},
    }
    services.enqueue_due_ticks()
    before = {row.name: row.last_job_id for row in ScheduleState.objects.all()}
    settings.JOB_SCHEDULES = {
        "hourly": {"type": "demo.success", "cron": "0 * * * *"},
        "nightly": {"type": "demo.success", "cron": "0 3 * * *", "priority": 10**9},
    }
    response = admin_client.post(
        "/admin/jobs/schedulestate/",
        {"action": "trigger_schedules", ACTION_CHECKBOX_NAME: ["hourly", "nightly"]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Nothing enqueued" in response.content.decode()
    assert "nightly" in response.content.decode()
    assert {row.name: row.last_job_id for row in ScheduleState.objects.all()} == before
    assert not Job.objects.filter(metadata__triggered_via="admin").exists()


def test_admin_queue_actions_need_change_job(client, django_user_model):
    user = django_user_model.objects.create_user("v", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_job"))
    client.force_login(user)
    services.set_queue_limits(queue="emails", concurrency_limit=2)
    assert client.get("/admin/jobs/queuesettings/").status_code == 200
    client.post(
        "/admin/jobs/queuesettings/",
        {"action": "pause_queues", ACTION_CHECKBOX_NAME: ["emails"]},
    )
    assert QueueSettings.objects.get(name="emails").paused_at is None
