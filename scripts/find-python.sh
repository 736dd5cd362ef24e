#!/usr/bin/env bash
# Print the path of the newest Python >= 3.12 available (Django 6 needs it).
for p in python3.14 python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3 python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    command -v "$p"
    exit 0
  fi
done
exit 1
