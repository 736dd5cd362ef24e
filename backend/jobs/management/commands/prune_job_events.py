"""``manage.py prune_job_events --older-than DAYS``: delete old events of finished jobs."""

from collections import Counter
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet

from jobs.management.retention import PruneCommand
from jobs.models import FINISHED_STATUSES, JobEvent


class Command(PruneCommand):
    help = (
        "Delete events older than DAYS that belong to finished (succeeded, failed or "
        "cancelled) jobs, in batches "
        "of --batch-size rows, each batch its own short transaction. Events of queued and "
        "running jobs are never touched; the job rows stay."
    )
    older_than_help = "Delete events created more than DAYS days ago."
    batch_help = "Events deleted per transaction"
    default_batch_size = 1000

    def old_events(self, cutoff: datetime) -> QuerySet[JobEvent]:
        return JobEvent.objects.filter(created_at__lt=cutoff, job__status__in=FINISHED_STATUSES)

    def count(self, cutoff: datetime) -> Counter[str]:
        return Counter(events=self.old_events(cutoff).count())

    def delete_batch(self, cutoff: datetime, batch_size: int) -> tuple[int, Counter[str]]:
        old_events = self.old_events(cutoff)
        ids = list(old_events.order_by("id").values_list("id", flat=True)[:batch_size])
        if not ids:
            return 0, Counter()
        # The condition is applied again: a job retried since the ids were read keeps its
        # events. JobEvent has no dependents, so this is one DELETE statement.
        with transaction.atomic():
            events, _ = old_events.filter(id__in=ids).delete()
        return len(ids), Counter(events=events)

    def describe(self, counts: Counter[str], cutoff: datetime) -> str:
        return f"{counts['events']} events of finished jobs created before {cutoff.isoformat()}"
