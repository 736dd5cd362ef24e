"""Events: one job's timeline and the feed of every job's events.

Data access: the ORM (``JobEvent`` querysets; the paginators order them).
"""

from __future__ import annotations

from uuid import UUID

from django.db.models import QuerySet

from ..models import JobEvent, JobEventType
from .jobs import get_job


def job_timeline(job_id: UUID | str, *, heartbeats: str = "include") -> QuerySet[JobEvent]:
    """One job's events, oldest first; ``JobNotFound`` if the job does not exist.
    ``heartbeats="exclude"`` leaves out ``lease_renewed`` and ``progress``."""
    job = get_job(job_id)
    events = JobEvent.objects.filter(job=job)
    if heartbeats == "exclude":
        events = events.exclude(type__in=HEARTBEAT_EVENT_TYPES)
    return events.order_by("id")


def event_feed(
    *, type: str | None = None, job_id: UUID | None = None, heartbeats: str = "include"
) -> QuerySet[JobEvent]:
    """Events of all jobs (the paginator orders them newest first); ``heartbeats="exclude"``
    leaves out ``lease_renewed`` and ``progress``."""
    events = JobEvent.objects.all()
    if type:
        events = events.filter(type=type)
    if job_id:
        events = events.filter(job_id=job_id)
    if heartbeats == "exclude":
        events = events.exclude(type__in=HEARTBEAT_EVENT_TYPES)
    return events


# Events a client may leave out of a timeline or the feed (``heartbeats=exclude``).
HEARTBEAT_EVENT_TYPES = [JobEventType.LEASE_RENEWED, JobEventType.PROGRESS]
