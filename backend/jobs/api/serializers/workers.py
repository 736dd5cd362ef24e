"""Live workers: each process, its threads and the job each runs, its abandoned threads."""

from typing import Any

from rest_framework import serializers

from ...models import JobStatus


class ThreadJobSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    type = serializers.CharField()
    queue = serializers.CharField()
    attempt = serializers.IntegerField()
    started_at = serializers.DateTimeField(
        allow_null=True, help_text="When this attempt was claimed."
    )
    locked_until = serializers.DateTimeField()
    lease_overdue = serializers.BooleanField(
        help_text="The lease has expired: the thread is stuck; cleanup will requeue the job."
    )


class WorkerThreadSerializer(serializers.Serializer[dict[str, Any]]):
    worker_id = serializers.CharField(help_text="host:pid:thread-N:random, as in locked_by.")
    job = ThreadJobSerializer(allow_null=True, help_text="What it runs now; null: idle.")


class AbandonedJobSerializer(serializers.Serializer[dict[str, Any]]):
    id = serializers.UUIDField()
    type = serializers.CharField(allow_null=True)
    attempt = serializers.IntegerField(allow_null=True, help_text="The attempt that timed out.")
    status = serializers.ChoiceField(
        choices=JobStatus.choices,
        allow_null=True,
        help_text="The job's status now (it moved on when the attempt timed out); null if "
        "it was deleted.",
    )


class AbandonedThreadSerializer(serializers.Serializer[dict[str, Any]]):
    worker_id = serializers.CharField(help_text="The thread's worker id.")
    job = AbandonedJobSerializer(
        allow_null=True, help_text="The job whose handler it is still in; null if unknown."
    )
    abandoned_at = serializers.DateTimeField(
        allow_null=True, help_text="When its attempt timed out and it was replaced."
    )


class WorkerProcessSerializer(serializers.Serializer[dict[str, Any]]):
    worker_id = serializers.CharField(help_text="host:pid, the process part of its threads' ids.")
    hostname = serializers.CharField()
    pid = serializers.IntegerField()
    queues = serializers.ListField(
        child=serializers.CharField(), help_text="The queues it serves (* : every queue)."
    )
    threads_configured = serializers.IntegerField(help_text="Worker threads it was started with.")
    threads_live = serializers.IntegerField(
        help_text="Threads serving now (a thread stuck past its timeout is replaced)."
    )
    threads_busy = serializers.IntegerField(help_text="Live threads running a job now.")
    started_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField(
        help_text="Its last check-in (every half heartbeat interval)."
    )
    heartbeat_interval_seconds = serializers.FloatField(
        help_text="Listed while last_seen_at is within one interval of now."
    )
    finished = serializers.IntegerField(
        help_text="Attempt endings its threads wrote in the window."
    )
    threads = WorkerThreadSerializer(many=True, help_text="Its live threads, by thread number.")
    threads_abandoned = AbandonedThreadSerializer(
        many=True,
        help_text="Threads it gave up on: still running a handler whose attempt timed out "
        "(replaced by new threads; not in threads).",
    )


class WorkersSerializer(serializers.Serializer[dict[str, Any]]):
    minutes = serializers.IntegerField(help_text="The window `finished` counts over.")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()
    processes = WorkerProcessSerializer(
        many=True, help_text="Every live worker process, idle or busy, newest first."
    )
