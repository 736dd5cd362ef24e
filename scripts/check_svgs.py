"""Check the hand-written SVG diagrams and the READMEs that embed them.

Every ``.svg`` under ``assets/`` must be well-formed XML with an ``<svg>`` root in the SVG
namespace, a ``viewBox`` of four numbers with a positive size, and a non-empty ``<title>``
(screen readers announce it). Every SVG that the READMEs, ``CONTRIBUTING.md`` or a page of
``docs/`` embeds, as ``](path.svg)``, ``[label]: path.svg`` or ``src="path.svg"``, must exist
(relative to the file that embeds it).

Run from anywhere: ``python scripts/check_svgs.py``. Exits 1 and names each problem.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
MARKDOWN_FILES = (
    ROOT / "README.md",
    ROOT / "backend" / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").rglob("*.md")),
)
SVG_NS = "http://www.w3.org/2000/svg"

# ](target.svg) or ](target.svg "title"), [label]: target.svg, src="target.svg" / src='...'
REFERENCE_PATTERNS = (
    re.compile(r"\]\(\s*<?([^)\s>]+?\.svg)(?:[?#][^)\s>]*)?>?(?:\s+[\"'(][^)]*)?\)", re.I),
    re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?\.svg)(?:[?#]\S*)?>?(?:\s|$)", re.I | re.M),
    re.compile(r"""\bsrc\s*=\s*["']([^"']+?\.svg)(?:[?#][^"']*)?["']""", re.I),
)


def check_svg(path: Path) -> list[str]:
    """Return the problems found in one SVG file (empty when it is fine)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return [f"not well-formed XML ({exc})"]

    if root.tag != f"{{{SVG_NS}}}svg":
        return [f"root element is {root.tag!r}, expected <svg xmlns={SVG_NS!r}>"]

    problems = []
    view_box = root.get("viewBox")
    if view_box is None:
        problems.append("the <svg> root has no viewBox")
    else:
        parts = view_box.replace(",", " ").split()
        try:
            numbers = [float(part) for part in parts]
        except ValueError:
            numbers = []
        if len(numbers) != 4 or numbers[2] <= 0 or numbers[3] <= 0:
            problems.append(f"viewBox {view_box!r} is not four numbers with a positive size")

    title = root.find(f"{{{SVG_NS}}}title")
    if title is None:
        problems.append("no <title> child of the <svg> root")
    elif not "".join(title.itertext()).strip():
        problems.append("the <title> is empty")
    return problems


def svg_references(markdown: Path) -> list[str]:
    """Return the local SVG targets a markdown file embeds or links, in file order."""
    text = markdown.read_text(encoding="utf-8")
    found: list[tuple[int, str]] = []
    for pattern in REFERENCE_PATTERNS:
        found.extend((match.start(), match.group(1)) for match in pattern.finditer(text))
    return [
        target
        for _, target in sorted(found)
        if not re.match(r"^(?:[a-z][a-z0-9+.-]*:|//)", target, re.I)
    ]


def main() -> int:
    problems: list[str] = []

    svg_files = sorted(ASSETS.rglob("*.svg")) if ASSETS.is_dir() else []
    if not svg_files:
        problems.append(f"{ASSETS.relative_to(ROOT)}/: no .svg files found")
    for svg in svg_files:
        problems.extend(f"{svg.relative_to(ROOT)}: {p}" for p in check_svg(svg))

    reference_count = 0
    for markdown in MARKDOWN_FILES:
        if not markdown.is_file():
            continue
        for target in svg_references(markdown):
            reference_count += 1
            resolved = (markdown.parent / unquote(target)).resolve()
            if not resolved.is_file():
                problems.append(
                    f"{markdown.relative_to(ROOT)}: image {target!r} does not exist "
                    f"(looked for {resolved})"
                )

    if problems:
        for problem in problems:
            print(f"svg check: {problem}", file=sys.stderr)
        print(f"svg check: FAILED with {len(problems)} problem(s)", file=sys.stderr)
        return 1

    print(f"svg check: {len(svg_files)} files ok, {reference_count} references ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
