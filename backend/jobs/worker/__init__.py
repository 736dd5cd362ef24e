"""The threaded worker: N threads that claim and run jobs, and one maintenance thread.

Each ``WorkerThread`` loops: claim the next job of its queues (taken in turn, so a busy
queue cannot starve another), run its handler, record the outcome through
``jobs.services``. Whatever the handler does (return, raise, ``sys.exit()``, hang), the
attempt ends truthfully and the thread carries on.

The ``Maintenance`` thread does what must not depend on a free worker thread:
* heartbeat: every ``JOB_WORKER_HEARTBEAT_SECONDS`` (a third of the lease by default) it
  renews the lease of every attempt this process runs, in one statement, and learns which
  attempts were lost or asked to cancel;
* timeouts: at an attempt's deadline it records the attempt as timed out; the handler's
  thread cannot be killed, so it is abandoned and a replacement keeps the capacity;
* cleanup: every cleanup interval it releases the expired leases of any process.

Database errors (PostgreSQL restarting, network loss) are logged, the thread's connection
is dropped and it retries with capped backoff. The first SIGINT/SIGTERM stops claiming and
lets in-flight jobs finish (the heartbeat keeps their leases meanwhile); a second one
exits at once, leaving unfinished jobs to lease-expiry cleanup.

The package, one part per module: ``config`` (WorkerConfig, worker ids), ``context`` (what
a handler sees), ``attempts`` (what a process is running), ``queues`` (the queues served,
the idle threads' wait), ``listener`` (the wake-ups, through the driver's LISTEN),
``executor`` (the worker threads), ``maintenance`` (heartbeat, timeouts, lease rescue),
``recovery`` (database errors survived) and ``runner`` (the process). ``jobs.worker``
exports what ``run_job_workers`` and integrations use.
"""

from ..worker_ids import make_worker_id
from .config import WorkerConfig
from .runner import WorkerRunner

__all__ = ["WorkerConfig", "WorkerRunner", "make_worker_id"]
