"""What the reads of several sub-domains share: time windows in whole minutes and epoch
seconds as the database computes them.

Data access: none of its own; ``EpochSeconds`` is an ORM expression the others use.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import F, Func, IntegerField, TextField, Value

from .. import rollups


class EpochSeconds(Func):
    """Whole seconds since the Unix epoch of a datetime column, floored."""

    output_field = IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(
            compiler, connection, template="FLOOR(EXTRACT(EPOCH FROM %(expressions)s))::bigint"
        )

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # SQLite stores UTC text "YYYY-MM-DD HH:MM:SS.ffffff"; the fraction is cut off
        # because strftime would round it to milliseconds (and 59.9999 up a second).
        return self.as_sql(
            compiler,
            connection,
            template="CAST(strftime('%%%%s', substr(%(expressions)s, 1, 19)) AS INTEGER)",
        )


class ObjectKeyText(Func):
    """The text of a JSON object's member ``name`` (NULL without it), for any name: Django's
    key transform reads a name of digits as an array index, which an object never has."""

    output_field = TextField()

    def __init__(self, column: str, name: str) -> None:
        super().__init__(F(column), Value(name))

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="jsonb_extract_path_text")

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        column, name = (compiler.compile(arg) for arg in self.get_source_expressions())
        sql = f"(SELECT value FROM json_each({column[0]}) WHERE key = {name[0]})"
        return sql, (*column[1], *name[1])


def _window(now: datetime, minutes: int) -> tuple[int, datetime]:
    """The first epoch minute of a window of ``minutes`` whole minutes ending with the one
    that holds ``now`` (partial), and that minute's start."""
    first = int(now.timestamp()) // 60 - (minutes - 1)
    return first, rollups.minute_start(first)
