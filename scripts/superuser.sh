#!/usr/bin/env bash
# `make superuser`: create an admin login. At a terminal, Django's createsuperuser asks for
# what it needs. Without one (CI, a pipe, `docker compose exec -T`) it reads Django's own
# DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_PASSWORD and DJANGO_SUPERUSER_EMAIL, or fails
# saying so: createsuperuser alone would print "skipped" and exit 0 with no login created.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$ROOT/backend/.venv/bin/python}"
cd "$ROOT/backend"
if [ -t 0 ] && [ -z "${DJANGO_SUPERUSER_PASSWORD:-}" ]; then
  exec "$PY" manage.py createsuperuser
fi
missing=()
for name in DJANGO_SUPERUSER_USERNAME DJANGO_SUPERUSER_PASSWORD; do
  [ -n "${!name:-}" ] || missing+=("$name")
done
if [ "${#missing[@]}" -gt 0 ]; then
  cat >&2 <<MSG
make superuser: no terminal to ask on, and ${missing[*]} not set.
Run it in a terminal, or set the login in the environment:
  DJANGO_SUPERUSER_USERNAME=admin DJANGO_SUPERUSER_PASSWORD=... [DJANGO_SUPERUSER_EMAIL=...] make superuser
MSG
  exit 2
fi
export DJANGO_SUPERUSER_EMAIL="${DJANGO_SUPERUSER_EMAIL:-}"
exec "$PY" manage.py createsuperuser --noinput
