from django.http import HttpRequest, JsonResponse
from django.tasks import default_task_backend
from django.tasks.exceptions import TaskResultDoesNotExist
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from .tasks import add


@csrf_exempt
@require_POST
def enqueue_add(request: HttpRequest) -> JsonResponse:
    result = add.enqueue(int(request.POST["a"]), int(request.POST["b"]))
    return JsonResponse({"id": result.id, "status": result.status}, status=202)


@require_GET
def result(request: HttpRequest, result_id: str) -> JsonResponse:
    try:
        found = default_task_backend.get_result(result_id)
    except TaskResultDoesNotExist:
        return JsonResponse({"detail": "no such task result"}, status=404)
    return JsonResponse(
        {
            "task": found.task.module_path,
            "status": found.status,
            "return_value": found.return_value if found.status == "SUCCESSFUL" else None,
            "worker_ids": found.worker_ids,
            "errors": [
                {"exception_class_path": e.exception_class_path, "traceback": e.traceback}
                for e in found.errors
            ],
            "enqueued_at": found.enqueued_at,
            "started_at": found.started_at,
            "finished_at": found.finished_at,
        }
    )
