"""This project's OpenTelemetry SDK: where the spans of ``jobs.tracing`` go.

The ``jobs`` app uses the OpenTelemetry API only; the project that runs it decides where
spans go. This one sets the SDK up in ``manage.py`` (``runserver``, ``run_job_workers``)
and ``wsgi.py`` (gunicorn) when ``JOB_TRACING`` is on, from the SDK's own variables:

* ``OTEL_TRACES_EXPORTER``: ``otlp`` (the SDK's default: OTLP over HTTP/protobuf to
  ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT`` +
  ``/v1/traces``, else ``http://localhost:4318/v1/traces``), ``console`` (each span as
  JSON on standard output, as it ends) or ``none``;
* ``OTEL_SERVICE_NAME`` (``job-queue-api`` or ``job-queue-worker`` when unset),
  ``OTEL_RESOURCE_ATTRIBUTES``, the batch processor's ``OTEL_BSP_*``, the exporter's
  ``OTEL_EXPORTER_OTLP_HEADERS`` and the rest, read by the SDK itself.

A tracer provider set already (``opentelemetry-instrument`` sets one) is left alone. When
``opentelemetry-instrumentation-django`` is installed, requests get server spans too, so
a trace runs from the request through the job to each attempt. With ``JOB_TRACING`` off
nothing of OpenTelemetry is imported.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

EXPORTERS = ("otlp", "console", "none")


def configure(service_name: str) -> None:
    """Install the SDK's tracer provider with the exporter ``OTEL_TRACES_EXPORTER``
    names, if ``JOB_TRACING`` is on and no provider is set yet."""
    if not getattr(settings, "JOB_TRACING", False):  # reading it loads the settings, .env too
        return
    exporter_name = os.environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() or "otlp"
    if exporter_name not in EXPORTERS:
        raise ImproperlyConfigured(
            f"OTEL_TRACES_EXPORTER must be one of {', '.join(EXPORTERS)}, got {exporter_name!r}"
        )
    from opentelemetry import trace

    if exporter_name == "none" or not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider
    ):
        return
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: service_name}
    provider = TracerProvider(resource=Resource.create(attributes))
    processor: SpanProcessor
    if exporter_name == "console":
        processor = SimpleSpanProcessor(ConsoleSpanExporter())
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter())
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    try:
        from opentelemetry.instrumentation.django import (  # type: ignore[import-not-found]
            DjangoInstrumentor,  # optional: not installed by this project
        )
    except ImportError:
        return
    DjangoInstrumentor().instrument()
