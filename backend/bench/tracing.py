"""What tracing costs the worker: the same no-op jobs drained with OpenTelemetry absent,
installed but off (``JOB_TRACING`` false, the default), and on.

* ``absent``: the worker process cannot import ``opentelemetry`` at all (a finder hides
  it, as in a project that never installed the otel extra);
* ``off``: installed, ``JOB_TRACING=false``: what every deployment that does not trace pays;
* ``on``: ``JOB_TRACING=true`` with this project's SDK set-up (config/telemetry.py): a
  consumer span per attempt, batched and exported over OTLP/HTTP to a receiver in this
  process (``harness.otlp_receiver``), as to a collector.

Each run enqueues ``jobs`` jobs in this process one ``services.create_job`` call at a time,
with tracing as the mode has it (``on``: a producer span per job, the SDK exporting to the
same receiver, so each job carries a traceparent to extract), then one
``run_job_workers`` process of ``threads`` threads drains them. jobs/s counts from the
first ``claimed`` to the last ``succeeded`` event; the worker's CPU per job from its
threads being up to the queue being empty. The modes rotate over ``rounds`` (each round
starting with another); ratios are the medians of the rounds' ratios to ``absent``.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import OtlpReceiver, otlp_receiver

from .database import Database, reset_tables
from .drain import EventWindow, event_window
from .figures import load_average, log
from .jobtypes import JOB_TYPE
from .workers import drain_cpu_ms_per_job

MODES = ("absent", "off", "on")

# Run first in the worker of the "absent" mode: opentelemetry cannot be imported.
HIDE_OPENTELEMETRY = """
import importlib.abc, runpy, sys

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path("manage.py", run_name="__main__")
"""


@dataclass(kw_only=True)
class TracingRun(EventWindow):
    mode: str
    jobs: int
    threads: int
    enqueue_per_second: float
    worker_cpu_ms_per_job: float
    # Consumer spans the receiver got from the worker ("on" only; 0 otherwise).
    spans_received: int
    load_average: list[float]


@dataclass(kw_only=True)
class TracingResult:
    """Every mode's runs, in round order; each round ran all three back to back."""

    absent: list[TracingRun]
    off: list[TracingRun]
    on: list[TracingRun]
    # What the two call sites cost with tracing off, timed in this process: nanoseconds
    # per tracing.attempt() block (the worker's, per attempt) and per tracing.sending()
    # block (services.create_jobs', per create call).
    off_attempt_ns: float
    off_sending_ns: float

    def _ratios(self, mode: str, measure: str, base: str = "absent") -> list[float]:
        return [
            round(getattr(run, measure) / getattr(reference, measure), 3)
            for run, reference in zip(getattr(self, mode), getattr(self, base), strict=True)
        ]

    def ratio(self, mode: str, measure: str, base: str = "absent") -> float:
        return statistics.median(self._ratios(mode, measure, base))


def _enqueue(count: int, *, traced: bool) -> float:
    """``count`` no-op jobs, one create_job call each; returns calls per second."""
    from django.test import override_settings

    from jobs import services

    with override_settings(JOB_TRACING=traced):
        begin = time.perf_counter()
        for _ in range(count):
            services.create_job(type=JOB_TYPE)
        return round(count / (time.perf_counter() - begin), 1)


