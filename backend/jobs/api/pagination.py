"""Pagination for the two lists. A malformed ``limit``, ``offset`` or ``cursor`` is a 400
naming the parameter (DRF's stock classes would silently fall back, or answer 404 for a
bad cursor); a ``limit`` above the maximum is lowered to the maximum."""

import re
from typing import Any

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import (
    Cursor,
    CursorPagination,
    LimitOffsetPagination,
    PageNumberPagination,
)
from rest_framework.request import Request
from rest_framework.response import Response

# A cursor's position is an event id: a bigint, so at most 19 digits (and at most
# _MAX_ID). A longer one names no event, and past 4,300 digits Python refuses to
# convert it at all, which used to surface as a 500 from the id lookup.
_POSITION = re.compile(r"[0-9]{1,19}")
_MAX_ID = 2**63 - 1
_INTEGER = re.compile(r"-?[0-9]{1,18}")


def _query_int(request: Request, name: str, *, minimum: int) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not _INTEGER.fullmatch(raw):
        raise ValidationError({name: ["A valid integer is required."]})
    value = int(raw)
    if value < minimum:
        raise ValidationError({name: [f"Ensure this value is greater than or equal to {minimum}."]})
    return value


def _bounds(schema_parameters: list[dict[str, Any]], name: str, **bounds: int) -> None:
    for parameter in schema_parameters:
        if parameter["name"] == name:
            parameter["schema"].update(bounds)


class JobPagination(LimitOffsetPagination):
    default_limit = 25
    max_limit = 100
    limit_query_description = f"Jobs per page (default {default_limit}, at most {max_limit})."

    def get_limit(self, request: Request) -> int:
        limit = _query_int(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        offset = _query_int(request, self.offset_query_param, minimum=0)
        return 0 if offset is None else offset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        _bounds(parameters, self.limit_query_param, minimum=1, default=self.default_limit)
        _bounds(parameters, self.offset_query_param, minimum=0, default=0)
        return parameters


class WorkflowPagination(PageNumberPagination):
    """Pages of 50 by number (``page``, from 1), in the job list's shape (count, next,
    previous, results). A ``page`` that is not a whole number from 1 is a 400; one past
    the last page, a 404 as DRF answers it."""

    page_size = 50

    def get_page_number(self, request: Request, paginator: Any) -> int | str:
        page = _query_int(request, self.page_query_param, minimum=1)
        return 1 if page is None else page

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        _bounds(parameters, self.page_query_param, minimum=1, default=1)
        return parameters


class JobEventCursorPagination(CursorPagination):
    """Newest first by id: new events never shift the pages a client is reading."""

    ordering = "-id"
    page_size = 50
    max_page_size = 200
    page_size_query_param = "limit"
    page_size_query_description = f"Events per page (default {page_size}, at most {max_page_size})."

    def get_page_size(self, request: Request) -> int:
        limit = _query_int(request, self.page_size_query_param, minimum=1)
        return self.page_size if limit is None else min(limit, self.max_page_size)

    def decode_cursor(self, request: Request) -> Cursor | None:
        invalid = ValidationError({self.cursor_query_param: [self.invalid_cursor_message]})
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise invalid from None
        # The position is compared with the integer id, so it must be one. The stubs type it
        # int | None, but decode_cursor leaves it the str it read from the query string.
        if cursor is not None and not _valid_position(cursor.position):  # type: ignore[arg-type]
            raise invalid
        return cursor

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        _bounds(parameters, self.page_size_query_param, minimum=1, default=self.page_size)
        return parameters


class JobTimelinePagination(JobEventCursorPagination):
    """One job's events oldest first by id, as the spec's plain JSON array, bounded the way
    GitHub's REST API is: at most ``limit`` events per response, further pages announced in
    an RFC 8288 ``Link`` header (``rel="next"`` while more events follow, ``rel="prev"``
    past the first page). A timeline that fits in one page arrives whole, without the
    header. The pages a client has read never change, and new events only ever add to the
    last page (its ``next`` link appears once it is full)."""

    ordering = "id"
    page_size = 100
    max_page_size = 500
    page_size_query_description = f"Events per page (default {page_size}, at most {max_page_size})."

    def get_paginated_response(self, data: Any) -> Response:
        links = [(self.get_next_link(), "next"), (self.get_previous_link(), "prev")]
        header = ", ".join(f'<{url}>; rel="{rel}"' for url, rel in links if url)
        return Response(data, headers={"Link": header} if header else None)

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return schema


def _valid_position(position: str | None) -> bool:
    return position is None or (
        _POSITION.fullmatch(position) is not None and int(position) <= _MAX_ID
    )
