"""The shop's tasks: found by the jobs app's autodiscovery of `tasks` modules."""

from django.tasks import task


@task
def add(a: int, b: int) -> int:
    return a + b


@task(takes_context=True, max_attempts=3)
def flaky(context, succeed_on: int) -> int:
    """Fails until attempt `succeed_on`, reporting each attempt on the job's timeline."""
    context.progress("Trying", {"attempt": context.attempt})
    if context.attempt < succeed_on:
        raise ConnectionError(f"attempt {context.attempt} could not connect")
    return context.attempt


@task
def record(label: str) -> str:
    return label


@task(queue_name="emails")
def send_email(to: str) -> str:
    return f"sent to {to}"


@task(queue_name="reports")
def build_report() -> str:
    return "report"
