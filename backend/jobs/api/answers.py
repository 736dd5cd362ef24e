"""The answers shaped for HTTP: the config document a client builds its forms and pages
from, and the session's state. Reads, but the API's: they speak of paginators, request
bodies and DRF's permission settings, which the shared reads (``jobs.selectors``) must not
know about."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import AllowAny
from rest_framework.settings import api_settings

from .. import registry
from ..conf import app_settings
from ..limits import (
    BULK_CREATE_MAX,
    BULK_IDS_MAX,
    IDEMPOTENCY_KEY_MAX_LENGTH,
    MAX_ATTEMPTS_MAX,
    METADATA_KEY_MAX_LENGTH,
    METADATA_MAX_CHARS,
    METADATA_MAX_ENTRIES,
    METADATA_VALUE_MAX_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    QUEUE_NAME_MAX_LENGTH,
    TIMEOUT_SECONDS_MAX,
)
from ..permissions import ADD, CHANGE, VIEW
from ..worker import WorkerConfig
from .pagination import JobEventCursorPagination, JobPagination, JobTimelinePagination


def api_config() -> dict[str, Any]:
    """What a client needs to build a create form, explain the worker and size its pages."""
    return {
        "job_types": [
            {
                "type": spec.type,
                "description": spec.description,
                "example_payload": spec.example_payload,
            }
            for spec in registry.handler_specs()
        ],
        "worker": {
            "threads": app_settings.JOB_WORKER_THREADS,
            "poll_interval_ms": app_settings.JOB_WORKER_POLL_INTERVAL_MS,
            "lease_seconds": app_settings.JOB_WORKER_LEASE_SECONDS,
            "cleanup_interval_seconds": app_settings.JOB_WORKER_CLEANUP_INTERVAL_SECONDS,
            "cleanup_batch_size": app_settings.JOB_WORKER_CLEANUP_BATCH_SIZE,
            "backoff_base_seconds": app_settings.JOB_WORKER_BACKOFF_BASE_SECONDS,
            "backoff_max_seconds": app_settings.JOB_WORKER_BACKOFF_MAX_SECONDS,
            "max_attempts_default": app_settings.JOB_WORKER_MAX_ATTEMPTS_DEFAULT,
            "heartbeat_seconds": WorkerConfig.from_settings().heartbeat_interval_seconds,
            "timeout_seconds": app_settings.JOB_WORKER_TIMEOUT_SECONDS,
            "queues": list(app_settings.JOB_WORKER_QUEUES),
        },
        "limits": input_limits(),
        # Read from the paginators the list views use, so the advertised sizes are enforced ones.
        "pagination": {
            "jobs": {
                "default_limit": JobPagination.default_limit,
                "max_limit": JobPagination.max_limit,
            },
            "job_events": {
                "default_limit": JobEventCursorPagination.page_size,
                "max_limit": JobEventCursorPagination.max_page_size,
            },
            "job_timeline": {
                "default_limit": JobTimelinePagination.page_size,
                "max_limit": JobTimelinePagination.max_page_size,
                "next_page_in": "link_header",
            },
        },
    }


def input_limits() -> dict[str, int]:
    """The bounds the input serializers enforce, as ``GET /api/config/`` publishes them."""
    return {
        "priority_min": PRIORITY_MIN,
        "priority_max": PRIORITY_MAX,
        "max_attempts_max": MAX_ATTEMPTS_MAX,
        "idempotency_key_max_length": IDEMPOTENCY_KEY_MAX_LENGTH,
        "max_body_bytes": app_settings.JOB_API_MAX_BODY_BYTES,
        "timeout_seconds_max": TIMEOUT_SECONDS_MAX,
        "queue_name_max_length": QUEUE_NAME_MAX_LENGTH,
        "bulk_ids_max": BULK_IDS_MAX,
        "bulk_create_max": BULK_CREATE_MAX,
        "metadata_max_entries": METADATA_MAX_ENTRIES,
        "metadata_key_max_length": METADATA_KEY_MAX_LENGTH,
        "metadata_value_max_length": METADATA_VALUE_MAX_LENGTH,
        "metadata_max_chars": METADATA_MAX_CHARS,
    }


def session_state(user: Any) -> dict[str, Any]:
    """Who the request's user is and which job permissions the API grants them."""
    classes: list[Any] = list(api_settings.DEFAULT_PERMISSION_CLASSES)  # imported classes
    open_api = all(cls is AllowAny for cls in classes)
    signed_in = bool(user and user.is_authenticated)
    return {
        "login_required": not open_api,
        "authenticated": signed_in,
        "username": user.get_username() if signed_in else None,
        "permissions": {
            name: open_api or (signed_in and user.has_perm(perm))
            for name, perm in (("view", VIEW), ("add", ADD), ("change", CHANGE))
        },
    }
