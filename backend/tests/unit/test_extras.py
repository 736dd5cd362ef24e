"""The package's extras: what each installs, what a missing one says, and that the ranges
the package declares admit the versions this project pins."""

import re
import tomllib

import pytest
from django.core.exceptions import ImproperlyConfigured
from packaging.requirements import Requirement

from harness import BACKEND_DIR
from jobs import extras

PYPROJECT = tomllib.loads((BACKEND_DIR / "pyproject.toml").read_text())["project"]


def pins() -> dict[str, str]:
    """requirements.txt: distribution (normalised) -> pinned version."""
    found = {}
    for line in (BACKEND_DIR / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==")
            found[re.sub(r"\[.*\]", "", name).lower().replace("_", "-")] = version
    return found


def test_a_missing_extra_is_named_with_the_command_that_installs_it(monkeypatch):
    monkeypatch.setattr(extras, "find_spec", lambda name: None if name == "drf_spectacular" else 1)
    with pytest.raises(ImproperlyConfigured) as refused:
        extras.require("api", "The REST API")
    assert str(refused.value) == (
        "The REST API needs drf_spectacular, not installed here: "
        'pip install "job-queue-backend[api]"'
    )
    assert not extras.installed("api") and extras.installed("metrics")


def test_the_package_declares_exactly_the_extras_the_app_knows():
    declared = PYPROJECT["optional-dependencies"]
    assert set(declared) == {*extras.EXTRAS, "all"}
    assert declared["all"] == [f"{PYPROJECT['name']}[{','.join(extras.EXTRAS)}]"]
    assert PYPROJECT["name"] == extras.DISTRIBUTION
    # cronsim parses the schedules' cron expressions: small, pure Python.
    assert [Requirement(r).name for r in PYPROJECT["dependencies"]] == ["Django", "cronsim"]


def test_every_declared_range_admits_the_version_this_project_pins():
    pinned = pins()
    declared = [*PYPROJECT["dependencies"]]
    for name, requirements in PYPROJECT["optional-dependencies"].items():
        if name != "all":
            declared += requirements
    for line in declared:
        requirement = Requirement(line)
        version = pinned[requirement.name.lower()]
        assert requirement.specifier.contains(version), (line, version)
