"""The registry of job types: which function runs the jobs of each type.

A leaf of the app: it imports nothing else of ``jobs``, so the worker, the ``django.tasks``
backend, the reads and the API can all consult it without importing each other. The
function's context argument is ``jobs.handlers.JobContext``; it is typed loosely here for
that reason. Handlers are registered with ``jobs.handlers.register`` (this module's
``register``), tasks by ``jobs.backends`` when they are defined.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# fn(context) -> result; the context is a jobs.handlers.JobContext.
Handler = Callable[[Any], Any]
# backoff(exception, attempt) -> seconds before the next attempt, or None: fail now.
Backoff = Callable[[BaseException, int], float | None]


@dataclass(frozen=True)
class RetryPolicy:
    """How a type's failed attempts are retried (``jobs.worker.retries`` applies it).

    ``give_up_on``: exceptions (isinstance) that fail the job at once; checked first.
    ``retry_on``: when given, only these are retried, any other fails the job at once.
    ``backoff``: seconds before the next attempt, or ``None`` to fail now; without it the
    default exponential backoff with full jitter. Attempts left are still required:
    ``max_attempts`` ends the job whatever the policy says.
    """

    backoff: Backoff | None = None
    retry_on: tuple[type[BaseException], ...] = ()
    give_up_on: tuple[type[BaseException], ...] = ()

    @classmethod
    def of(
        cls,
        *,
        backoff: Backoff | None = None,
        retry_on: tuple[type[BaseException], ...] | None = None,
        give_up_on: tuple[type[BaseException], ...] | None = None,
    ) -> RetryPolicy:
        """The policy of ``register``/``@task`` arguments, checked at definition time."""
        if backoff is not None and not callable(backoff):
            raise TypeError(f"backoff must be callable(exception, attempt), not {backoff!r}")
        return cls(
            backoff=backoff,
            retry_on=_exception_classes("retry_on", retry_on),
            give_up_on=_exception_classes("give_up_on", give_up_on),
        )


def _exception_classes(
    name: str, classes: tuple[type[BaseException], ...] | None
) -> tuple[type[BaseException], ...]:
    found: tuple[Any, ...] = tuple(classes or ())  # checked here, whatever the caller typed
    for kind in found:
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            raise TypeError(f"{name} must be a tuple of exception classes, not {kind!r}")
    return found


@dataclass(frozen=True)
class HandlerSpec:
    type: str
    fn: Handler
    description: str
    example_payload: dict[str, Any]
    # Default for jobs of this type that set none; None: JOB_WORKER_TIMEOUT_SECONDS.
    timeout_seconds: int | None = None
    # False: the worker's heartbeat does not extend the lease of this type's attempts.
    heartbeat: bool = True
    retry: RetryPolicy = RetryPolicy()


_REGISTRY: dict[str, HandlerSpec] = {}


def register[F: Handler](
    type: str,
    *,
    description: str | None = None,
    example_payload: dict[str, Any] | None = None,
    timeout_seconds: int | None = None,
    heartbeat: bool = True,
    backoff: Backoff | None = None,
    retry_on: tuple[type[BaseException], ...] | None = None,
    give_up_on: tuple[type[BaseException], ...] | None = None,
) -> Callable[[F], F]:
    """Decorator registering ``fn`` as the handler of ``type``.

    ``description`` (what ``GET /api/config/`` shows) defaults to the function's docstring;
    ``python -OO`` strips docstrings, so registering there needs it spelled out.
    ``timeout_seconds`` is the default time limit of an attempt of this type.

    ``heartbeat=False`` opts the type out of the automatic heartbeat: the worker does not
    extend the lease of its attempts, so an attempt whose handler does not call
    ``context.renew()`` within each lease loses its job to expired-lease cleanup
    (``timeout_requeued``), as if its process had died. For demonstrations and for handlers
    that must prove liveness themselves. The heartbeat still tells such an attempt that it
    was asked to cancel or lost its job; ``renew()`` and ``progress()`` from an attempt
    that lost it raise ``LeaseLost``.

    ``backoff``, ``retry_on`` and ``give_up_on`` are the type's ``RetryPolicy``.
    """
    if not isinstance(heartbeat, bool):
        raise TypeError(f"heartbeat must be True or False, not {heartbeat!r}")
    retry = RetryPolicy.of(backoff=backoff, retry_on=retry_on, give_up_on=give_up_on)

    def decorator(fn: F) -> F:
        text = description or inspect.getdoc(fn)
        if not text:
            raise ValueError(f"the handler for {type!r} needs a description or a docstring")
        add(HandlerSpec(type, fn, text, example_payload or {}, timeout_seconds, heartbeat, retry))
        return fn

    return decorator


def add(spec: HandlerSpec, *, replace: bool = False) -> None:
    """Register ``spec``; a type has one handler. ``replace`` lets a module that runs
    again (a reload) register the new definition of its own type."""
    if spec.type in _REGISTRY and not replace:
        raise ValueError(f"a handler for {spec.type!r} is already registered")
    _REGISTRY[spec.type] = spec


def get_handler(type: str) -> HandlerSpec | None:
    return _REGISTRY.get(type)


def registered_types() -> list[str]:
    return sorted(_REGISTRY)


def handler_specs() -> list[HandlerSpec]:
    return [_REGISTRY[name] for name in registered_types()]
