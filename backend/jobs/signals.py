"""Signals the worker sends around each attempt, for integrations (the ``django.tasks``
backend, metrics). Receivers run in the worker thread; one that raises is logged and
ignored (``send_robust``), never allowed to break the attempt.

``attempt_started(sender, job, worker_id)``: a claimed job is about to run.
``attempt_finished(sender, job, outcome, row, error, run_seconds, worker_id)``: the
attempt ended. ``outcome`` is succeeded, retry_scheduled, failed, cancelled, timeout,
lease_lost or stale; ``row`` is the job as recorded (``None`` when nothing was written).
``database_error(sender, component, error)``: the worker met a database error and will
retry; ``component`` is thread (a thread's claim loop), write (recording an outcome),
maintenance or listener.
"""

from django.dispatch import Signal

attempt_started = Signal()
attempt_finished = Signal()
database_error = Signal()
