"""A project's URLconf with one view that enqueues inside its own server span, as a view
of an application instrumented with OpenTelemetry does (opentelemetry-instrumentation-django
opens that span in a middleware; here the view opens it, from the request's headers)."""

from django.http import HttpRequest, JsonResponse
from django.urls import path
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind

from jobs import services
from tests import example_tasks

tracer = trace.get_tracer("jobs.tests.view")


def enqueue(request: HttpRequest, what: str) -> JsonResponse:
    """``handler``: a flaky @register job and a django.tasks task; ``bulk``: three tasks
    in one enqueue_many. Answers the job ids and the server span's ids."""
    parent = propagate.extract({name.lower(): value for name, value in request.headers.items()})
    with tracer.start_as_current_span(
        f"{request.method} enqueue/{what}/", context=parent, kind=SpanKind.SERVER
    ) as span:
        if what == "handler":
            job, _ = services.create_job(
                type="demo.flaky",
                payload={"fail_until_attempt": 2},
                metadata={"request_id": request.headers.get("X-Request-Id", "")},
            )
            ids = [str(job.id), example_tasks.add.enqueue(1, 2).id]
        else:
            ids = [
                result.id
                for result in example_tasks.add.enqueue_many([((n, n), {}) for n in range(3)])
            ]
        ids_of_span = span.get_span_context()
        return JsonResponse(
            {
                "ids": ids,
                "trace_id": f"{ids_of_span.trace_id:032x}",
                "span_id": f"{ids_of_span.span_id:016x}",
            }
        )


urlpatterns = [path("enqueue/<str:what>/", enqueue)]
