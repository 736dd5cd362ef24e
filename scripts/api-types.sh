#!/usr/bin/env bash
# The dashboard's API types, generated: the backend's OpenAPI schema (drf-spectacular)
# through openapi-typescript into frontend/src/api/schema.d.ts.
#   scripts/api-types.sh          regenerate the file (`make types`)
#   scripts/api-types.sh --check  fail, with the difference, when the committed file is not
#                                 what the current schema generates (`make test-types`)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/backend/.venv/bin/python"
GENERATOR="$ROOT/frontend/node_modules/.bin/openapi-typescript"
TARGET="$ROOT/frontend/src/api/schema.d.ts"
REL="${TARGET#"$ROOT"/}"

case "${1:-}" in
  "") check=0 ;;
  --check) check=1 ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

[[ -x "$PY" ]] || { echo "api-types: no backend venv; run: make venv" >&2; exit 1; }
[[ -x "$GENERATOR" ]] || { echo "api-types: openapi-typescript is not installed; run: cd frontend && npm ci" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# The same command and settings as `make test-schema`: a warning fails here too.
(cd "$ROOT/backend" && DATABASE_ENGINE=sqlite "$PY" manage.py spectacular --validate --fail-on-warn --file "$tmp/openapi.yaml")
# A request field with a default may be omitted: keep it optional (`priority?: number`).
"$GENERATOR" "$tmp/openapi.yaml" --default-non-nullable false --output "$tmp/schema.d.ts" >/dev/null

if (( check == 0 )); then
  cp "$tmp/schema.d.ts" "$TARGET"
  echo "api-types: wrote $REL"
  exit 0
fi

if ! diff -u --label "$REL (committed)" --label "$REL (from the current schema)" "$TARGET" "$tmp/schema.d.ts"; then
  cat >&2 <<EOF

api-types: FAILED: $REL does not match the API's OpenAPI schema.
The backend's API changed without regenerating the dashboard's types (the diff above).
Regenerate and commit them, then fix what \`npm run typecheck\` reports:
    make types        (or: cd frontend && npm run types)
EOF
  exit 1
fi
echo "api-types: $REL matches the API schema"
