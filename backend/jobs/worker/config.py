"""How a worker process runs: its settings, and the ids its threads write as owners."""

from __future__ import annotations

from dataclasses import dataclass

from ..conf import app_settings
from ..drivers import get_driver

# JOB_WORKER_QUEUES / --queues: every queue that has jobs.
ALL_QUEUES = "*"
# JOB_WORKER_CLAIM_BATCH_SIZE / JOB_WORKER_COMPLETE_BATCH_SIZE: chosen by batch_sizes().
AUTO = 0
AUTO_COMPLETE_BATCH_SIZE = 10


@dataclass(frozen=True)
class WorkerConfig:
    threads: int
    poll_interval_seconds: float
    lease_seconds: int
    cleanup_interval_seconds: float
    cleanup_batch_size: int
    queues: tuple[str, ...] = (ALL_QUEUES,)
    timeout_seconds: int = 0  # default for jobs whose type sets none; 0: no timeout
    burst: bool = False
    heartbeat_seconds: float = 0  # 0: a third of the lease
    # Batched fetch (jobs.worker.fetcher): idle threads claim together, up to this many
    # jobs per statement; 1: each thread claims its own.
    claim_batch_size: int = 1
    # Batched completion (jobs.worker.completer); 1: each thread completes its own job
    # together with its next claim.
    complete_batch_size: int = 1
    complete_flush_seconds: float = 0.005
    complete_synchronous_commit: bool = True
    # Maintenance vacuums jobs_job once its dead rows pass autovacuum's threshold and this
    # many; 0: never (autovacuum alone).
    vacuum_dead_rows: int = 20_000
    # Throughput mode's lean timeline: no claimed and succeeded events on the success
    # path (the row keeps who ran the job and when).
    lean_timeline: bool = False
    # Throughput mode's prefetch: jobs a process holds beyond those its threads run, at
    # most this many, each claimed under the thread that will run it (prefetch_of).
    prefetch: int = 0

    def prefetch_of(self, thread_number: int) -> int:
        """The jobs thread ``thread_number`` (1 to ``threads``) may hold beyond the one it
        runs: the process's prefetch shared among its threads. A replacement takes the
        share of the thread it replaces, so the process never holds more than
        ``prefetch``."""
        share, rest = divmod(self.prefetch, self.threads)
        return share + (1 if (thread_number - 1) % self.threads < rest else 0)

    @property
    def heartbeat_interval_seconds(self) -> float:
        return self.heartbeat_seconds or self.lease_seconds / 3

    @staticmethod
    def batch_sizes(
        threads: int, claim: int, complete: int, *, prefetch: int = 0
    ) -> tuple[int, int]:
        """(claim, complete) batch sizes, each setting that is ``AUTO`` chosen: batched (a
        claim for every thread, completions by ten) where the driver prepares its
        statements and the process has threads to batch; else 1, one job per statement.
        Unprepared (behind a transaction pooler) PostgreSQL would plan the batched
        statements on every call, which costs more than they save. With a prefetch,
        completions are batched always (a thread that runs the jobs it holds fetches only
        once they are done, and its successes must not wait for that), by as many as the
        process holds: a batch is then rarely full before a fetch carries it, so the
        successes ride the claims' statements instead of paying for their own."""
        batching = threads > 1 and get_driver().prepares_statements()
        if claim == AUTO:
            claim = threads if batching else 1
        if complete == AUTO and prefetch:
            complete = max(AUTO_COMPLETE_BATCH_SIZE, threads + prefetch)
        elif complete == AUTO:
            complete = AUTO_COMPLETE_BATCH_SIZE if batching else 1
        return claim, complete

    @classmethod
    def from_settings(
        cls,
        *,
        threads: int | None = None,
        queues: tuple[str, ...] | None = None,
        burst: bool = False,
    ) -> WorkerConfig:
        threads = app_settings.JOB_WORKER_THREADS if threads is None else threads
        claim_batch_size, complete_batch_size = cls.batch_sizes(
            threads,
            app_settings.JOB_WORKER_CLAIM_BATCH_SIZE,
            app_settings.JOB_WORKER_COMPLETE_BATCH_SIZE,
            prefetch=app_settings.JOB_WORKER_PREFETCH,
        )
        return cls(
            threads=threads,
            poll_interval_seconds=app_settings.JOB_WORKER_POLL_INTERVAL_MS / 1000,
            lease_seconds=app_settings.JOB_WORKER_LEASE_SECONDS,
            cleanup_interval_seconds=app_settings.JOB_WORKER_CLEANUP_INTERVAL_SECONDS,
            cleanup_batch_size=app_settings.JOB_WORKER_CLEANUP_BATCH_SIZE,
            queues=tuple(app_settings.JOB_WORKER_QUEUES) if queues is None else queues,
            timeout_seconds=app_settings.JOB_WORKER_TIMEOUT_SECONDS,
            burst=burst,
            heartbeat_seconds=app_settings.JOB_WORKER_HEARTBEAT_SECONDS,
            claim_batch_size=claim_batch_size,
            complete_batch_size=complete_batch_size,
            complete_flush_seconds=app_settings.JOB_WORKER_COMPLETE_FLUSH_MS / 1000,
            complete_synchronous_commit=app_settings.JOB_WORKER_COMPLETE_SYNCHRONOUS_COMMIT,
            vacuum_dead_rows=app_settings.JOB_WORKER_VACUUM_DEAD_ROWS,
            lean_timeline=app_settings.JOB_WORKER_LEAN_TIMELINE,
            prefetch=app_settings.JOB_WORKER_PREFETCH,
        )
