#!/usr/bin/env bash
# End-to-end run: fresh PostgreSQL database, real API + worker, the dashboard built once
# for /api on its own origin and served by Debian's nginx with the front door's config
# (scripts/nginx_conf.py, as the Compose `web` service runs it: CSP and all), Playwright
# driving the system Chromium, in two phases:
#  1. the open local demo: nginx in front of `runserver` with DEBUG=true
#     (e2e/dashboard.spec.ts: the pages and actions; e2e/operator.spec.ts: an operator's
#     checks; e2e/flow-control.spec.ts: the queues and schedules; e2e/attention.spec.ts:
#     what the dashboard says unasked: frozen workers, backlog age, failure triage;
#     e2e/workflows.spec.ts: workflows created through the API, listed and drawn);
#  2. production: nginx in front of gunicorn with DEBUG=false, signed in with a session
#     (e2e/front-door.spec.ts).
# Every process started here is stopped on exit.
#
# Env: CHROMIUM_PATH (default /usr/bin/chromium), E2E_DB (default job_queue_e2e),
# POSTGRES_HOST/PORT/USER/PASSWORD, E2E_KEEP_DB=1 to keep the database,
# CI=true turns "no browser" from a skip into a failure. Extra args go to Playwright.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FRONTEND="$(cd "$HERE/.." && pwd)"
ROOT="$(cd "$FRONTEND/.." && pwd)"
BACKEND="$ROOT/backend"
PY="$BACKEND/.venv/bin/python"
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"

DB="${E2E_DB:-job_queue_e2e}"
PGHOST_="${POSTGRES_HOST:-127.0.0.1}"
PGPORT_="${POSTGRES_PORT:-5432}"
PGUSER_="${POSTGRES_USER:-postgres}"
PGPASSWORD_="${POSTGRES_PASSWORD:-postgres}"

say() { printf 'e2e: %s\n' "$*"; }

if [[ ! -x "$CHROMIUM" ]]; then
  if [[ "${CI:-}" == "true" ]]; then
    say "FAILED: no Chromium at $CHROMIUM and CI=true (install it with: apt-get install -y chromium)"
    exit 1
  fi
  say "SKIPPED: no Chromium at $CHROMIUM. Install it (apt-get install -y chromium) or set CHROMIUM_PATH to run the end-to-end tests."
  exit 0
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
if [[ ! -x "$NGINX" ]]; then
  if [[ "${CI:-}" == "true" ]]; then
    say "FAILED: no nginx and CI=true (install it with: apt-get install -y nginx)"
    exit 1
  fi
  say "SKIPPED: no nginx. Install it (apt-get install -y nginx) to run the end-to-end tests."
  exit 0
fi
[[ -x "$PY" ]] || { say "FAILED: backend venv missing at $PY (run: make venv)"; exit 1; }
[[ -d "$FRONTEND/node_modules" ]] || { say "FAILED: frontend/node_modules missing (run: cd frontend && npm ci)"; exit 1; }
command -v psql >/dev/null || { say "FAILED: psql not found (PostgreSQL client needed to create $DB)"; exit 1; }
command -v curl >/dev/null || { say "FAILED: curl not found"; exit 1; }

LOGS="$FRONTEND/test-results/e2e-logs"
mkdir -p "$LOGS"
PIDS=()

