"""``manage.py run_job_workers``: run the threaded worker in this process."""

import logging
import sys

from django.core.management.base import BaseCommand, CommandParser

from jobs.checks import INTEGER_RANGES
from jobs.conf import app_settings
from jobs.metrics import serve_worker_metrics
from jobs.worker import WorkerConfig, WorkerRunner


class Command(BaseCommand):
    help = (
        "Run JOB_WORKER_THREADS worker threads that claim and execute jobs. "
        "SIGINT/SIGTERM stop claiming and wait for in-flight jobs; a second signal exits at once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="Number of worker threads (default: JOB_WORKER_THREADS).",
        )
        parser.add_argument(
            "--queues",
            default=None,
            help='Comma-separated queues to serve, "*" for all (default: JOB_WORKER_QUEUES).',
        )
        parser.add_argument(
            "--burst",
            action="store_true",
            help="Exit once no job is claimable instead of polling forever.",
        )

    def handle(
        self,
        *args: object,
        threads: int | None,
        queues: str | None,
        burst: bool,
        **options: object,
    ) -> None:
        low, high = INTEGER_RANGES["JOB_WORKER_THREADS"]
        if threads is not None and not low <= threads <= high:
            self.stderr.write(f"--threads must be from {low} to {high}")
            sys.exit(2)
        names = None
        if queues is not None:
            names = tuple(name.strip() for name in queues.split(",") if name.strip())
            if not names:
                self.stderr.write('--queues needs at least one queue name (or "*")')
                sys.exit(2)
        logging.getLogger("jobs").setLevel(app_settings.JOB_WORKER_LOG_LEVEL)
        runner = WorkerRunner(
            WorkerConfig.from_settings(threads=threads, queues=names, burst=burst)
        )
        runner.install_signal_handlers()
        if app_settings.JOB_WORKER_METRICS_PORT:
            serve_worker_metrics(
                runner,
                address=app_settings.JOB_WORKER_METRICS_ADDRESS,
                port=app_settings.JOB_WORKER_METRICS_PORT,
            )
        sys.exit(runner.run())
