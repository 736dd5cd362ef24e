"""What the database can store: one rule for API input, handler results and error text.

PostgreSQL's text and jsonb refuse the NUL character, UTF-8 (both databases) cannot hold a
lone surrogate, and JSON encoders recurse once per nesting level. Input that breaks these
is refused with a reason naming where; text the worker must record anyway (an error
message, a traceback) is escaped instead, so an outcome is always storable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

# Deeper values are refused: JSON encoders and decoders recurse per level.
JSON_MAX_DEPTH = 64

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class UnstorableValue(ValueError):
    """A value the database cannot hold; the message says what and where (``index``: the
    item of a bulk call it belongs to)."""

    def __init__(self, message: str, *, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or ``None`` when it can."""
    match = _UNSTORABLE.search(text)
    if match is None:
        return None
    if match.group() == "\x00":
        return "Strings may not contain the NUL character \\u0000."
    return f"Strings may not contain a lone surrogate \\u{ord(match.group()):04x}."


def storable_text(text: str) -> str:
    """``text`` with NUL and lone surrogates written as ``\\uXXXX`` escapes."""
    return _UNSTORABLE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def json_problem(value: Any) -> str | None:
    """Why ``value`` cannot be stored as JSON, or ``None`` when it can.

    The reason names the first offending place as a path (``$.a[2]``).
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "$")]
    while stack:
        item, depth, path = stack.pop()
        if depth > JSON_MAX_DEPTH:
            return f"Nesting deeper than {JSON_MAX_DEPTH} levels is not allowed (at {path})."
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return f"{problem[:-1]} (at {path})."
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and (problem := text_problem(key)):
                    return f"{problem[:-1]} (in a key at {path})."
                stack.append((child, depth + 1, f"{path}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((child, depth + 1, f"{path}[{i}]") for i, child in enumerate(item))
    return None


def field_problems(fields: Iterable[tuple[Any, Any]]) -> dict[str, list[str]]:
    """Each unstorable ``(name, value)`` of a request (a JSON body's top-level keys, query
    parameters) as ``{name: [reason]}``, the API's error shape; empty when all are storable.

    A name that is itself unstorable is reported under its escaped form (the response must
    be encodable), so unknown keys are checked as strictly as known ones.
    """
    problems: dict[str, list[str]] = {}
    for name, value in fields:
        key = storable_text(str(name))
        if isinstance(name, str) and (problem := text_problem(name)):
            problems.setdefault(key, []).append(f"{problem[:-1]} (in the field's name).")
        else:
            # A plain string needs no path; a nested value's reason says where inside it.
            problem = text_problem(value) if isinstance(value, str) else json_problem(value)
            if problem is not None:
                problems.setdefault(key, []).append(problem)
    return problems


def to_storable_json(value: Any) -> str:
    """``value`` as JSON text the database accepts; ``UnstorableValue`` says why not."""
    problem = json_problem(value)
    if problem is not None:
        raise UnstorableValue(problem)
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:  # a set, an object, NaN ...
        raise UnstorableValue(f"Not JSON: {exc}.") from exc
