"""Admin: inspect jobs and their timelines, retry failed jobs, cancel jobs; pause, resume
and limit queues, edit per-key concurrency limits, pause, resume and trigger schedules.

Styled by django-unfold when the project installs it ("unfold" in INSTALLED_APPS), by
Django's own admin otherwise; the behaviour is the same.

Nothing here edits a job: every field is read-only, there is no add and no delete, and
the one write (retry) goes through ``services.retry_job`` like the API. Events are an
append-only log, so they cannot be added, changed or deleted either.
"""

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

# unfold's classes and decorators extend Django's and take the same options used here.
if TYPE_CHECKING or "unfold" in settings.INSTALLED_APPS:
    from unfold.admin import ModelAdmin, TabularInline
    from unfold.decorators import action, display
else:
    from django.contrib.admin import ModelAdmin, TabularInline, action, display

from . import selectors, services
from .errors import ScheduleInvalid, ScheduleNotFound
from .models import (
    ConcurrencyKeyLimit,
    Job,
    JobEvent,
    JobStatus,
    QueueSettings,
    ScheduleState,
    Workflow,
)

# Parents and children a job's page links to (a group's callback has thousands).
RELATIVES_SHOWN = 100


def admin_actor(request: HttpRequest) -> services.Actor:
    """The signed-in staff user, for the event of the action they take here."""
    return services.Actor(user=request.user.get_username(), via="admin")


def zoned(value: datetime | None) -> str:
    """A time as the admin shows it: in the current time zone (``TIME_ZONE``), with its
    offset and name, so nobody has to guess which clock it is on."""
    if value is None:
        return "-"
    local = timezone.localtime(value)
    return (
        f"{local.isoformat(sep=' ', timespec='seconds')} ({timezone.get_current_timezone_name()})"
    )


def zoned_field(name: str) -> Callable[[Any, Any], str]:
    """A read-only admin column or field showing the datetime ``name`` with ``zoned``."""
    field = Job._meta.get_field(name) if name != "event_created_at" else None
    label = str(getattr(field, "verbose_name", "created at"))

    @display(description=label[:1].upper() + label[1:], ordering=name.removeprefix("event_"))
    def show(admin: Any, obj: Any) -> str:
        return zoned(getattr(obj, name.removeprefix("event_")))

    show.__name__ = f"{name}_zoned"
    return show


def _zoned_names(names: tuple[str, ...], datetimes: set[str]) -> tuple[str, ...]:
    return tuple(f"{name}_zoned" if name in datetimes else name for name in names)


# Tuples, not lists: the admin options are typed as sequences of names, and a tuple of
# names fits them where a list[str] would not (lists are invariant). Every datetime is
# shown through its *_zoned field (see zoned).
JOB_DATETIMES = {
    field.name
    for field in Job._meta.concrete_fields
    if field.get_internal_type() == "DateTimeField"
}
JOB_FIELDS = (
    *_zoned_names(tuple(field.name for field in Job._meta.concrete_fields), JOB_DATETIMES),
    "waits_for",
    "waited_for_by",
)
EVENT_FIELDS = ("id", "job", "type", "attempt", "worker_id", "message", "data", "created_at_zoned")


class ZonedEventTimes:
    created_at_zoned = zoned_field("event_created_at")


class ZonedJobTimes:
    available_at_zoned = zoned_field("available_at")
    locked_until_zoned = zoned_field("locked_until")
    created_at_zoned = zoned_field("created_at")
    updated_at_zoned = zoned_field("updated_at")
    finished_at_zoned = zoned_field("finished_at")
    cancel_requested_at_zoned = zoned_field("cancel_requested_at")
    claimed_at_zoned = zoned_field("claimed_at")


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class JobEventInline(ZonedEventTimes, ReadOnlyAdminMixin, TabularInline):
    model = JobEvent
    # Every event column but the job: the inline sits on that job's page.
    fields = readonly_fields = tuple(name for name in EVENT_FIELDS if name != "job")
    ordering = ["id"]
    extra = 0
    can_delete = False
    show_change_link = False
    per_page = 50


