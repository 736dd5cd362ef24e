"""``manage.py run_job_workers``: run the threaded worker in this process."""

import logging
import sys

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection

from jobs.checks import INTEGER_RANGES
from jobs.conf import app_settings
from jobs.drivers import deadline, get_driver
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
        # Statements on a frozen server end before the leases they renew would.
        deadline.hold_to_heartbeat()
        refuse_prepared_statements_through_pooler()
        runner = WorkerRunner(
            WorkerConfig.from_settings(threads=threads, queues=names, burst=burst)
        )
        runner.install_signal_handlers()
        if app_settings.JOB_WORKER_METRICS_PORT:
            # The metrics extra: jobs.E007 refused to start without it.
            from jobs.metrics import serve_worker_metrics

            serve_worker_metrics(
                runner,
                address=app_settings.JOB_WORKER_METRICS_ADDRESS,
                port=app_settings.JOB_WORKER_METRICS_PORT,
            )
        sys.exit(runner.run())


def refuse_prepared_statements_through_pooler() -> None:
    """Refuse to start with prepared statements on behind a pooler.

    PgBouncer before 1.21 in transaction mode passes the protocol's named statements to
    whichever server connection the transaction gets: a statement prepared on one is
    missing (or a different one by the same name) on the next, so claims would fail at
    random, or worse. ``POSTGRES_TRANSACTION_POOLING=true`` turns them off (the settings
    refuse the combination); this catches a pooler nobody declared. Skipped while the
    database is unreachable: the worker threads wait for it as for any outage.
    """
    if not app_settings.JOB_DB_PREPARED_STATEMENTS:
        return
    try:
        pooled = get_driver().behind_pooler()
    except DatabaseError:
        return
    finally:
        # The main thread runs no queries: its connection would sit idle on the server.
        connection.close()
    if pooled:
        logging.getLogger("jobs.worker").error(
            "action=worker_refused reason=prepared_statements_through_pooler"
        )
        raise CommandError(
            "JOB_DB_PREPARED_STATEMENTS is on, but the database connection goes through a "
            "pooler (PgBouncer?), which cannot carry prepared statements in transaction mode "
            "before PgBouncer 1.21. Set POSTGRES_TRANSACTION_POOLING=true (or "
            "JOB_DB_PREPARED_STATEMENTS=false)."
        )
