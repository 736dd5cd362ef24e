"""``manage.py prune_jobs --older-than DAYS``: delete finished jobs and their events."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.utils import timezone

from jobs.management.commands.prune_job_events import FINISHED, add_prune_arguments
from jobs.models import Job, JobEvent


class Command(BaseCommand):
    help = (
        "Delete succeeded and failed jobs that finished more than DAYS days ago, with their "
        "events, --batch-size jobs per short transaction. Queued and running jobs are never "
        "deleted."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_prune_arguments(
            parser,
            older_than_help="Delete jobs whose finished_at is more than DAYS days ago.",
            default_batch_size=500,
            batch_help="Jobs deleted per transaction, with their events",
        )

    def handle(self, *args: object, older_than: int, batch_size: int, dry_run: bool, **options):
        cutoff = timezone.now() - timedelta(days=older_than)
        old_jobs = Job.objects.filter(status__in=FINISHED, finished_at__lt=cutoff)
        if dry_run:
            jobs = old_jobs.count()
            events = JobEvent.objects.filter(job__in=old_jobs).count()
            self.stdout.write(
                f"Would delete {jobs} finished jobs (finished before {cutoff.isoformat()}) "
                f"and their {events} events (dry run, nothing deleted)."
            )
            return
        deleted_jobs = deleted_events = batches = 0
        while True:
            with transaction.atomic():
                # Lock the batch, so a manual retry of one of these jobs waits for this
                # transaction and then finds no job, instead of losing its events halfway.
                # Rows locked by someone else (a retry in progress) are left for next time.
                ids = list(
                    old_jobs.select_for_update(skip_locked=True)
                    .order_by("finished_at", "id")
                    .values_list("id", flat=True)[:batch_size]
                )
                if not ids:
                    break
                events, _ = JobEvent.objects.filter(job_id__in=ids).delete()
                jobs, _ = Job.objects.filter(id__in=ids).delete()
            deleted_events += events
            deleted_jobs += jobs
            batches += 1
            if len(ids) < batch_size:
                break
        self.stdout.write(
            f"Deleted {deleted_jobs} finished jobs (finished before {cutoff.isoformat()}) "
            f"and their {deleted_events} events in {batches} batch(es)."
        )
