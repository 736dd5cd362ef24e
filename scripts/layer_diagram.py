"""Draw the backend's layer diagram from the contract `make lint` enforces.

Reads ``[tool.importlinter]`` in ``backend/pyproject.toml``: the ``layers`` contract gives
the rows (top to bottom, each row's modules side by side), and each ``forbidden`` contract
on third-party packages gives a note of which modules may import them (the container's
modules its sources leave out). Writes ``assets/images/backend/layers.svg``, which
``docs/explanation/architecture.md`` embeds.

    python scripts/layer_diagram.py          # write the SVG
    python scripts/layer_diagram.py --check  # exit 1 if the committed SVG is stale

``make test-docs`` runs the check, as ``make test-types`` does for the dashboard's types:
change the contract, run the script, commit both.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from html import escape
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "backend" / "pyproject.toml"
OUTPUT = ROOT / "assets" / "images" / "backend" / "layers.svg"

WIDTH = 1200
MARGIN = 40
ROW_HEIGHT = 44
ROW_GAP = 18
BOX_GAP = 12
CHAR_WIDTH = 7.8  # of the 13 px monospace labels
TOP = 104
NOTE_LINE = 20


def contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def rows(layers: dict[str, Any]) -> list[list[str]]:
    """The layers contract's rows, top first, each a list of its modules."""
    found = []
    for layer in layers["layers"]:
        separator = "|" if "|" in layer else ":"
        found.append([name.strip() for name in layer.split(separator)])
    return found


def is_package(container: str, name: str) -> bool:
    return (ROOT / "backend" / Path(*container.split(".")) / name / "__init__.py").is_file()


def third_party_notes(found: dict[str, dict[str, Any]], container: str) -> list[str]:
    """One line per forbidden contract on packages outside the app: which of the
    container's modules may import them."""
    modules = [name for row in rows(found["layers"]) for name in row]
    notes = []
    for contract in found.values():
        if contract.get("type") != "forbidden":
            continue
        forbidden = [str(m) for m in contract["forbidden_modules"]]
        if any(m.startswith(f"{container}.") for m in forbidden):
            continue
        sources = {str(m) for m in contract["source_modules"]}
        ignored = [str(i) for i in contract.get("ignore_imports", [])]
        # Every module but those whose imports are ignored, or the modules not in sources.
        if f"{container}.**" in sources:
            allowed = [
                i.split(" -> ")[0].removeprefix(f"{container}.")
                for i in ignored
                if ".tests" not in i
            ]
        else:
            allowed = [m for m in modules if f"{container}.{m}" not in sources]
        if contract.get("allow_indirect_imports"):
            notes.append(f"{', '.join(forbidden)}: imported only by {', '.join(allowed)}")
        else:
            notes.append(
                f"{', '.join(forbidden)}: reached, directly or through other modules, only "
                f"from {', '.join(allowed)}"
            )
    return notes


def box(x: float, y: float, width: float, label: str) -> str:
    return (
        f'  <rect class="box" x="{x:.1f}" y="{y}" width="{width:.1f}" height="{ROW_HEIGHT}" '
        f'rx="8"/>\n'
        f'  <text class="mono" x="{x + width / 2:.1f}" y="{y + ROW_HEIGHT / 2 + 4.5:.1f}" '
        f'text-anchor="middle">{escape(label)}</text>\n'
    )


def render() -> str:
    found = contracts()
    layers = found["layers"]
    container = str(layers["containers"][0])
    table = rows(layers)
    notes = third_party_notes(found, container)
    usable = WIDTH - 2 * MARGIN
    body = []
    y = TOP
    for index, row in enumerate(table):
        labels = [f"{name}/" if is_package(container, name) else name for name in row]
        widths = [len(label) * CHAR_WIDTH + 28 for label in labels]
        total = sum(widths) + BOX_GAP * (len(widths) - 1)
        scale = min(1.0, usable / total)
        x = MARGIN + (usable - total * scale) / 2
        for label, width in zip(labels, widths, strict=True):
            body.append(box(x, y, width * scale, label))
            x += (width + BOX_GAP) * scale
        if index < len(table) - 1:
            arrow_y = y + ROW_HEIGHT
            body.append(
                f'  <line class="arrow" x1="{WIDTH / 2}" y1="{arrow_y + 2}" '
                f'x2="{WIDTH / 2}" y2="{arrow_y + ROW_GAP - 2}" marker-end="url(#down)"/>\n'
            )
        y += ROW_HEIGHT + ROW_GAP
    y += 6
    for note in notes:
        body.append(f'  <text class="note" x="{MARGIN}" y="{y}">{escape(note)}</text>\n')
        y += NOTE_LINE
    height = y + MARGIN / 2
    title = f"Layers of the {container} package, as the import contract enforces them"
    description = (
        f"{len(table)} rows, top to bottom: "
        + "; ".join(", ".join(row) for row in table)
        + ". A module may import modules of the rows below its own, never above; "
        "modules of one row do not import each other. " + " ".join(f"{note}." for note in notes)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-labelledby="title desc" '
        'font-family="Inter, Segoe UI, Helvetica, Arial, sans-serif">\n'
        f'  <title id="title">{escape(title)}</title>\n'
        f'  <desc id="desc">{escape(description)}</desc>\n'
        "  <defs>\n"
        "    <style>\n"
        "      .title { font-size: 20px; font-weight: 700; fill: #0f172a; }\n"
        "      .subtitle { font-size: 13px; fill: #64748b; }\n"
        "      .box { fill: #eef2ff; stroke: #6366f1; stroke-width: 1.5; }\n"
        '      .mono { font-family: "JetBrains Mono", SFMono-Regular, Menlo, Consolas, '
        '"DejaVu Sans Mono", monospace; font-size: 13px; fill: #3730a3; }\n'
        "      .arrow { stroke: #475569; stroke-width: 1.6; }\n"
        "      .note { font-size: 13px; fill: #334155; }\n"
        "    </style>\n"
        '    <marker id="down" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#475569"/></marker>\n'
        "  </defs>\n"
        f'  <rect width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>\n'
        f'  <text class="title" x="{MARGIN}" y="40">{escape(container)}: layers, top to '
        "bottom</text>\n"
        f'  <text class="subtitle" x="{MARGIN}" y="62">A module imports only modules of the rows '
        "below its own; the boxes of one row do not import each other.</text>\n"
        f'  <text class="subtitle" x="{MARGIN}" y="80">Drawn by scripts/layer_diagram.py from '
        "[tool.importlinter] in backend/pyproject.toml, the contracts `make lint` enforces."
        "</text>\n" + "".join(body) + "</svg>\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the SVG is stale")
    args = parser.parse_args()
    drawn = render()
    if args.check:
        if not OUTPUT.is_file() or OUTPUT.read_text() != drawn:
            print(
                f"layer diagram: {OUTPUT.relative_to(ROOT)} is stale; run "
                "python scripts/layer_diagram.py and commit it",
                file=sys.stderr,
            )
            return 1
        print(f"layer diagram: {OUTPUT.relative_to(ROOT)} matches the import contracts")
        return 0
    OUTPUT.write_text(drawn)
    print(f"layer diagram: wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
