"""What the retention commands (``prune_job_events``, ``prune_jobs``) share: the options,
the cutoff, the dry run and the batched delete loop, each batch its own short transaction."""

from collections import Counter
from datetime import datetime, timedelta

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone


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


class PruneCommand(BaseCommand):
    """``--older-than DAYS [--batch-size N] [--dry-run]``.

    A subclass says what is older than the cutoff (``count``), how to delete one batch of it
    (``delete_batch``) and how to name it (``describe``); this class repeats ``delete_batch``
    until a batch comes back short, so no transaction holds more than one batch.
    """

    older_than_help: str
    batch_help: str
    default_batch_size: int

    def count(self, cutoff: datetime) -> Counter[str]:
        """What a run would delete, by kind (``jobs``, ``events``)."""
        raise NotImplementedError

    def delete_batch(self, cutoff: datetime, batch_size: int) -> tuple[int, Counter[str]]:
        """Delete up to ``batch_size`` rows in one transaction: (rows picked, deleted by kind)."""
        raise NotImplementedError

    def describe(self, counts: Counter[str], cutoff: datetime) -> str:
        raise NotImplementedError

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=non_negative_int,
            required=True,
            metavar="DAYS",
            help=self.older_than_help,
        )
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=self.default_batch_size,
            help=f"{self.batch_help} (default: {self.default_batch_size}).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Only count what would be deleted."
        )

    def handle(
        self, *args: object, older_than: int, batch_size: int, dry_run: bool, **options: object
    ) -> None:
        cutoff = timezone.now() - timedelta(days=older_than)
        if dry_run:
            counts = self.describe(self.count(cutoff), cutoff)
            self.stdout.write(f"Would delete {counts} (dry run, nothing deleted).")
            return
        deleted: Counter[str] = Counter()
        batches = 0
        while True:
            picked, counts_deleted = self.delete_batch(cutoff, batch_size)
            if not picked:
                break
            deleted += counts_deleted
            batches += 1
            if picked < batch_size:
                break
        self.stdout.write(f"Deleted {self.describe(deleted, cutoff)} in {batches} batch(es).")