cleanup() {
  local status=$?
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if [[ "${E2E_KEEP_DB:-}" != "1" ]]; then
    PGPASSWORD="$PGPASSWORD_" psql -h "$PGHOST_" -p "$PGPORT_" -U "$PGUSER_" -d postgres -q \
      -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  if [[ $status -ne 0 ]]; then
    say "failed (exit $status); process logs are in $LOGS"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
API_PORT="${E2E_API_PORT:-$(free_port)}"
WEB_PORT="${E2E_WEB_PORT:-$(free_port)}"
API_URL="http://127.0.0.1:$API_PORT/api"
WEB_URL="http://127.0.0.1:$WEB_PORT"

export PGOPTIONS="-c client_min_messages=warning"
say "fresh database $DB on $PGHOST_:$PGPORT_"
PGPASSWORD="$PGPASSWORD_" psql -h "$PGHOST_" -p "$PGPORT_" -U "$PGUSER_" -d postgres -q -v ON_ERROR_STOP=1 \
  -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" -c "CREATE DATABASE \"$DB\"" >/dev/null

export DATABASE_ENGINE=postgres POSTGRES_DB="$DB" POSTGRES_HOST="$PGHOST_" POSTGRES_PORT="$PGPORT_" \
  POSTGRES_USER="$PGUSER_" POSTGRES_PASSWORD="$PGPASSWORD_"
export DEBUG=true ENABLE_DJANGO_DEBUG_TOOLBAR=false PYTHONUNBUFFERED=1
# Quick retries so the demo's retry/backoff path finishes within a test's time.
export JOB_WORKER_BACKOFF_BASE_SECONDS=1 JOB_WORKER_POLL_INTERVAL_MS=200
# A worker sees a cancel request at its next heartbeat (lease/3) and demo.slow checks in
# every min(lease/3, 5 s): a 9 s lease ends a cancelled job within about 6 s, not 15 s.
export JOB_WORKER_LEASE_SECONDS=9
# Flow control: schedules for the Schedules page (one every 30 s, one nightly in
# another time zone, and one that e2e/flow-control.spec.ts triggers by hand and expects to
# fail) and, after migrate, a limited queue for the Queues page.
export JOB_SCHEDULES_JSON='{"e2e-heartbeat": {"type": "demo.success", "interval": 30, "queue": "default"}, "e2e-nightly-report": {"type": "demo.success", "cron": "0 3 * * *", "timezone": "Asia/Tehran", "queue": "reports", "missed": "skip"}, "e2e-failing-report": {"type": "demo.fail", "cron": "30 4 * * *", "queue": "reports", "missed": "skip"}}'
export JOB_CONCURRENCY_KEY_LIMITS_JSON='{"customer:*": 2}'

say "migrate"
(cd "$BACKEND" && "$PY" manage.py migrate --noinput >"$LOGS/migrate.log" 2>&1) \
  || { cat "$LOGS/migrate.log"; exit 1; }
(cd "$BACKEND" && "$PY" manage.py shell -c "
from jobs import services
services.set_queue_limits(queue='emails', concurrency_limit=2, rate_limit=10, rate_period_seconds=1)
" >>"$LOGS/migrate.log" 2>&1) || { cat "$LOGS/migrate.log"; exit 1; }

say "API on $API_URL"
(cd "$BACKEND" && exec "$PY" manage.py runserver "127.0.0.1:$API_PORT" --noreload) >"$LOGS/api.log" 2>&1 &
PIDS+=($!)

say "worker"
(cd "$BACKEND" && exec "$PY" manage.py run_job_workers) >"$LOGS/worker.log" 2>&1 &
PIDS+=($!)
# e2e/attention.spec.ts freezes this process (SIGSTOP) to show what a dead worker looks like.
export E2E_WORKER_PID=$!

say "build the dashboard for /api on its own origin"
(cd "$FRONTEND" && VITE_API_BASE_URL=/api VITE_POLL_INTERVAL_MS=500 \
  node node_modules/vite/bin/vite.js build --outDir dist-e2e --emptyOutDir --logLevel warn) >"$LOGS/build.log" 2>&1 \
  || { cat "$LOGS/build.log"; exit 1; }

# nginx with the front door's config in front of API port $1, listening on port $2.
serve_front_door() {
  local prefix="$LOGS/nginx-$2"
  rm -rf "$prefix"
  "$PY" "$ROOT/scripts/nginx_conf.py" --write "$prefix" --upstream "127.0.0.1:$1" \
    --listen "127.0.0.1:$2" --root "$FRONTEND/dist-e2e" >/dev/null
  "$NGINX" -p "$prefix" -c "$prefix/nginx.conf" >"$LOGS/nginx-$2.log" 2>&1 &
  PIDS+=($!)
}

say "serve it through nginx on $WEB_URL"
serve_front_door "$API_PORT" "$WEB_PORT"

wait_for() {
  local url="$1" name="$2"
  for _ in $(seq 1 120); do
    if curl -fs -o /dev/null "$url"; then return 0; fi
    for pid in "${PIDS[@]}"; do
      kill -0 "$pid" 2>/dev/null || { say "a process exited early while waiting for $name"; tail -n 40 "$LOGS"/*.log; return 1; }
    done
    sleep 0.5
  done
  say "$name did not come up at $url"
  tail -n 40 "$LOGS"/*.log
  return 1
}
wait_for "$API_URL/health/" "API"
wait_for "$WEB_URL/api/health/" "dashboard and API through nginx"

say "playwright with $CHROMIUM ($("$CHROMIUM" --version 2>/dev/null | head -n1))"
cd "$FRONTEND"
E2E_BASE_URL="$WEB_URL" E2E_API_URL="$API_URL" CHROMIUM_PATH="$CHROMIUM" \
  SCREENSHOT_DIR="${SCREENSHOT_DIR:-$ROOT/assets/screenshots}" \
  node node_modules/@playwright/test/cli.js test e2e/dashboard.spec.ts e2e/operator.spec.ts e2e/flow-control.spec.ts \
  e2e/attention.spec.ts e2e/workflows.spec.ts --pass-with-no-tests "$@"

# --- Phase 2: production behind nginx -----------------------------------------------------
PROD_API_PORT="$(free_port)"
PROD_WEB_PORT="$(free_port)"
PROD_URL="http://127.0.0.1:$PROD_WEB_PORT"
E2E_USER=operator
E2E_PASSWORD="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(18))')"

say "an operator account (Job operators group)"
(cd "$BACKEND" && "$PY" manage.py create_job_roles >/dev/null \
  && E2E_USER="$E2E_USER" E2E_PASSWORD="$E2E_PASSWORD" "$PY" manage.py shell -c "
import os
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
user = get_user_model().objects.create_user(os.environ['E2E_USER'], password=os.environ['E2E_PASSWORD'])
user.groups.add(Group.objects.get(name='Job operators'))
") >"$LOGS/prod-user.log" 2>&1 || { cat "$LOGS/prod-user.log"; exit 1; }

say "gunicorn with DEBUG=false on 127.0.0.1:$PROD_API_PORT"
(cd "$BACKEND" && DEBUG=false DJANGO_SECRET_KEY="$("$PY" -c 'import secrets; print(secrets.token_urlsafe(50))')" \
  DJANGO_ALLOWED_HOSTS=127.0.0.1 DJANGO_NUM_PROXIES=1 \
  DJANGO_SECURE_SSL_REDIRECT=false DJANGO_SESSION_COOKIE_SECURE=false DJANGO_CSRF_COOKIE_SECURE=false \
  exec "$PY" -m gunicorn config.wsgi --bind "127.0.0.1:$PROD_API_PORT" --workers 1 --threads 4) \
  >"$LOGS/prod-gunicorn.log" 2>&1 &
PIDS+=($!)

say "the same dashboard through nginx on $PROD_URL"
serve_front_door "$PROD_API_PORT" "$PROD_WEB_PORT"
wait_for "$PROD_URL/api/health/" "the API through nginx"

say "playwright: sign in through nginx"
E2E_BASE_URL="$PROD_URL" E2E_USER="$E2E_USER" E2E_PASSWORD="$E2E_PASSWORD" CHROMIUM_PATH="$CHROMIUM" \
  node node_modules/@playwright/test/cli.js test e2e/front-door.spec.ts --pass-with-no-tests "$@"