@admin.register(Job)
class JobAdmin(ZonedJobTimes, ReadOnlyAdminMixin, ModelAdmin):
    list_display = [
        "id",
        "status",
        "type",
        "queue",
        "priority",
        "attempts_of_max",
        "available_at_zoned",
        "locked_by",
        "finished_at_zoned",
    ]
    list_filter = ["status", "queue", "type"]
    # Every key an operator may hold (a concurrency key from a log line), the error text and
    # the metadata as text (a request id, any value a client attached): what they search by.
    search_fields = [
        "id",
        "type",
        "idempotency_key",
        "unique_key",
        "concurrency_key",
        "last_error",
        "metadata",
    ]
    ordering = ["-created_at", "-id"]
    fields = JOB_FIELDS
    readonly_fields = JOB_FIELDS
    inlines = [JobEventInline]
    actions = ["retry_selected_jobs", "cancel_selected_jobs"]

    @display(description="Attempts", ordering="attempts")
    def attempts_of_max(self, job: Job) -> str:
        return f"{job.attempts}/{job.max_attempts}"

    def _job_links(self, jobs: list[tuple[Any, str, str]]) -> SafeString:
        url = f"{self.admin_site.name}:jobs_job_change"
        return format_html_join(
            ", ",
            '<a href="{}">{} {}</a> ({})',
            ((reverse(url, args=[pk]), kind, str(pk)[:8], status) for pk, kind, status in jobs),
        )

    def get_object(
        self, request: HttpRequest, object_id: str, from_field: str | None = None
    ) -> Any:
        job = super().get_object(request, object_id, from_field)
        if job is not None:
            # One read for both fields below.
            job.relatives = selectors.job_relatives(job.pk, limit=RELATIVES_SHOWN)
        return job

    @display(description="Waits for")
    def waits_for(self, job: Job) -> SafeString | str:
        parents = job.relatives["parents"]  # type: ignore[attr-defined]  # set by get_object
        return self._job_links(parents) if parents else "-"

    @display(description="Waited for by")
    def waited_for_by(self, job: Job) -> SafeString | str:
        relatives = job.relatives  # type: ignore[attr-defined]  # set by get_object
        if not relatives["children"]:
            return "-"
        links = self._job_links(relatives["children"])
        more = relatives["children_total"] - len(relatives["children"])
        return format_html("{} and {} more", links, more) if more > 0 else links

    def has_change_jobs_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("jobs.change_job")

    def _confirmed(
        self,
        request: HttpRequest,
        queryset: QuerySet[Job],
        *,
        action: str,
        question: str,
        explanation: str,
        confirm_label: str,
    ) -> TemplateResponse | None:
        """``None`` once the operator confirmed; else the page asking, naming the count."""
        if request.POST.get("confirm") == "yes":
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": question,
            "question": question,
            "explanation": explanation,
            "confirm_label": confirm_label,
            "action": action,
            "selected": list(queryset.values_list("pk", flat=True)),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/jobs/job/confirm_bulk_action.html", context)

    @action(description="Retry selected failed or cancelled jobs", permissions=["change_jobs"])
    def retry_selected_jobs(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> TemplateResponse | None:
        eligible = queryset.filter(status__in=[JobStatus.FAILED, JobStatus.CANCELLED]).count()
        page = self._confirmed(
            request,
            queryset,
            action="retry_selected_jobs",
            question=f"Retry {eligible} of the {queryset.count()} selected job(s)?",
            explanation="Failed and cancelled jobs go back to the queue with a fresh attempt "
            "budget; the others are left as they are.",
            confirm_label=f"Yes, retry {eligible} job(s)",
        )
        if page is not None:
            return page
        selected = list(queryset.values_list("pk", flat=True))
        outcome = services.retry_jobs(ids=selected, actor=admin_actor(request))
        retried, held = outcome.retried, outcome.held_count
        level = messages.SUCCESS if retried == len(selected) else messages.WARNING
        text = f"Retried {retried} job(s); skipped {len(selected) - retried - held} that were "
        text += "neither failed nor cancelled."
        if held:
            text += f" {held} were left alone: another job holds their unique_key."
        self.message_user(request, text, level)
        return None

    @action(description="Cancel selected jobs", permissions=["change_jobs"])
    def cancel_selected_jobs(
        self, request: HttpRequest, queryset: QuerySet[Job]
    ) -> TemplateResponse | None:
        queued = queryset.filter(status=JobStatus.QUEUED).count()
        running = queryset.filter(status=JobStatus.RUNNING).count()
        page = self._confirmed(
            request,
            queryset,
            action="cancel_selected_jobs",
            question=f"Cancel {queued + running} of the {queryset.count()} selected job(s)?",
            explanation=f"{queued} queued job(s) are cancelled at once; {running} running "
            "job(s) are asked to stop and end as cancelled within one heartbeat. Finished "
            "jobs are left as they are.",
            confirm_label=f"Yes, cancel {queued + running} job(s)",
        )
        if page is not None:
            return page
        selected = list(queryset.values_list("pk", flat=True))
        outcome = services.cancel_jobs(ids=selected, actor=admin_actor(request))
        self.message_user(
            request,
            f"Cancelled {outcome.cancelled} queued job(s); asked {outcome.cancel_requested} "
            f"running job(s) to stop.",
            messages.SUCCESS,
        )
        return None


@admin.register(JobEvent)
class JobEventAdmin(ZonedEventTimes, ReadOnlyAdminMixin, ModelAdmin):
    list_display = ["id", "job_id", "type", "attempt", "worker_id", "message", "created_at_zoned"]
    list_filter = ["type"]
    search_fields = ["=job__id", "worker_id", "message"]
    ordering = ["-id"]
    fields = EVENT_FIELDS
    readonly_fields = EVENT_FIELDS
    show_full_result_count = False


@admin.register(Workflow)
class WorkflowAdmin(ReadOnlyAdminMixin, ModelAdmin):
    """Workflows as they were written; their jobs are on the jobs' pages (read-only, as
    jobs are: a workflow is written through the API or ``jobs.workflows``)."""

    list_display = ["id", "name", "created_at"]
    search_fields = ["=id", "name"]
    ordering = ["-created_at", "-id"]
    fields = readonly_fields = ("id", "name", "created_at", "members")

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.has_perm("jobs.view_job"))

    @display(description="Jobs (creation order)")
    def members(self, workflow: Workflow) -> SafeString | str:
        detail = selectors.workflow_detail(workflow.pk)
        url = f"{self.admin_site.name}:jobs_job_change"
        shown = detail["members"][:RELATIVES_SHOWN]
        links = format_html_join(
            ", ",
            '<a href="{}">{}</a> ({})',
            (
                (
                    reverse(url, args=[member["id"]]),
                    member["ref"] or str(member["id"])[:8],
                    member["status"],
                )
                for member in shown
            ),
        )
        more = detail["jobs"] - len(shown)
        return format_html("{} and {} more", links, more) if more > 0 else (links or "-")


