#!/usr/bin/env bash
# `make run`: the whole product on this machine. API on :8000, worker, dashboard on :5173.
# Embedded SQLite unless PostgreSQL is configured in the environment or a .env file.
# Ctrl-C / SIGTERM stops everything this script started; the worker finishes in-flight jobs.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="$ROOT/backend/.venv/bin/python"
API_HOST="${API_HOST:-127.0.0.1}"
API_PORT="${API_PORT:-8000}"
DASHBOARD_PORT="${DASHBOARD_PORT:-5173}"

log() { printf '\033[1m[run]\033[0m %s\n' "$*" 2>/dev/null || true; }
# If our output goes to a pipe that Ctrl-C closed (make run | tee), keep going: the children
# still have to be stopped.
trap '' PIPE

cd "$ROOT/frontend"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "installing the dashboard (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

cd "$ROOT/backend"
log "database: $("$PY" -c 'import django, os; os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings"); django.setup(); from django.conf import settings; d = settings.DATABASES["default"]; print(settings.DATABASE_ENGINE, d["NAME"])')"
"$PY" manage.py migrate --noinput -v 0

pids=()
stop() {
  trap - INT TERM EXIT
  log "stopping (the worker finishes its in-flight jobs first)"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  log "stopped"
}
trap stop INT TERM EXIT

# Own sessions: a terminal Ctrl-C reaches only this script, which stops each child once.
setsid "$PY" manage.py runserver "$API_HOST:$API_PORT" --noreload &
pids+=($!)
setsid "$PY" manage.py run_job_workers &
pids+=($!)
setsid bash -c 'cd "$0" && exec "$@"' "$ROOT/frontend" env VITE_API_BASE_URL="${VITE_API_BASE_URL:-http://$API_HOST:$API_PORT/api}" \
  node_modules/.bin/vite --host "$API_HOST" --port "$DASHBOARD_PORT" --strictPort &
pids+=($!)

for _ in $(seq 1 60); do
  curl -fsS "http://$API_HOST:$API_PORT/api/health/" >/dev/null 2>&1 && break
  sleep 0.5
done
cat <<MSG

  Job Queue is running
    Dashboard  http://$API_HOST:$DASHBOARD_PORT/
    API        http://$API_HOST:$API_PORT/api/
    API docs   http://$API_HOST:$API_PORT/api/docs/
    Admin      http://$API_HOST:$API_PORT/admin/   (make superuser to create a login)

  Press Ctrl-C to stop.

MSG
# Wait until one process exits (or a signal arrives), then stop the others.
wait -n "${pids[@]}" || true
