"""The tracing settings are checked at start-up (jobs.E008, jobs.E009); that tracing off
imports nothing of OpenTelemetry is processes/test_tracing_off.py's."""

import pytest

from jobs.checks import check_settings


@pytest.mark.parametrize(
    ("tracing", "record", "ids"),
    [
        (False, [], []),
        (True, ["payload", "result", "metadata"], []),
        ("yes", [], ["jobs.E008"]),
        (False, ["payloads"], ["jobs.E009"]),
        (True, "payload", ["jobs.E009"]),
    ],
)
def test_the_tracing_settings_are_checked(settings, tracing, record, ids):
    settings.JOB_TRACING = tracing
    settings.JOB_TRACING_RECORD = record
    assert [error.id for error in check_settings()] == ids


def test_a_wrong_record_setting_is_named_with_the_choices(settings):
    settings.JOB_TRACING_RECORD = ["payload", "secrets"]
    (error,) = check_settings()
    assert error.msg == (
        "JOB_TRACING_RECORD is ['payload', 'secrets']; it must be a list of any of payload, "
        "result, metadata (none: the messaging attributes only)."
    )
