#!/usr/bin/env bash
# What `make test` needs beyond Python 3.12+, Node and make, brought by the first step of
# `make test` (and so of .ci/run, which only calls it):
#
#  - Debian's nginx, chromium, prometheus and pgbouncer, installed when missing and this
#    user can install packages (root, or passwordless sudo), after one `apt-get update`.
#    Their services are not started while installing (a policy-rc.d, unless the system has
#    one): the tests start private instances on free ports.
#  - PostgreSQL on POSTGRES_HOST:POSTGRES_PORT (127.0.0.1:5432): a local cluster that is
#    installed but down is started, and the POSTGRES_USER role (postgres) is given the
#    password the tests send (POSTGRES_PASSWORD, postgres) if it cannot log in with it.
#
# What cannot be provisioned is named with what it would have tested; those tests then say
# they are skipped. With CI=true that is a failure instead (exit 1): CI runs everything.
set -euo pipefail

CI="${CI:-}"
PGHOST_="${POSTGRES_HOST:-127.0.0.1}"
PGPORT_="${POSTGRES_PORT:-5432}"
PGUSER_="${POSTGRES_USER:-postgres}"
PGPASSWORD_="${POSTGRES_PASSWORD:-postgres}"
# Where invoke-rc.d asks whether a package may start its service (tests point it elsewhere).
POLICY_RC_D="${PROVISION_POLICY_RC_D:-/usr/sbin/policy-rc.d}"

# package|what it would have tested|extra apt-get options
PACKAGES=(
  "nginx|make test-compose's nginx -t of the front door, tests/processes/test_front_door.py (gunicorn behind nginx) and the end-to-end tests (the dashboard behind nginx)|"
  "chromium|the end-to-end tests (make test-e2e: Playwright drives Debian's Chromium)|"
  "prometheus|tests/processes/test_metrics.py: promtool lints /metrics and a real Prometheus scrapes the API and a worker|--no-install-recommends"
  "pgbouncer|tests/processes/test_pgbouncer.py: workers and the API through PgBouncer in transaction mode|"
)

say() { printf 'provision: %s\n' "$*"; }
problems=()
problem() {
  problems+=("$1")
  say "$1"
}

# Run a command as root: directly when root, else through passwordless sudo; fails (status
# 1, nothing run) when neither is possible.
can_be_root() { [[ "$(id -u)" == 0 ]] || { command -v sudo >/dev/null && sudo -n true 2>/dev/null; }; }
as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    return 1
  fi
}

installed() {
  if ! command -v dpkg-query >/dev/null; then command -v "$1" >/dev/null; return; fi
  [[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" == installed ]]
}

# --- Debian packages ---------------------------------------------------------------------

missing=()
for entry in "${PACKAGES[@]}"; do
  IFS='|' read -r package _ _ <<<"$entry"
  installed "$package" || missing+=("$entry")
done

if ((${#missing[@]})); then
  names="$(for entry in "${missing[@]}"; do printf '%s ' "${entry%%|*}"; done)"
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    why="this is not a Debian system (no apt-get)"
  elif ! can_be_root; then
    why="installing packages needs root or passwordless sudo: sudo apt-get install ${names% }"
  else
    why=""
    say "installing ${names% } (apt-get)"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || say "apt-get update failed"
    # The packages' own services are not needed; without a policy-rc.d of the system's, one
    # keeps the install from starting them (and an install whose service cannot start, as
    # pgbouncer's without a configuration, from failing).
    created_policy=""
    if [[ ! -e "$POLICY_RC_D" ]]; then
      as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $POLICY_RC_D && chmod +x $POLICY_RC_D"
      created_policy=1
    fi
    for entry in "${missing[@]}"; do
      IFS='|' read -r package _ options <<<"$entry"
      # shellcheck disable=SC2086  # options: zero or more words
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $options "$package" >/dev/null \
        || say "apt-get install $package failed"
    done
    if [[ -n "$created_policy" ]]; then as_root rm -f "$POLICY_RC_D"; fi
  fi
  for entry in "${missing[@]}"; do
    IFS='|' read -r package tests _ <<<"$entry"
    installed "$package" && continue
    problem "MISSING $package, which would have tested $tests${why:+ ($why)}"
  done
fi

# --- PostgreSQL --------------------------------------------------------------------------

postgres_ready() { pg_isready -h "$PGHOST_" -p "$PGPORT_" -q 2>/dev/null; }

if ! command -v pg_isready >/dev/null; then
  problem "MISSING postgresql (no pg_isready; apt-get install postgresql): make test-backend-postgres and the end-to-end tests need a PostgreSQL server"
elif ! postgres_ready; then
  cluster=""
  if [[ "$PGHOST_" =~ ^(127\.0\.0\.1|localhost|::1)$ ]] && command -v pg_lsclusters >/dev/null; then
    # "15 main 5432 down postgres /var/lib/postgresql/15/main ..."
    cluster="$(pg_lsclusters --no-header 2>/dev/null | awk -v port="$PGPORT_" '$3 == port { print $1, $2; exit }')"
  fi
  if [[ -z "$cluster" ]]; then
    problem "PostgreSQL does not answer on $PGHOST_:$PGPORT_ and no local cluster uses that port: make test-backend-postgres and the end-to-end tests need it"
  else
    say "starting PostgreSQL $cluster on port $PGPORT_"
    # shellcheck disable=SC2086  # version and cluster name
    if as_root pg_ctlcluster --skip-systemctl-redirect $cluster start; then
      for _ in $(seq 1 60); do postgres_ready && break; sleep 1; done
    fi
    postgres_ready || problem "PostgreSQL $cluster on port $PGPORT_ is down and could not be started (needs root or passwordless sudo): make test-backend-postgres and the end-to-end tests need it"
  fi
fi

# The tests log in with a password (trust authentication ignores it, password authentication
# needs it): give the role that password when it cannot log in with it.
if postgres_ready; then
  login() { PGPASSWORD="$PGPASSWORD_" psql -h "$PGHOST_" -p "$PGPORT_" -U "$PGUSER_" -d postgres -w -Atqc 'SELECT 1' >/dev/null 2>&1; }
  if ! login; then
    say "setting the password of PostgreSQL role $PGUSER_"
    sql="ALTER ROLE \"$PGUSER_\" PASSWORD '$PGPASSWORD_'"
    as_root runuser -u postgres -- psql -p "$PGPORT_" -v ON_ERROR_STOP=1 -qc "$sql" >/dev/null 2>&1 || true
    login || problem "PostgreSQL role $PGUSER_ cannot log in on $PGHOST_:$PGPORT_ with POSTGRES_PASSWORD: make test-backend-postgres and the end-to-end tests need it"
  fi
fi

# --- Verdict -----------------------------------------------------------------------------

if ((${#problems[@]} == 0)); then
  say "ready: nginx, chromium, prometheus, pgbouncer; PostgreSQL on $PGHOST_:$PGPORT_"
elif [[ "$CI" == "true" ]]; then
  say "FAILED: CI=true runs every test, so everything above must be provisioned"
  exit 1
else
  say "continuing without it: those tests say they are skipped (CI=true fails instead)"
fi
