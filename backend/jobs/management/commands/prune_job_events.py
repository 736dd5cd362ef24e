"""``manage.py prune_job_events --older-than DAYS``: delete old events of finished jobs."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.utils import timezone

from jobs.models import Job, JobEvent

FINISHED = [Job.Status.SUCCEEDED, Job.Status.FAILED]


def positive_int(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError(raw)
    return value


def non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError(raw)
    return value


def add_prune_arguments(
    parser: CommandParser, *, older_than_help: str, default_batch_size: int, batch_help: str
) -> None:
    """The options both retention commands share."""
    parser.add_argument(
        "--older-than", type=non_negative_int, required=True, metavar="DAYS", help=older_than_help
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=default_batch_size,
        help=f"{batch_help} (default: {default_batch_size}).",
    )
    parser.add_argument("--dry-run", action="store_true", help="Only count what would be deleted.")


class Command(BaseCommand):
    help = (
        "Delete events older than DAYS that belong to succeeded or failed jobs, in batches "
        "of --batch-size rows, each batch its own short transaction. Events of queued and "
        "running jobs are never touched; the job rows stay."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_prune_arguments(
            parser,
            older_than_help="Delete events created more than DAYS days ago.",
            default_batch_size=1000,
            batch_help="Events deleted per transaction",
        )

    def handle(self, *args: object, older_than: int, batch_size: int, dry_run: bool, **options):
        cutoff = timezone.now() - timedelta(days=older_than)
        old_events = JobEvent.objects.filter(created_at__lt=cutoff, job__status__in=FINISHED)
        if dry_run:
            count = old_events.count()
            self.stdout.write(
                f"Would delete {count} events of finished jobs created before "
                f"{cutoff.isoformat()} (dry run, nothing deleted)."
            )
            return
        deleted = batches = 0
        while True:
            ids = list(old_events.order_by("id").values_list("id", flat=True)[:batch_size])
            if not ids:
                break
            # The condition is applied again: a job retried since the ids were read keeps
            # its events. JobEvent has no dependents, so this is one DELETE statement.
            with transaction.atomic():
                count, _ = old_events.filter(id__in=ids).delete()
            deleted += count
            batches += 1
            if len(ids) < batch_size:
                break
        self.stdout.write(
            f"Deleted {deleted} events of finished jobs created before {cutoff.isoformat()} "
            f"in {batches} batch(es)."
        )
