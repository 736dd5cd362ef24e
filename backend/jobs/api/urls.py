"""The REST API's routes, relative to wherever the project includes ``jobs.urls``."""

from django.urls import path, re_path

from . import views

# Job ids are matched as plain strings and parsed in the views, so a malformed id is the
# same JSON 404 as an unknown one instead of Django's HTML 404.
urlpatterns = [
    path("", views.ApiIndexView.as_view(), name="api-index"),
    path("health/", views.HealthView.as_view(), name="health"),
    path("config/", views.ConfigView.as_view(), name="config"),
    path("jobs/", views.JobListCreateView.as_view(), name="job-list"),
    path("jobs/stats/", views.JobStatsView.as_view(), name="job-stats"),
    path("jobs/throughput/", views.JobThroughputView.as_view(), name="job-throughput"),
    path("jobs/types/", views.JobTypesView.as_view(), name="job-types"),
    path("jobs/bulk/", views.JobBulkCreateView.as_view(), name="job-bulk-create"),
    path("jobs/cancel/", views.JobBulkCancelView.as_view(), name="job-bulk-cancel"),
    path("jobs/retry/", views.JobBulkRetryView.as_view(), name="job-bulk-retry"),
    path("jobs/lookup/", views.JobLookupView.as_view(), name="job-lookup"),
    path("jobs/<str:id>/", views.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<str:id>/attempts/", views.JobAttemptsView.as_view(), name="job-attempts"),
    path("jobs/<str:id>/events/", views.JobEventsView.as_view(), name="job-events"),
    path("jobs/<str:id>/retry/", views.JobRetryView.as_view(), name="job-retry"),
    path("jobs/<str:id>/cancel/", views.JobCancelView.as_view(), name="job-cancel"),
    path("jobs/<str:id>/run-now/", views.JobRunNowView.as_view(), name="job-run-now"),
    path("job-events/", views.JobEventListView.as_view(), name="job-event-list"),
    path("workflows/", views.WorkflowListCreateView.as_view(), name="workflow-list"),
    path("workflows/<str:id>/", views.WorkflowDetailView.as_view(), name="workflow-detail"),
    path("auth/session/", views.SessionView.as_view(), name="auth-session"),
    path("auth/login/", views.LoginView.as_view(), name="auth-login"),
    path("auth/logout/", views.LogoutView.as_view(), name="auth-logout"),
    path("workers/", views.WorkersView.as_view(), name="worker-list"),
    path("queues/", views.QueueListView.as_view(), name="queue-list"),
    path("queues/<str:name>/", views.QueueDetailView.as_view(), name="queue-detail"),
    path("queues/<str:name>/pause/", views.QueuePauseView.as_view(), name="queue-pause"),
    path("queues/<str:name>/resume/", views.QueueResumeView.as_view(), name="queue-resume"),
    path("schedules/", views.ScheduleListView.as_view(), name="schedule-list"),
    path("schedules/<str:name>/pause/", views.SchedulePauseView.as_view(), name="schedule-pause"),
    path(
        "schedules/<str:name>/resume/", views.ScheduleResumeView.as_view(), name="schedule-resume"
    ),
    path(
        "schedules/<str:name>/trigger/",
        views.ScheduleTriggerView.as_view(),
        name="schedule-trigger",
    ),
    # Any other path under the prefix: a JSON 404 whatever the method (see api_not_found).
    re_path(r"^", views.api_not_found),
]
