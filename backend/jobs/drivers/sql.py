"""Named SQL statements read from a ``.sql`` file, the way Procrastinate keeps its queries.

A file holds statements each headed by ``-- name: <name>``; the comment lines under the
header say what the statement guarantees. Parameters are written ``:name``, which is what
``pgbench`` understands, so the benchmark runs the very text the driver runs; for psycopg
they become ``%(name)s`` (``::`` casts, quoted literals and comments are left alone).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
# A literal, a comment, a cast, or a parameter; only the last is rewritten.
_TOKEN = re.compile(r"'(?:[^']|'')*'|--[^\n]*|::|(?<![\w:]):([A-Za-z_]\w*)|%")


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    doc: str
    text: str
    """The statement as written, with ``:name`` parameters (pgbench's syntax)."""
    sql: str
    """The statement with ``%(name)s`` parameters, ready for a psycopg cursor."""
    params: frozenset[str]


def _to_pyformat(text: str) -> tuple[str, frozenset[str]]:
    params: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if match.group(1):
            params.add(match.group(1))
            return f"%({match.group(1)})s"
        return "%%" if token == "%" else token

    return _TOKEN.sub(replace, text), frozenset(params)


def parse(source: str) -> dict[str, Query]:
    """Split ``source`` into its named statements."""
    headers = list(_HEADER.finditer(source))
    queries: dict[str, Query] = {}
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(source)
        lines = source[header.end() : end].strip("\n").splitlines()
        doc_lines = []
        while lines and lines[0].startswith("--"):
            doc_lines.append(lines.pop(0).lstrip("-").strip())
        text = "\n".join(lines).strip().rstrip(";")
        name = header.group(1)
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        if not text:
            raise ValueError(f"query {name!r} has no statement")
        sql, params = _to_pyformat(text)
        queries[name] = Query(name, " ".join(doc_lines), text, sql, params)
    return queries


def load(path: Path) -> dict[str, Query]:
    return parse(path.read_text())
