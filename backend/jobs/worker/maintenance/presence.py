"""Presence: the process says it is alive, with its serving threads, every half heartbeat
interval (``services.record_worker_presence``); on a clean stop it takes its row back.

What the workers page lists: a process idle for hours is there, and one killed with
``kill -9`` drops out within one heartbeat interval, because a reader counts its row only
while the last write is that recent. A row per process rather than anything about jobs:
an idle process holds no lease and writes no event.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Sequence
from typing import Any

from django.utils import timezone

from ... import services
from ...worker_ids import process_id
from .loop import Periodic

logger = logging.getLogger("jobs.worker")


class Presence(Periodic):
    """Every half heartbeat interval, from the start, also while the process stops."""

    name = "presence"
    while_stopping = True

    def __init__(
        self,
        *,
        queues: Sequence[str],
        threads_configured: int,
        heartbeat_interval_seconds: float,
        threads: Callable[[], list[str]],
        abandoned: Callable[[], list[dict[str, Any]]] = list,
    ) -> None:
        super().__init__(heartbeat_interval_seconds / 2)
        self.worker_id = process_id()
        self.queues = tuple(queues)
        self.threads_configured = threads_configured
        self.heartbeat_interval_seconds = heartbeat_interval_seconds
        self.threads = threads
        self.abandoned = abandoned
        self.started_at = timezone.now()
        self.written = False

    def run_once(self) -> int:
        """Write the row; returns the serving threads it named."""
        threads = self.threads()
        services.record_worker_presence(
            worker_id=self.worker_id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            queues=self.queues,
            threads_configured=self.threads_configured,
            threads=threads,
            abandoned=self.abandoned(),
            heartbeat_interval_seconds=self.heartbeat_interval_seconds,
            started_at=self.started_at,
        )
        self.written = True
        return len(threads)

    def remove(self) -> None:
        """Take the row back (a clean stop); a failure is logged, the row then expires."""
        if not self.written:
            return
        try:
            services.remove_worker_presence(worker_id=self.worker_id)
        except Exception:
            logger.exception("action=presence_remove_failed worker_id=%s", self.worker_id)
