"""Live workers."""

from ... import selectors
from ..serializers.stats import ActivityWindowQuerySerializer
from ..serializers.workers import WorkersSerializer
from .common import SelectorView, read_schema


@read_schema("workers_list", "workers")
class WorkersView(SelectorView):
    """Every live worker process, idle or busy: its queues, configured, live and busy
    threads, what each thread runs, and when it last checked in. A process checks in every
    half heartbeat interval and is listed while its last check-in is within one interval,
    so a process that died drops out within one interval. `finished` counts its threads'
    attempt endings over the last `minutes`."""

    query_serializer = ActivityWindowQuerySerializer
    response_serializer = WorkersSerializer
    selector = selectors.live_workers
