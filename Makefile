# Job Queue: the project's vocabulary. `make help` lists the targets.
SHELL := /bin/bash
.DEFAULT_GOAL := help

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BACKEND := $(ROOT)/backend
FRONTEND := $(ROOT)/frontend
VENV := $(BACKEND)/.venv
PY := $(VENV)/bin/python
# Django 6 needs Python 3.12+; take the newest one on PATH or under pyenv.
PYTHON ?= $(shell $(ROOT)/scripts/find-python.sh)

# PostgreSQL used by the PostgreSQL test pass (a test_* database is created on it).
# TEST_DATABASE_ENGINE picks each pass's engine ahead of DATABASE_ENGINE and .env.
TEST_PG_ENV := TEST_DATABASE_ENGINE=postgres DATABASE_ENGINE=postgres POSTGRES_HOST=$${POSTGRES_HOST:-127.0.0.1} POSTGRES_PORT=$${POSTGRES_PORT:-5432} POSTGRES_USER=$${POSTGRES_USER:-postgres} POSTGRES_PASSWORD=$${POSTGRES_PASSWORD:-postgres} POSTGRES_DB=$${POSTGRES_DB:-job_queue}

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-22s\033[0m %s\n", $$1, $$2}'

$(VENV)/.installed: $(BACKEND)/requirements.txt $(BACKEND)/requirements-dev.txt
	@test -n "$(PYTHON)" || { echo "Python 3.12+ is required (Django 6)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r $(BACKEND)/requirements-dev.txt
	@touch $@

.PHONY: venv
venv: $(VENV)/.installed ## Create backend/.venv and install the backend

.PHONY: lint
lint: venv ## ruff check + ruff format --check + mypy (strict) + lint-imports (the layer contracts)
	cd $(BACKEND) && $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	cd $(BACKEND) && $(VENV)/bin/mypy
	cd $(BACKEND) && $(VENV)/bin/lint-imports --no-cache

.PHONY: format
format: venv ## Rewrite the backend in place: ruff format, then ruff check --fix
	cd $(BACKEND) && $(VENV)/bin/ruff format . && $(VENV)/bin/ruff check --fix .

.PHONY: test-backend-sqlite
# SQLITE_PYTEST_ARGS: more pytest arguments (`make test-suites` leaves out the failover
# tests, which it runs beside this pass).
test-backend-sqlite: venv ## Backend tests on the embedded SQLite database
	cd $(BACKEND) && DATABASE_ENGINE=sqlite $(PY) manage.py makemigrations --check --dry-run
	cd $(BACKEND) && TEST_DATABASE_ENGINE=sqlite $(PY) -m pytest -q $(SQLITE_PYTEST_ARGS)

.PHONY: test-backend-postgres
# COVERAGE_CORE=sysmon: Python 3.12's monitoring API instead of a trace function, so
# measuring lines costs a few per cent of the suite instead of a fifth (line coverage only,
# which is all this project measures).
# PG_PYTEST_ARGS: more pytest arguments (`make test-backend` leaves out the engine_independent
# tests, which its SQLite pass runs at the same time).
# PG_TEST_PROCESSES: pytest-xdist processes, each on its own test database (test_<name>_gw0,
# …). The pass mostly waits (on worker processes, leases, PostgreSQL), not computes: two
# halve its time on two cores.
PG_TEST_PROCESSES ?= 2
test-backend-postgres: venv ## Backend tests on PostgreSQL (fails if it is unreachable), with line coverage of jobs/
	cd $(BACKEND) && $(TEST_PG_ENV) COVERAGE_CORE=sysmon $(PY) -m pytest -q -n $(PG_TEST_PROCESSES) --cov --cov-report=term:skip-covered $(PG_PYTEST_ARGS)

# Both backend passes at the same time, each one's output printed in full when it ends
# (scripts/run-parallel.sh); fails if either failed. The tests marked engine_independent
# (they never touch the run's database: fresh interpreters on SQLite files of their own)
# run on the SQLite pass only, the PostgreSQL pass being the longer one.
.PHONY: test-backend
test-backend: venv ## test-backend-sqlite and test-backend-postgres at the same time
	@$(ROOT)/scripts/run-parallel.sh \
		"$(MAKE) --no-print-directory test-backend-sqlite" \
		"$(MAKE) --no-print-directory test-backend-postgres PG_PYTEST_ARGS='-m \"not engine_independent\"'"

# What `make test` runs: the SQLite pass, the dashboard's checks then its end-to-end tests,
# the PostgreSQL pass and the failover tests at the same time. The PostgreSQL pass and the
# failover tests mostly wait (on worker processes, leases, replication), which leaves the
# others room; the dashboard's lane, the shortest, takes the browser tests after its checks
# instead of after the longest lane.
.PHONY: test-suites
test-suites: venv ## test-backend-sqlite, test-frontend then test-e2e, test-backend-postgres and test-failover at the same time
	$(NPM_DEPS)
	@$(ROOT)/scripts/run-parallel.sh \
		"$(MAKE) --no-print-directory test-backend-sqlite SQLITE_PYTEST_ARGS='-m \"not failover\"'" \
		"$(MAKE) --no-print-directory test-frontend test-e2e" \
		"$(MAKE) --no-print-directory test-backend-postgres PG_PYTEST_ARGS='-m \"not engine_independent\"'" \
		"$(MAKE) --no-print-directory test-failover"

.PHONY: test-schema
test-schema: venv ## Generate the OpenAPI schema and validate it; any drf-spectacular warning fails
	cd $(BACKEND) && DATABASE_ENGINE=sqlite $(PY) manage.py spectacular --validate --fail-on-warn --file /dev/null

.PHONY: types
types: venv ## Regenerate the dashboard's API types (frontend/src/api/schema.d.ts) from the OpenAPI schema
	$(NPM_DEPS)
	$(ROOT)/scripts/api-types.sh

.PHONY: test-types
test-types: venv ## Fail when the committed dashboard API types differ from what the current schema generates
	$(NPM_DEPS)
	$(ROOT)/scripts/api-types.sh --check

.PHONY: test-compose
test-compose: venv ## Validate docker-compose.yml (Compose schema), lint the Dockerfiles, check .env.example
	$(PY) $(ROOT)/scripts/check_compose.py

.PHONY: test-docs
test-docs: venv test-site ## Build the docs site strictly; check the SVG diagrams, every image and page link of the READMEs and docs/, the configuration reference, the layer diagram
	$(PY) $(ROOT)/scripts/check_svgs.py
	$(PY) $(ROOT)/scripts/check_docs.py
	$(PY) $(ROOT)/scripts/layer_diagram.py --check

# mkdocs.yml sets strict and makes a broken link, anchor or image an error; the site is
# built into a temporary directory and thrown away (`make docs` serves it while you edit).
.PHONY: test-site
test-site: venv ## Build the documentation site (mkdocs build --strict) into a temporary directory
	@site=$$(mktemp -d) && trap 'rm -rf "$$site"' EXIT && \
		cd $(ROOT) && $(VENV)/bin/mkdocs build --strict --quiet --site-dir "$$site" && echo "docs site: built, no warning"

.PHONY: docs
docs: venv ## Serve the documentation site at http://127.0.0.1:8001/ while you edit docs/
	cd $(ROOT) && $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

# These run inside the backend passes too (the failover tests beside them in test-suites);
# these targets run them alone, with figures.
.PHONY: test-faults
test-faults: venv ## Fault injection on PostgreSQL: kill -9, SIGTERM, DB restart, 3,000 jobs x 3 processes; property test
	cd $(BACKEND) && $(TEST_PG_ENV) $(PY) -m pytest -q -s tests/processes/test_faults.py tests/integration/test_properties.py

.PHONY: test-failover
test-failover: venv ## Failover on clusters of the tests' own: sync and async replication under load (kill -9), a frozen primary, a listener frozen unnoticed; prints figures
	cd $(BACKEND) && TEST_DATABASE_ENGINE=sqlite $(PY) -m pytest -q -s -m failover tests/processes/test_failover.py

.PHONY: test-fuzz
test-fuzz: venv ## Fuzz the API from its OpenAPI schema (schemathesis) + production-mode security tests
	cd $(BACKEND) && DATABASE_ENGINE=sqlite $(PY) -m pytest -q tests/integration/api/test_fuzz.py tests/integration/api/test_security.py tests/processes/test_security.py

.PHONY: bench
bench: venv ## Every performance goal beside its same-run reference on PostgreSQL: prints a report, writes bench-results/latest.json (BENCH_ARGS=--help)
	cd $(BACKEND) && $(PY) -m bench.run $(BENCH_ARGS)

.PHONY: bench-peers
bench-peers: venv ## This queue beside PgQueuer, Celery and Dramatiq on Redis, Procrastinate and django-tasks-db, same backlog, same run (installs each into backend/.bench-venvs/, and Debian's redis-server if missing)
	cd $(BACKEND) && $(PY) -m bench.run --only peers $(BENCH_ARGS)

.PHONY: bench-plans
bench-plans: venv ## Query plans under load: workers with and without ANALYZE before the run and with batched completion, beside pgbench (BENCH_ARGS=--help)
	cd $(BACKEND) && $(PY) -m bench.plans $(BENCH_ARGS)

.PHONY: bench-readme
bench-readme: venv ## Rewrite the tables of docs/performance.md from bench-results/latest.json (run make bench first)
	cd $(BACKEND) && $(PY) -m bench.readme --page $(ROOT)/docs/performance.md

.PHONY: provision
provision: ## Install what the tests need (Debian's nginx, chromium, prometheus, pgbouncer) and start PostgreSQL, where this user can
	@bash $(ROOT)/scripts/provision.sh

.PHONY: test
test: provision lint test-compose test-docs test-schema test-types test-suites ## Everything the project checks (what CI runs); provisions first

.PHONY: run
run: venv ## Run API (:8000), worker and dashboard (:5173); SQLite unless PostgreSQL is configured
	@$(ROOT)/scripts/run.sh

.PHONY: superuser
superuser: venv ## Create an admin login: asks at a terminal, else DJANGO_SUPERUSER_USERNAME/PASSWORD[/EMAIL]
	@PY=$(PY) $(ROOT)/scripts/superuser.sh

# Dashboard: `npm ci` when node_modules is missing or older than package-lock.json.
NPM_DEPS = cd $(FRONTEND) && { test -d node_modules && test ! package-lock.json -nt node_modules/.package-lock.json || PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund; }

.PHONY: test-frontend
test-frontend: ## Dashboard: tsc, eslint and Vitest unit tests
	$(NPM_DEPS)
	cd $(FRONTEND) && npm run --silent typecheck && npm run --silent lint && npm test

.PHONY: test-e2e
test-e2e: venv ## Dashboard end to end: Playwright + system Chromium against a real API, worker and PostgreSQL
	$(NPM_DEPS)
	bash $(FRONTEND)/e2e/run-e2e.sh
