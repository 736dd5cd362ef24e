# django-unfold ships no type information; see admin.pyi. Both decorators are used with
# keyword arguments only, so only that form is declared.
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.db.models.expressions import BaseExpression, Combinable
from django.http import HttpResponse
from django.utils.functional import _StrOrPromise

_F = TypeVar("_F", bound=Callable[..., Any])

# Sets admin attributes on the function and returns it unchanged.
def display(
    *,
    boolean: bool | None = None,
    image: bool | None = None,
    ordering: str | Combinable | BaseExpression | None = None,
    description: _StrOrPromise | None = None,
    empty_value: str | None = None,
    dropdown: bool | None = None,
    label: bool | _StrOrPromise | dict[str, str] | None = None,
    header: bool | None = None,
    wrapper_class: str | None = None,
    formatting: str | None = None,
) -> Callable[[_F], _F]: ...

# Wraps the action in a permission check that may answer with its own response.
def action(
    *,
    permissions: Iterable[str] | None = None,
    description: _StrOrPromise | None = None,
    url_path: str | None = None,
    attrs: dict[str, Any] | None = None,
    icon: str | None = None,
    variant: Any = ...,
    dialog: Any = None,
    extra_options: dict[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., HttpResponse | None]]: ...
