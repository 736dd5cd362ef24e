"""The benchmark's tests that still live here run under the suites' conftest
(tests/conftest.py): the PostgreSQL-only skip and the per-test resets."""

from tests.conftest import (  # noqa: F401
    _fresh_stats_cache,
    _plans_as_the_test_left_them,
    _postgres_is_required_in_ci,
    pytest_collection_modifyitems,
)
