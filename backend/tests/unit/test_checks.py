"""The app's settings checks (jobs/checks.py): every JOB_* setting has a range that keeps
the arithmetic valid, and a value outside it stops `manage.py check` and the worker with
a message naming the setting, the value and the range."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import extras
from jobs.checks import INTEGER_RANGES, check_settings


def errors(settings, **values) -> list[str]:
    for name, value in values.items():
        setattr(settings, name, value)
    return [f"{error.id}: {error.msg}" for error in check_settings()]


def test_the_defaults_pass(settings):
    assert errors(settings) == []


@pytest.mark.parametrize("name", sorted(INTEGER_RANGES))
def test_each_integer_setting_is_refused_just_outside_its_range(settings, name):
    low, high = INTEGER_RANGES[name]
    if name in ("JOB_WORKER_HEARTBEAT_SECONDS", "JOB_DB_STATEMENT_DEADLINE_SECONDS"):
        # it must also stay below the lease
        settings.JOB_WORKER_LEASE_SECONDS = INTEGER_RANGES["JOB_WORKER_LEASE_SECONDS"][1]
    assert errors(settings, **{name: low}) == []
    assert errors(settings, **{name: high}) == []
    for value in (low - 1, high + 1):
        assert errors(settings, **{name: value}) == [
            f"jobs.E001: {name} is {value}; it must be an integer from {low} to {high}."
        ]


def test_a_heartbeat_as_long_as_the_lease_is_refused(settings):
    assert errors(settings, JOB_WORKER_LEASE_SECONDS=10, JOB_WORKER_HEARTBEAT_SECONDS=10) == [
        "jobs.E004: JOB_WORKER_HEARTBEAT_SECONDS is 10; it must be shorter than "
        "JOB_WORKER_LEASE_SECONDS (10), or leases would lapse between heartbeats."
    ]
    assert errors(settings, JOB_WORKER_HEARTBEAT_SECONDS=9) == []


def test_a_statement_deadline_as_long_as_the_lease_is_refused(settings):
    assert errors(settings, JOB_WORKER_LEASE_SECONDS=10, JOB_DB_STATEMENT_DEADLINE_SECONDS=10) == [
        "jobs.E010: JOB_DB_STATEMENT_DEADLINE_SECONDS is 10; it must be shorter than "
        "JOB_WORKER_LEASE_SECONDS (10), or a heartbeat stuck on a dead server would outlast "
        "the leases it renews."
    ]
    assert errors(settings, JOB_WORKER_LEASE_SECONDS=10, JOB_DB_STATEMENT_DEADLINE_SECONDS=9) == []


def test_transaction_pooling_refuses_prepared_statements_and_a_listener_through_the_pooler(
    settings,
):
    pooled = {"JOB_DB_TRANSACTION_POOLING": True, "JOB_WORKER_LISTEN_OPTIONS": {}}
    found = errors(settings, **pooled, JOB_DB_PREPARED_STATEMENTS=True, JOB_WORKER_LISTEN=True)
    assert [error.split(":")[0] for error in found] == ["jobs.E005", "jobs.E006"]
    assert "PgBouncer before 1.21" in found[0]
    # Off, or listening straight to the server (host or port), is accepted.
    assert errors(settings, JOB_DB_PREPARED_STATEMENTS=False, JOB_WORKER_LISTEN=False) == []
    for direct in ({"host": "postgres"}, {"port": "5432"}):
        assert errors(settings, JOB_WORKER_LISTEN=True, JOB_WORKER_LISTEN_OPTIONS=direct) == []
    # Without a pooler declared, neither rule applies.
    assert errors(settings, JOB_DB_TRANSACTION_POOLING=False, JOB_DB_PREPARED_STATEMENTS=True) == []


@pytest.mark.parametrize("value", ["30", 30.0, True, None])
def test_an_integer_setting_of_another_type_is_refused(settings, value):
    assert errors(settings, JOB_WORKER_LEASE_SECONDS=value)[0].startswith("jobs.E001:")


def test_the_largest_lease_and_backoff_still_make_valid_timestamps():
    """The ranges' point: now + the largest value is a datetime (999999999999 was not)."""
    now = timezone.now()
    for name in ("JOB_WORKER_LEASE_SECONDS", "JOB_WORKER_BACKOFF_MAX_SECONDS"):
        assert now + timedelta(seconds=INTEGER_RANGES[name][1]) > now
    with pytest.raises(OverflowError):
        now + timedelta(seconds=999999999999)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"JOB_WORKER_LOG_LEVEL": "LOUD"}, "jobs.E002: JOB_WORKER_LOG_LEVEL is 'LOUD'"),
        ({"JOB_WORKER_QUEUES": []}, "jobs.E003: JOB_WORKER_QUEUES is []"),
        ({"JOB_WORKER_QUEUES": ["ok", "no spaces"]}, "jobs.E003: JOB_WORKER_QUEUES is"),
        ({"JOB_WORKER_QUEUES": "emails"}, "jobs.E003: JOB_WORKER_QUEUES is 'emails'"),
    ],
)
def test_log_level_and_queues_are_checked(settings, values, expected):
    found = errors(settings, **values)
    assert len(found) == 1 and found[0].startswith(expected)


def test_serving_worker_metrics_without_the_metrics_extra_is_refused_naming_it(
    settings, monkeypatch
):
    monkeypatch.setattr(extras, "missing", lambda extra: ["prometheus_client"])
    settings.JOB_WORKER_METRICS_PORT = 9300
    (error,) = check_settings()
    assert (error.id, error.msg) == (
        "jobs.E007",
        "JOB_WORKER_METRICS_PORT is 9300, but prometheus-client is not installed.",
    )
    assert error.hint.startswith('pip install "job-queue-backend[metrics]"')
    assert errors(settings, JOB_WORKER_METRICS_PORT=None) == []
