"""Named SQL statements read from a ``.sql`` file, the way Procrastinate keeps its queries.

A file holds statements each headed by ``-- name: <name>``; the comment lines under the
header say what the statement guarantees. Parameters are written ``:name``, which is what
``pgbench`` understands, so the benchmark runs the very text the driver runs; for psycopg
they become ``%(name)s``, and ``$1``, ``$2``... in ``positional`` (``::`` casts, quoted
literals and comments are left alone).

A piece of SQL that several statements share (a predicate, a join) is written once under
``-- fragment: <name>`` and placed with ``{name}``; it is expanded when the file is read, so
every statement's text is complete SQL. Continuation lines take the placeholder's line's
indentation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_HEADER = re.compile(r"^--\s*(name|fragment):\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)
# A literal, a comment, a cast, or a parameter; only the last is rewritten.
_TOKEN = re.compile(r"'(?:[^']|'')*'|--[^\n]*|::|(?<![\w:]):([A-Za-z_]\w*)|%")
# A literal, a comment, or a fragment's placeholder; only the last is replaced.
_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|--[^\n]*|\{([a-z_][a-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Query:
    name: str
    doc: str
    text: str
    """The statement as written, with ``:name`` parameters (pgbench's syntax)."""
    sql: str
    """The statement with ``%(name)s`` parameters, ready for a psycopg cursor."""
    params: frozenset[str]
    positional: str
    """The statement with ``$1``, ``$2``... parameters, for a ``psycopg.RawCursor``: psycopg
    sends it as it is, where it would parse the ``%(name)s`` text on every call (it caches
    that parse only for statements under 4 KiB)."""
    order: tuple[str, ...]
    """The parameter names in the order of ``positional``'s numbers."""

    def values(self, params: dict[str, object]) -> list[object]:
        """``params`` as the list ``positional`` takes (names it does not use are left out)."""
        return [params[name] for name in self.order]


def _to_pyformat(text: str) -> tuple[str, frozenset[str]]:
    params: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if match.group(1):
            params.add(match.group(1))
            return f"%({match.group(1)})s"
        return "%%" if token == "%" else token

    return _TOKEN.sub(replace, text), frozenset(params)


def _to_positional(text: str) -> tuple[str, tuple[str, ...]]:
    """``$n`` for the n-th distinct name, the same number wherever a name recurs."""
    order: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if not name:
            return match.group(0)
        if name not in order:
            order.append(name)
        return f"${order.index(name) + 1}"

    return _TOKEN.sub(replace, text), tuple(order)


def _expand(text: str, fragments: dict[str, str], used: set[str], where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)
        if name not in fragments:
            raise ValueError(f"{where} uses {{{name}}}, which is no fragment defined above it")
        used.add(name)
        line_start = text.rfind("\n", 0, match.start()) + 1
        line = text[line_start : match.start()]
        indent = line[: len(line) - len(line.lstrip())]
        return fragments[name].replace("\n", "\n" + indent)

    return _PLACEHOLDER.sub(replace, text)


def parse(source: str) -> dict[str, Query]:
    """Split ``source`` into its named statements, each with its fragments expanded."""
    headers = list(_HEADER.finditer(source))
    queries: dict[str, Query] = {}
    fragments: dict[str, str] = {}
    used: set[str] = set()
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(source)
        lines = source[header.end() : end].strip("\n").splitlines()
        doc_lines = []
        while lines and lines[0].startswith("--"):
            doc_lines.append(lines.pop(0).lstrip("-").strip())
        kind, name = header.groups()
        text = "\n".join(lines).strip().rstrip(";")
        defined = fragments if kind == "fragment" else queries
        if name in defined:
            raise ValueError(f"{kind} {name!r} is defined twice")
        if not text:
            raise ValueError(f"{kind} {name!r} has no SQL")
        text = _expand(text, fragments, used, f"{kind} {name!r}")
        if kind == "fragment":
            fragments[name] = text
            continue
        sql, params = _to_pyformat(text)
        positional, order = _to_positional(text)
        queries[name] = Query(name, " ".join(doc_lines), text, sql, params, positional, order)
    unused = sorted(set(fragments) - used)
    if unused:
        raise ValueError(f"fragments {unused} are used by no statement")
    return queries


def load(path: Path) -> dict[str, Query]:
    return parse(path.read_text())


def plpgsql_body(query: Query) -> str:
    """``query`` as the body of a PL/pgSQL function returning its rows: ``:param`` becomes
    the argument ``p_param``, and column names win over the function's OUT variables
    (``#variable_conflict``), so the statement runs as written."""

    def replace(match: re.Match[str]) -> str:
        return f"p_{match.group(1)}" if match.group(1) else match.group(0)

    body = _TOKEN.sub(replace, query.text)
    return f"\n#variable_conflict use_column\nBEGIN\nRETURN QUERY\n{body};\nEND\n"


def plpgsql_function(query: Query, name: str, args: dict[str, str], columns: str) -> str:
    """``CREATE OR REPLACE FUNCTION name`` with ``plpgsql_body(query)``.

    ``args`` maps each of the statement's parameters to its SQL type; ``columns`` is the
    ``RETURNS TABLE`` list. PL/pgSQL plans the statement once per server session: what a
    prepared statement gives, for clients that cannot prepare (a transaction pooler
    between them and the server).
    """
    if set(args) != query.params:
        raise ValueError(f"{name} must take exactly {sorted(query.params)}, got {sorted(args)}")
    signature = ", ".join(f"p_{param} {kind}" for param, kind in args.items())
    return (
        f"CREATE OR REPLACE FUNCTION {name}({signature})\n"
        f"RETURNS TABLE ({columns})\n"
        f"LANGUAGE plpgsql AS $function${plpgsql_body(query)}$function$"
    )