# --- Flow control ------------------------------------------------------------


class JobPermissionsMixin:
    """Flow control is the jobs' business: viewing needs ``view_job``, changing
    ``change_job``, as in the API."""

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.has_perm("jobs.view_job"))

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.has_perm("jobs.change_job"))

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.has_perm("jobs.change_job"))

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_jobs_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("jobs.change_job"))


@admin.register(QueueSettings)
class QueueSettingsAdmin(JobPermissionsMixin, ModelAdmin):
    list_display = ["name", "paused_at", "concurrency_limit", "rate_limit", "rate_period_seconds"]
    fields = ["name", "concurrency_limit", "rate_limit", "rate_period_seconds", "paused_at"]
    readonly_fields = ["paused_at"]
    ordering = ["name"]
    actions = ["pause_queues", "resume_queues"]

    def get_readonly_fields(self, request: HttpRequest, obj: object = None) -> list[str]:
        return ["name", "paused_at"] if obj is not None else ["paused_at"]

    def save_model(
        self, request: HttpRequest, obj: QueueSettings, form: object, change: bool
    ) -> None:
        # Through the service, like PATCH /api/queues/{name}/ (it wakes the workers).
        services.set_queue_limits(
            queue=obj.name,
            concurrency_limit=obj.concurrency_limit,
            rate_limit=obj.rate_limit,
            rate_period_seconds=obj.rate_period_seconds,
            actor=admin_actor(request),
        )

    @action(description="Pause selected queues", permissions=["change_jobs"])
    def pause_queues(self, request: HttpRequest, queryset: QuerySet[QueueSettings]) -> None:
        for queue in queryset:
            services.pause_queue(queue=queue.name, actor=admin_actor(request))
        self.message_user(request, f"Paused {queryset.count()} queue(s).", messages.SUCCESS)

    @action(description="Resume selected queues", permissions=["change_jobs"])
    def resume_queues(self, request: HttpRequest, queryset: QuerySet[QueueSettings]) -> None:
        for queue in queryset:
            services.resume_queue(queue=queue.name, actor=admin_actor(request))
        self.message_user(request, f"Resumed {queryset.count()} queue(s).", messages.SUCCESS)


