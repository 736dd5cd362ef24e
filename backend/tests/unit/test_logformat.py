"""JOB_LOG_FORMAT=json: the same fields as the key=value text lines, one JSON object a line."""

import json
import logging
import re
import uuid

import pytest

from jobs.logformat import JsonFormatter, fields

TEXT_FIELD = re.compile(r"(?:^|(?<=\s))([a-z_][a-z0-9_]*)=")

# Calls as the worker makes them (jobs/worker/), with their arguments.
CALLS = [
    (
        "action=claimed job_id=%s type=%s queue=%s attempt=%d worker_id=%s",
        (uuid.uuid4(), "demo.fail", "mail", 2, "h:1:thread-1:ab"),
    ),
    (
        "action=write_retry what=%s retry_in=%.1fs error=%s",
        ("h:1:thread-1:ab", 0.4, "server closed the connection unexpectedly"),
    ),
    (
        "action=shutdown_requested signal=%s detail=no new claims; "
        "waiting for in-flight jobs in_flight=%d",
        ("SIGTERM", 3),
    ),
    ("action=worker_stopped jobs_processed=%d threads_died=%d exit_code=%d", (7, 0, 0)),
]


def record(msg, args, exc_info=None):
    return logging.LogRecord("jobs.worker", logging.INFO, __file__, 1, msg, args, exc_info)


def text_fields(line):
    keys = list(TEXT_FIELD.finditer(line))
    return {
        key.group(1): line[key.end() : keys[i + 1].start() if i + 1 < len(keys) else None].strip()
        for i, key in enumerate(keys)
    }


@pytest.mark.parametrize(("msg", "args"), CALLS)
def test_json_lines_carry_the_text_lines_fields_with_their_types(msg, args):
    rec = record(msg, args)
    entry = json.loads(JsonFormatter().format(rec))
    assert (entry["level"], entry["logger"]) == ("INFO", "jobs.worker")
    parsed = {key: entry[key] for key in fields(rec)}
    # The same keys and the same values as the rendered text line...
    assert {key: str(value) for key, value in parsed.items()} == text_fields(rec.getMessage())
    # ...and numbers stay numbers.
    assert all(
        isinstance(parsed[key], int)
        for key in ("attempt", "in_flight", "exit_code")
        if key in parsed
    )


def test_a_value_containing_key_value_text_stays_one_field():
    msg, (who, delay, _) = CALLS[1]
    entry = fields(record(msg, (who, delay, "server closed the connection x=y unexpectedly")))
    assert entry["error"] == "server closed the connection x=y unexpectedly"
    assert "x" not in entry and entry["retry_in"] == "0.4s"


def test_other_messages_and_tracebacks_are_kept_whole():
    try:
        raise ValueError("bad")
    except ValueError:
        import sys

        rec = record("Something %s happened", ("odd",), exc_info=sys.exc_info())
    entry = json.loads(JsonFormatter().format(rec))
    assert entry["message"] == "Something odd happened"
    assert "ValueError: bad" in entry["exception"]
