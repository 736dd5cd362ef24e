"""Unfold admin: inspect jobs and their timelines, retry failed jobs.

Nothing here edits a job: every field is read-only, there is no add and no delete, and
the one write (retry) goes through ``services.retry_job`` like the API. Events are an
append-only log, so they cannot be added, changed or deleted either.
"""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from unfold.admin import ModelAdmin, TabularInline
from unfold.decorators import action, display

from . import services
from .models import Job, JobEvent

# Tuples, not lists: the admin options are typed as sequences of names, and a tuple of
# names fits them where a list[str] would not (lists are invariant).
JOB_FIELDS = tuple(field.name for field in Job._meta.concrete_fields)
EVENT_FIELDS = ("id", "job", "type", "attempt", "worker_id", "message", "data", "created_at")


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class JobEventInline(ReadOnlyAdminMixin, TabularInline):
    model = JobEvent
    # Every event column but the job: the inline sits on that job's page.
    fields = readonly_fields = tuple(name for name in EVENT_FIELDS if name != "job")
    ordering = ["id"]
    extra = 0
    can_delete = False
    show_change_link = False
    per_page = 50


@admin.register(Job)
class JobAdmin(ReadOnlyAdminMixin, ModelAdmin):
    list_display = [
        "id",
        "status",
        "type",
        "priority",
        "attempts_of_max",
        "available_at",
        "locked_by",
        "finished_at",
    ]
    list_filter = ["status", "type"]
    search_fields = ["id", "type", "idempotency_key"]
    ordering = ["-created_at", "-id"]
    fields = JOB_FIELDS
    readonly_fields = JOB_FIELDS
    inlines = [JobEventInline]
    actions = ["retry_failed_jobs"]

    @display(description="Attempts", ordering="attempts")
    def attempts_of_max(self, job: Job) -> str:
        return f"{job.attempts}/{job.max_attempts}"

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("jobs.change_job")

    @action(description="Retry selected failed jobs", permissions=["retry"])
    def retry_failed_jobs(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        retried = skipped = 0
        for job_id in queryset.values_list("pk", flat=True):
            try:
                services.retry_job(job_id=job_id)
            except (services.JobNotFound, services.InvalidTransition):
                skipped += 1
            else:
                retried += 1
        level = messages.SUCCESS if retried and not skipped else messages.WARNING
        self.message_user(
            request,
            f"Retried {retried} failed job(s); skipped {skipped} that were not failed.",
            level,
        )


@admin.register(JobEvent)
class JobEventAdmin(ReadOnlyAdminMixin, ModelAdmin):
    list_display = ["id", "job_id", "type", "attempt", "worker_id", "message", "created_at"]
    list_filter = ["type"]
    search_fields = ["=job__id", "worker_id", "message"]
    ordering = ["-id"]
    fields = EVENT_FIELDS
    readonly_fields = EVENT_FIELDS
    show_full_result_count = False
