"""Check what the documentation promises beyond what ``mkdocs build --strict`` checks.

``make test-site`` builds the site under ``docs/`` strictly: a broken link, anchor or image
there fails. This script checks the rest, from the repository root:

- every relative link of ``README.md``, ``CONTRIBUTING.md``, ``CHANGELOG.md`` and
  ``backend/README.md`` (images and pages alike) names a file that exists, and a ``#anchor``
  into a Markdown file names one of its headings (GitHub's slugs);
- the configuration reference (``docs/reference/configuration.md``) lists exactly the
  variables of ``.env.example``, each with the default that file sets;
- ``docs/performance.md`` holds the one block ``make bench-readme`` rewrites;
- no issue number in the docs, the READMEs or ``CONTRIBUTING.md``: what changed when, and
  why, belongs in ``CHANGELOG.md`` and in commit messages.

Run from anywhere: ``python scripts/check_docs.py``. Exits 1 and names each problem.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINKED_FILES = ("README.md", "CONTRIBUTING.md", "CHANGELOG.md", "backend/README.md")
CONFIGURATION = DOCS / "reference" / "configuration.md"
PERFORMANCE = DOCS / "performance.md"
BENCH_START, BENCH_END = "<!-- bench:start -->", "<!-- bench:end -->"
NO_ISSUE_NUMBERS = ("README.md", "CONTRIBUTING.md", "backend/README.md", "docs")

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ENV_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=(.*)$")
TABLE_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \| (.*) \|$")
ISSUE = re.compile(r"issue ?[0-9]+", re.IGNORECASE)


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's label
    text = re.sub(r"[`*_]", "", text.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(markdown.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def check_links(path: Path) -> list[str]:
    problems = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^(?:[a-z][a-z0-9+.-]*:|//)", target, re.I):
                continue  # a URL, mailto: and the like
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / unquote(file_part)).resolve() if file_part else path
            where = path.relative_to(ROOT)
            if not resolved.exists():
                problems.append(f"{where}: link {target!r}: {file_part} does not exist")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                problems.append(f"{where}: link {target!r}: no heading #{anchor} there")
    return problems


def env_example() -> dict[str, tuple[str, bool]]:
    """NAME -> (value, commented out)."""
    found = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        match = ENV_LINE.match(line.strip())
        if match:
            found[match.group(1)] = (match.group(2).strip(), line.startswith("#"))
    return found


def check_configuration() -> list[str]:
    documented = {
        match.group(1): match.group(2)
        for match in map(TABLE_ROW.match, CONFIGURATION.read_text().splitlines())
        if match
    }
    where = CONFIGURATION.relative_to(ROOT)
    example = env_example()
    problems = [
        f"{where}: {name} is in .env.example but not documented"
        for name in sorted(set(example) - set(documented))
    ]
    problems += [
        f"{where}: {name} is documented but not in .env.example"
        for name in sorted(set(documented) - set(example))
    ]
    for name, (value, commented) in sorted(example.items()):
        if commented or name not in documented:
            continue  # documented but deliberately unset: the page states the behaviour
        expected = f"`{value}`" if value else "empty"
        if documented[name] != expected:
            problems.append(
                f"{where}: {name}'s default is {documented[name]}, .env.example sets {expected}"
            )
    return problems


def check_performance_block() -> list[str]:
    text = PERFORMANCE.read_text()
    if text.count(BENCH_START) != 1 or text.count(BENCH_END) != 1:
        return [f"{PERFORMANCE.relative_to(ROOT)}: needs one {BENCH_START} ... {BENCH_END} block"]
    if text.index(BENCH_START) > text.index(BENCH_END):
        return [f"{PERFORMANCE.relative_to(ROOT)}: {BENCH_END} comes before {BENCH_START}"]
    return []


def check_issue_numbers() -> list[str]:
    problems = []
    for name in NO_ISSUE_NUMBERS:
        path = ROOT / name
        files = sorted(path.rglob("*.md")) if path.is_dir() else [path]
        for markdown in files:
            for number, line in enumerate(markdown.read_text().splitlines(), start=1):
                for match in ISSUE.finditer(line):
                    where = markdown.relative_to(ROOT)
                    problems.append(f"{where}:{number}: names {match.group(0)!r} (CHANGELOG.md)")
    return problems


def main() -> int:
    problems: list[str] = []
    link_count = 0
    for name in LINKED_FILES:
        path = ROOT / name
        if path.is_file():
            link_count += sum(
                len(LINK.findall(line)) for line in prose_lines(path.read_text(encoding="utf-8"))
            )
            problems += check_links(path)
    problems += check_configuration()
    problems += check_performance_block()
    problems += check_issue_numbers()
    if problems:
        for problem in problems:
            print(f"docs check: {problem}", file=sys.stderr)
        print(f"docs check: FAILED with {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        f"docs check: {link_count} links of {len(LINKED_FILES)} files, the configuration "
        "reference, the performance block and the issue-number rule ok"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
