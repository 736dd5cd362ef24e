"""``manage.py prune_jobs --older-than DAYS``: delete finished jobs and their events."""

from collections import Counter
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet

from jobs.management.retention import PruneCommand
from jobs.models import FINISHED_STATUSES, Job, JobEvent


class Command(PruneCommand):
    help = (
        "Delete finished (succeeded, failed or cancelled) jobs that finished more than DAYS "
        "days ago, with their "
        "events, --batch-size jobs per short transaction. Queued and running jobs are never "
        "deleted."
    )
    older_than_help = "Delete jobs whose finished_at is more than DAYS days ago."
    batch_help = "Jobs deleted per transaction, with their events"
    default_batch_size = 500

    def old_jobs(self, cutoff: datetime) -> QuerySet[Job]:
        return Job.objects.filter(status__in=FINISHED_STATUSES, finished_at__lt=cutoff)

    def count(self, cutoff: datetime) -> Counter[str]:
        old_jobs = self.old_jobs(cutoff)
        return Counter(
            jobs=old_jobs.count(), events=JobEvent.objects.filter(job__in=old_jobs).count()
        )

    def delete_batch(self, cutoff: datetime, batch_size: int) -> tuple[int, Counter[str]]:
        with transaction.atomic():
            # Lock the batch, so a manual retry of one of these jobs waits for this
            # transaction and then finds no job, instead of losing its events halfway.
            # Rows locked by someone else (a retry in progress) are left for next time.
            ids = list(
                self.old_jobs(cutoff)
                .select_for_update(skip_locked=True)
                .order_by("finished_at", "id")
                .values_list("id", flat=True)[:batch_size]
            )
            if not ids:
                return 0, Counter()
            events, _ = JobEvent.objects.filter(job_id__in=ids).delete()
            jobs, _ = Job.objects.filter(id__in=ids).delete()
        return len(ids), Counter(jobs=jobs, events=events)

    def describe(self, counts: Counter[str], cutoff: datetime) -> str:
        return (
            f"{counts['jobs']} finished jobs (finished before {cutoff.isoformat()}) "
            f"and their {counts['events']} events"
        )
