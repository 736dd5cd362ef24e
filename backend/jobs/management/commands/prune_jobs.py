"""``manage.py prune_jobs --older-than DAYS``: delete finished jobs and their events, and
the workflows they leave without a job."""

from collections import Counter
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet

from jobs.management.retention import PruneCommand
from jobs.models import FINISHED_STATUSES, Job, JobEvent, Workflow


class Command(PruneCommand):
    help = (
        "Delete finished (succeeded, failed or cancelled) jobs that finished more than DAYS "
        "days ago, with their "
        "events, --batch-size jobs per short transaction, and the workflows left without a "
        "job. Queued, running and waiting jobs are never deleted."
    )
    older_than_help = "Delete jobs whose finished_at is more than DAYS days ago."
    batch_help = "Jobs deleted per transaction, with their events"
    default_batch_size = 500

    def old_jobs(self, cutoff: datetime) -> QuerySet[Job]:
        return Job.objects.filter(status__in=FINISHED_STATUSES, finished_at__lt=cutoff)

    def count(self, cutoff: datetime) -> Counter[str]:
        old_jobs = self.old_jobs(cutoff)
        kept = Job.objects.filter(workflow=OuterRef("pk")).exclude(pk__in=old_jobs.values("pk"))
        emptied = Workflow.objects.filter(Exists(old_jobs.filter(workflow=OuterRef("pk")))).exclude(
            Exists(kept)
        )
        return Counter(
            jobs=old_jobs.count(),
            events=JobEvent.objects.filter(job__in=old_jobs).count(),
            workflows=emptied.count(),
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
            workflow_ids = set(
                Job.objects.filter(id__in=ids, workflow__isnull=False).values_list(
                    "workflow_id", flat=True
                )
            )
            events, _ = JobEvent.objects.filter(job_id__in=ids).delete()
            jobs, _ = Job.objects.filter(id__in=ids).delete()
            # A workflow is written whole and never gains a job: one whose last job went
            # with this batch would only be listed, empty, from now on.
            workflows, _ = (
                Workflow.objects.filter(id__in=workflow_ids)
                .exclude(Exists(Job.objects.filter(workflow=OuterRef("pk"))))
                .delete()
            )
        return len(ids), Counter(jobs=jobs, events=events, workflows=workflows)

    def describe(self, counts: Counter[str], cutoff: datetime) -> str:
        return (
            f"{counts['jobs']} finished jobs (finished before {cutoff.isoformat()}) "
            f"and their {counts['events']} events, and {counts['workflows']} workflows left "
            "without a job"
        )
