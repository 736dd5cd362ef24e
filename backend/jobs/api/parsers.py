"""The API's one JSON parser: every body is checked for what the database cannot store."""

from typing import Any

from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from ..storable import field_problems, json_problem


class JobJSONParser(JSONParser):
    """DRF's JSON parser, plus two refusals that would otherwise be 500s:

    * absurdly deep nesting is a parse error (the decoder's ``RecursionError``);
    * NUL or a lone surrogate anywhere in the body, in a value or a key, known to the
      view's serializer or not, is a 400 naming the top-level field
      (``jobs.storable.field_problems``), before any view sees the data.

    The body size cap is Django's ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (set from
    ``JOB_API_MAX_BODY_BYTES``); ``jobs.api.errors`` turns it into a 413.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            data: Any = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nested too deeply.") from exc
        if isinstance(data, dict):
            problems = field_problems(data.items())
            if problems:
                raise ValidationError(problems)
        elif (problem := json_problem(data)) is not None:
            raise ValidationError({"non_field_errors": [problem]})
        return data
