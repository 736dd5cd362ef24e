"""Handlers for the fault tests' worker processes, loaded with
``JOB_HANDLER_MODULES=jobs.tests.fault_handlers``; never imported by the test process."""

from jobs.handlers import JobContext, register


@register("fault.noop", description="Does nothing and succeeds (queue overhead only).")
def noop(context: JobContext) -> dict[str, int]:
    return {"attempt": context.attempt}
