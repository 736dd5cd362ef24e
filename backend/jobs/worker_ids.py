"""The worker id format: every id a worker writes is built here, and read back here.

A worker process is ``hostname:pid`` (its presence row, ``WorkerPresence.worker_id``);
each of its threads is ``hostname:pid:thread-N:random`` (a running job's ``locked_by``
and ``claimed_by``, an event's ``worker_id``): unique per thread start and never reused,
the random part telling a thread started again under the same number from the one before
it.

A leaf of the app: it imports nothing else of ``jobs``.
"""

from __future__ import annotations

import os
import secrets
import socket


def process_id() -> str:
    """``hostname:pid``: this process's id, the start of each of its threads' ids."""
    return f"{socket.gethostname()}:{os.getpid()}"


def make_worker_id(thread_number: int) -> str:
    """``hostname:pid:thread-N:random``; unique per thread start, never reused."""
    return f"{process_id()}:thread-{thread_number}:{secrets.token_hex(4)}"


def is_thread_of(worker_id: str, process: str) -> bool:
    """Whether the thread id ``worker_id`` names one of the threads of ``process`` (a
    ``process_id``)."""
    return worker_id.startswith(f"{process}:")
