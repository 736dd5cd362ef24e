#!/usr/bin/env python3
"""commit-msg hook: a subject of at most 72 characters, a blank line, then the why.

Run by pre-commit at the commit-msg stage (`.pre-commit-config.yaml`) with the path of the
message file; exits 1 with one line per problem. Merge commits git writes itself pass, as do
fixup!/squash! subjects (they are squashed away before they reach main).
"""

from __future__ import annotations

import sys
from pathlib import Path

MAX_SUBJECT = 72
EXEMPT_PREFIXES = ("Merge ", "fixup! ", "squash! ", "amend! ")


def message_lines(text: str) -> list[str]:
    """The message as git will store it: comment lines and the scissors part dropped."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("# ------------------------ >8 ------------------------"):
            break
        if line.startswith("#"):
            continue
        lines.append(line.rstrip())
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def problems(text: str) -> list[str]:
    lines = message_lines(text)
    if not lines:
        return ["the message is empty"]
    subject = lines[0]
    if subject.startswith(EXEMPT_PREFIXES):
        return []
    found = []
    if len(subject) > MAX_SUBJECT:
        found.append(f"the subject has {len(subject)} characters; at most {MAX_SUBJECT}")
    if subject.endswith("."):
        found.append("the subject ends with a full stop")
    if len(lines) > 1 and lines[1]:
        found.append("the subject is not followed by a blank line")
    if not any(line for line in lines[1:]):
        found.append("no body: say why the change is made, after a blank line")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: check_commit_msg.py MESSAGE_FILE", file=sys.stderr)
        return 2
    found = problems(Path(argv[1]).read_text(encoding="utf-8"))
    for problem in found:
        print(f"commit message: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
