# django-unfold ships no type information. These stubs declare only what jobs/admin.py uses,
# as it is at runtime: unfold's classes extend Django's, so Django's stubs check our options.
from typing import Any

from django.contrib import admin

class ModelAdmin(admin.ModelAdmin[Any]): ...

class TabularInline(admin.TabularInline[Any, Any]):
    per_page: int | None
