"""The configuration reference in backend/README.md matches .env.example exactly."""

import re

from harness import REPO_DIR as REPO

ENV_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$")
TABLE_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \| (.*) \|$")


def env_example() -> dict[str, tuple[str, bool]]:
    """NAME -> (value, commented out)."""
    found = {}
    for line in (REPO / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line.strip())
        if match:
            found[match.group(1)] = (match.group(2).strip(), line.startswith("#"))
    return found


def readme_defaults() -> dict[str, str]:
    section = (REPO / "backend" / "README.md").read_text().split("## Configuration", 1)[1]
    section = section.split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in map(TABLE_ROW.match, section.splitlines()) if m}


def test_readme_configuration_tables_list_exactly_the_env_example_variables():
    assert set(readme_defaults()) == set(env_example())


def test_readme_defaults_match_the_values_set_in_env_example():
    documented = readme_defaults()
    for name, (value, commented) in env_example().items():
        if commented:
            continue  # documented but deliberately unset: the README states the behaviour
        expected = f"`{value}`" if value else "empty"
        assert documented[name] == expected, name