@admin.register(ConcurrencyKeyLimit)
class ConcurrencyKeyLimitAdmin(JobPermissionsMixin, ModelAdmin):
    list_display = ["pattern", "limit"]
    ordering = ["pattern"]

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.has_perm("jobs.change_job"))


@admin.register(ScheduleState)
class ScheduleStateAdmin(JobPermissionsMixin, ModelAdmin):
    """The schedules a worker has seen (declared in JOB_SCHEDULES)."""

    list_display = ["name", "paused_at", "last_enqueued_tick_at", "last_job_id"]
    readonly_fields = [
        "name",
        "paused_at",
        "last_tick_at",
        "last_enqueued_tick_at",
        "last_job_id",
        "updated_at",
    ]
    ordering = ["name"]
    actions = ["pause_schedules", "resume_schedules", "trigger_schedules"]

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False  # declared in settings

    @action(description="Pause selected schedules", permissions=["change_jobs"])
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet[ScheduleState]) -> None:
        for schedule in queryset:
            services.pause_schedule(name=schedule.name, actor=admin_actor(request))
        self.message_user(request, f"Paused {queryset.count()} schedule(s).", messages.SUCCESS)

    @action(description="Resume selected schedules", permissions=["change_jobs"])
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet[ScheduleState]) -> None:
        for schedule in queryset:
            services.resume_schedule(name=schedule.name, actor=admin_actor(request))
        self.message_user(request, f"Resumed {queryset.count()} schedule(s).", messages.SUCCESS)

    @action(description="Trigger selected schedules now", permissions=["change_jobs"])
    def trigger_schedules(self, request: HttpRequest, queryset: QuerySet[ScheduleState]) -> None:
        # All or nothing: one schedule that cannot run (or is no longer declared) leaves
        # the others' jobs unwritten too, and the operator reads why.
        try:
            with transaction.atomic():
                for schedule in queryset:
                    services.trigger_schedule(name=schedule.name, actor=admin_actor(request))
        except (ScheduleInvalid, ScheduleNotFound) as error:
            self.message_user(request, f"Nothing enqueued: {error}", messages.ERROR)
            return
        self.message_user(
            request, f"Enqueued one job of {queryset.count()} schedule(s).", messages.SUCCESS
        )
