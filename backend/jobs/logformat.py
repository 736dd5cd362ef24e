"""``JOB_LOG_FORMAT=json``: one JSON object per log line, with the fields of the text lines.

The worker logs ``logger.info("action=claimed job_id=%s attempt=%d", job_id, attempt)``: a
stable ``action`` and ``key=value`` fields. Rather than rewrite every call with ``extra``,
``JsonFormatter`` reads the *format string*: each ``key=`` starts a field whose value is the
template up to the next key, filled with its own arguments. A field that is exactly one
placeholder keeps its argument's type (``attempt`` stays a number), and the arguments are
substituted after the split, so a value containing ``x=y`` (an error message) cannot
create a field. The text lines are the same template rendered, so both formats carry the
same fields. A message that does not start with ``key=`` is kept whole as ``message``.
"""

from __future__ import annotations

import json
import logging
import re
import time
from datetime import UTC, datetime
from typing import Any

_KEY = re.compile(r"(?:^|(?<=\s))([a-z_][a-z0-9_]*)=")
_PLACEHOLDER = re.compile(r"%(?!%)[#0\- +]*(?:\d+)?(?:\.\d+)?[diouxXeEfFgGcrsa]")


def _value(template: str, args: tuple[Any, ...]) -> Any:
    if _PLACEHOLDER.fullmatch(template) and len(args) == 1:
        (arg,) = args
        if template.endswith("d"):
            return int(arg)
        if template == "%s" and (arg is None or isinstance(arg, bool | int | float | str)):
            return arg
    return template % args if args else template.replace("%%", "%")


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The record's ``key=value`` fields, or ``{"message": ...}`` when it has none."""
    template = record.msg if isinstance(record.msg, str) else ""
    args = record.args if isinstance(record.args, tuple) else ()
    keys = list(_KEY.finditer(template))
    if not keys or keys[0].start() != 0:
        return {"message": record.getMessage()}
    found: dict[str, Any] = {}
    used = 0
    try:
        for index, key in enumerate(keys):
            end = keys[index + 1].start() if index + 1 < len(keys) else len(template)
            raw = template[key.end() : end].rstrip()
            count = len(_PLACEHOLDER.findall(raw))
            found[key.group(1)] = _value(raw, args[used : used + count])
            used += count
    except (TypeError, ValueError):  # not our convention after all: keep the text
        return {"message": record.getMessage()}
    return found


class UtcFormatter(logging.Formatter):
    """The text lines' time in UTC, ISO 8601 with a ``Z`` (``2026-06-21T10:59:58.123Z``):
    the same instant the JSON lines carry, not the process's local clock without a zone."""

    converter = staticmethod(time.gmtime)
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"


class JsonFormatter(logging.Formatter):
    """``{"time", "level", "logger", <fields>, "exception"?}`` on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
        }
        entry.update(fields(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)
