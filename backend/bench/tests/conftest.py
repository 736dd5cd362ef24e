"""The bench's own tests: its arithmetic, its rendering and the plans of the statements it
runs. They import the bench; the app's tests do not, and neither imports the other's."""

from pathlib import Path

import pytest
from django.conf import settings

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The plan tests read PostgreSQL's EXPLAIN: the PostgreSQL pass of `make test` runs them.
    if settings.DATABASE_ENGINE == "postgres":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_ENGINE=postgres)")
    for item in items:
        if "postgres" in item.keywords and item.path.is_relative_to(HERE):
            item.add_marker(skip)