def _tracer_provider(receiver: OtlpReceiver) -> Any:
    """This process's SDK, exporting to ``receiver`` the way config/telemetry.py sets up
    the project's processes; returns the provider (to flush)."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "bench-enqueue"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint)))
    trace.set_tracer_provider(provider)
    return provider


def _worker_command(mode: str, threads: int) -> list[str]:
    """A worker process of ``mode``: with OpenTelemetry hidden from it when ``absent``."""
    args = ["run_job_workers", "--threads", str(threads)]
    if mode == "absent":
        return [sys.executable, "-c", HIDE_OPENTELEMETRY, *args]
    return [sys.executable, "manage.py", *args]


def run_mode(
    db: Database,
    env: dict[str, str],
    receiver: OtlpReceiver,
    provider: Any,
    *,
    mode: str,
    jobs: int,
    threads: int,
    log_dir: Path,
) -> TracingRun:
    reset_tables(db)
    log(f"tracing: enqueue {jobs} jobs, tracing {mode}, then drain with 1 x {threads}")
    enqueue_rate = _enqueue(jobs, traced=mode == "on")
    provider.force_flush()
    worker_env = dict(env, JOB_TRACING="true" if mode == "on" else "false")
    if mode == "on":
        worker_env.update(
            OTEL_TRACES_EXPORTER="otlp",
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.endpoint,
            OTEL_SERVICE_NAME="bench-worker",
        )
    before = sum(1 for span in receiver.spans if span.service_name == "bench-worker")
    # The worker's spans are flushed as it stops.
    cpu_ms_per_job = drain_cpu_ms_per_job(
        db,
        worker_env,
        _worker_command(mode, threads),
        threads=threads,
        log_path=log_dir / f"worker-tracing-{mode}.log",
    )
    received = sum(1 for span in receiver.spans if span.service_name == "bench-worker") - before
    window = event_window(db)
    if window.jobs_succeeded != jobs or window.claimed_events != jobs:
        raise RuntimeError(f"expected {jobs} jobs claimed and succeeded once: {window}")
    if mode == "on" and received != jobs:
        raise RuntimeError(f"expected {jobs} consumer spans from the worker, got {received}")
    return TracingRun(
        **vars(window),
        mode=mode,
        jobs=jobs,
        threads=threads,
        enqueue_per_second=enqueue_rate,
        worker_cpu_ms_per_job=cpu_ms_per_job,
        spans_received=received,
        load_average=load_average(),
    )


def _off_call_sites(calls: int = 200_000) -> tuple[float, float]:
    """Nanoseconds per ``tracing.attempt()`` and per ``tracing.sending()`` block with
    tracing off (the best of three passes)."""
    from uuid import uuid4

    from django.test import override_settings
    from django.utils import timezone

    from jobs import tracing
    from jobs.drivers.base import NewJob

    now = timezone.now()
    job = NewJob(uuid4(), JOB_TYPE, {}, 50, now, 3, None, now, "default", None, {}, {})
    row: Any = object()  # never read while tracing is off

    def timed(block: Any) -> float:
        best = float("inf")
        for _ in range(3):
            begin = time.perf_counter_ns()
            for _ in range(calls):
                with block():
                    pass
            best = min(best, (time.perf_counter_ns() - begin) / calls)
        return round(best, 1)

    with override_settings(JOB_TRACING=False):
        jobs = [job]
        return timed(lambda: tracing.attempt(row, "w")), timed(lambda: tracing.sending(jobs))


def run_tracing(
    db: Database, env: dict[str, str], *, jobs: int, threads: int, rounds: int, log_dir: Path
) -> TracingResult:
    samples: dict[str, list[TracingRun]] = {mode: [] for mode in MODES}
    with otlp_receiver() as receiver:
        provider = _tracer_provider(receiver)
        try:
            for number in range(rounds):
                # Each round starts with another mode, so none always goes first.
                order = MODES[number % len(MODES) :] + MODES[: number % len(MODES)]
                for mode in order:
                    samples[mode].append(
                        run_mode(
                            db,
                            env,
                            receiver,
                            provider,
                            mode=mode,
                            jobs=jobs,
                            threads=threads,
                            log_dir=log_dir,
                        )
                    )
        finally:
            provider.shutdown()
    attempt_ns, sending_ns = _off_call_sites()
    return TracingResult(
        absent=samples["absent"],
        off=samples["off"],
        on=samples["on"],
        off_attempt_ns=attempt_ns,
        off_sending_ns=sending_ns,
    )


def pct(value: float) -> str:
    return f"{value * 100:.1f} %"


def render(result: TracingResult) -> list[str]:
    from .report import fmt

    first = result.absent[0]
    out = [
        "",
        f"10. Tracing: {first.jobs:,} no-op jobs enqueued in-process one call at a time, then "
        f"drained by 1 proc x {first.threads} thr; {len(result.absent)} rounds, each running "
        "the three modes back to back",
        f"   {'round':<7}{'mode':<8}{'jobs/s':>9}{'vs absent':>11}{'CPU ms/job':>12}"
        f"{'enqueue calls/s':>17}{'spans':>8}{'load':>7}",
    ]
    for number in range(len(result.absent)):
        for mode in MODES:
            run = getattr(result, mode)[number]
            base = result.absent[number]
            out.append(
                f"   {number + 1:<7}{mode:<8}{fmt(run.jobs_per_second):>9}"
                f"{pct(run.jobs_per_second / base.jobs_per_second):>11}"
                f"{fmt(run.worker_cpu_ms_per_job, '.3f'):>12}{fmt(run.enqueue_per_second):>17}"
                f"{run.spans_received:>8}{run.load_average[0]:>7}"
            )
    out += [
        f"   median over absent: off jobs/s {pct(result.ratio('off', 'jobs_per_second'))}, "
        f"CPU/job {pct(result.ratio('off', 'worker_cpu_ms_per_job'))}; "
        f"on jobs/s {pct(result.ratio('on', 'jobs_per_second'))}, "
        f"CPU/job {pct(result.ratio('on', 'worker_cpu_ms_per_job'))}",
        f"   enqueue calls/s, on over off: {pct(result.ratio('on', 'enqueue_per_second', 'off'))}",
        f"   the call sites with tracing off, timed in-process: {result.off_attempt_ns} ns per "
        f"attempt (tracing.attempt), {result.off_sending_ns} ns per create call "
        "(tracing.sending)",
        "   absent = opentelemetry not importable; off = installed, JOB_TRACING=false; on = a "
        "producer span per enqueue and a consumer span per attempt, exported over OTLP/HTTP "
        "(BatchSpanProcessor) to a receiver in the benchmark's process.",
    ]
    return out
