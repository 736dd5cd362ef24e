#!/usr/bin/env python3
"""Static checks for the Docker Compose stack; no Docker engine needed.

1. docker-compose.yml against the Compose Specification JSON schema (the copy vendored by
   check-jsonschema, so it works offline).
2. Cross-references the schema cannot see: depends_on targets exist, `service_healthy`
   targets have a health check, build contexts hold a Dockerfile, named volumes are
   declared, the worker stays scalable.
3. Both Dockerfiles through hadolint.
4. The front door's nginx configuration (frontend/nginx/default.conf.template, rendered)
   through `nginx -t` from Debian's nginx package (scripts/nginx_conf.py).
5. .env.example: one `NAME=value` per variable with a comment above it, no duplicates, and
   every variable the backend settings, the dashboard sources and the compose file read.

Usage: scripts/check_compose.py [--compose FILE] [--env-example FILE] [--dockerfile FILE ...]
Run it with the backend venv's Python (`make test-compose`), where check-jsonschema and
hadolint are installed from backend/requirements-dev.txt. Exit status 1 on any problem.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nginx_conf  # scripts/nginx_conf.py, beside this file
import yaml

ROOT = Path(__file__).resolve().parent.parent

# Read by Django or tooling itself, not settings a user chooses.
NOT_SETTINGS = {"DJANGO_SETTINGS_MODULE"}

ENV_READ_PATTERNS = [
    re.compile(r"""\benv_\w+\(\s*["']([A-Z][A-Z0-9_]*)["']"""),
    re.compile(r"""os\.environ\.get\(\s*["']([A-Z][A-Z0-9_]*)["']"""),
    re.compile(r"""os\.environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]"""),
    re.compile(r"""os\.getenv\(\s*["']([A-Z][A-Z0-9_]*)["']"""),
]
VITE_READ_PATTERN = re.compile(r"import\.meta\.env\.(VITE_[A-Z0-9_]+)")
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?err}; `$${NAME}` is an escaped literal.
COMPOSE_VAR_PATTERN = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)")
ENV_LINE_PATTERN = re.compile(r"^(# )?([A-Z][A-Z0-9_]*)=(.*)$")


def tool(name: str) -> str:
    """A console script from this interpreter's environment, else from PATH."""
    candidate = Path(sys.executable).parent / name
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"{name} not found: install backend/requirements-dev.txt (make venv)")
    return found


def run(label: str, command: list[str]) -> bool:
    print(f"== {label}: {' '.join(Path(c).name if i == 0 else c for i, c in enumerate(command))}")
    result = subprocess.run(command, check=False)
    print(f"   {'ok' if result.returncode == 0 else f'FAILED (exit {result.returncode})'}")
    return result.returncode == 0


def check_references(compose_path: Path) -> list[str]:
    """What `docker compose up` would refuse or silently get wrong, beyond the schema."""
    data = yaml.safe_load(compose_path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("services"), dict):
        return ["no services mapping"]
    services: dict = data["services"]
    declared_volumes = set((data.get("volumes") or {}).keys())
    problems: list[str] = []

    for name, service in services.items():
        depends_on = service.get("depends_on") or {}
        if isinstance(depends_on, list):
            depends_on = {target: {} for target in depends_on}
        for target, options in depends_on.items():
            if target not in services:
                problems.append(f"{name}: depends_on unknown service {target!r}")
                continue
            waits_healthy = (options or {}).get("condition") == "service_healthy"
            if waits_healthy and not services[target].get("healthcheck"):
                problems.append(
                    f"{name}: waits for {target!r} to be healthy, it has no healthcheck"
                )

        build = service.get("build")
        if build is not None:
            if isinstance(build, str):
                build = {"context": build}
            context = build.get("context", ".")
            dockerfile = build.get("dockerfile", "Dockerfile")
            if not (compose_path.parent / context / dockerfile).is_file():
                problems.append(f"{name}: build file {context}/{dockerfile} does not exist")
        elif not service.get("image"):
            problems.append(f"{name}: neither build nor image")

        for volume in service.get("volumes") or []:
            source = volume.get("source") if isinstance(volume, dict) else volume.split(":")[0]
            is_named = source and not source.startswith((".", "/", "~", "$"))
            if is_named and source not in declared_volumes:
                problems.append(f"{name}: named volume {source!r} is not declared under volumes")

    # The front door: only nginx is published; gunicorn sits behind it.
    web = services.get("web")
    if web is None:
        problems.append("no web service (nginx in front of gunicorn)")
    elif not web.get("ports"):
        problems.append("web: publishes no port")
    for name in ("backend", "worker"):
        if (services.get(name) or {}).get("ports"):
            problems.append(f"{name}: publishes a port; only web (nginx) may")

    worker = services.get("worker")
    if worker is None:
        problems.append("no worker service")
    else:
        for key in ("container_name", "ports"):
            if worker.get(key):
                problems.append(f"worker: {key} prevents `--scale worker=N`")
    return problems


def read_env_example(path: Path) -> tuple[dict[str, str], list[str]]:
    """Variables documented in .env.example, and format problems."""
    names: dict[str, str] = {}
    problems: list[str] = []
    previous = ""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = ENV_LINE_PATTERN.match(line)
        if match:
            name = match.group(2)
            if name in names:
                problems.append(f"{path.name}:{number}: {name} listed twice")
            if not previous.startswith("#") or ENV_LINE_PATTERN.match(previous):
                problems.append(f"{path.name}:{number}: {name} has no comment line above it")
            names[name] = match.group(3)
        elif line and not line.startswith("#"):
            problems.append(f"{path.name}:{number}: not `NAME=value` or a comment: {line!r}")
        previous = line
    return names, problems


def variables_read(compose_path: Path) -> dict[str, str]:
    """Every variable name read by the backend, the dashboard or the compose file -> where."""
    found: dict[str, str] = {}
    backend = ROOT / "backend"
    python_files = [*(backend / "config").glob("*.py"), *(backend / "jobs").rglob("*.py")]
    for path in sorted(python_files):
        if "tests" in path.parts or path.name == "conftest.py":
            continue
        text = path.read_text()
        for pattern in ENV_READ_PATTERNS:
            for name in pattern.findall(text):
                found.setdefault(name, str(path.relative_to(ROOT)))
    source_dir = ROOT / "frontend" / "src"
    if source_dir.is_dir():
        for path in sorted(source_dir.rglob("*")):
            if path.suffix in {".ts", ".tsx", ".js", ".jsx"} and "node_modules" not in path.parts:
                for name in VITE_READ_PATTERN.findall(path.read_text()):
                    found.setdefault(name, str(path.relative_to(ROOT)))
    for name in COMPOSE_VAR_PATTERN.findall(compose_path.read_text()):
        found.setdefault(name, compose_path.name)
    return {name: where for name, where in found.items() if name not in NOT_SETTINGS}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compose", type=Path, default=ROOT / "docker-compose.yml")
    parser.add_argument("--env-example", type=Path, default=ROOT / ".env.example")
    parser.add_argument(
        "--dockerfile",
        type=Path,
        action="append",
        help="Dockerfile to lint (repeatable); default: backend/ and frontend/ Dockerfiles",
    )
    args = parser.parse_args()
    dockerfiles = args.dockerfile or [
        ROOT / name / "Dockerfile" for name in ("backend", "frontend")
    ]

    ok = run(
        "Compose Specification schema",
        [tool("check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(args.compose)],
    )

    print("== Compose cross-references")
    try:
        problems = check_references(args.compose)
    except yaml.YAMLError as exc:
        problems = [f"cannot parse: {exc}"]
    for problem in problems:
        print(f"   {args.compose.name}: {problem}")
    print(f"   {'ok' if not problems else 'FAILED'}")
    ok = ok and not problems

    ok = run("hadolint", [tool("hadolint"), "--no-color", *map(str, dockerfiles)]) and ok

    print("== nginx -t on the front door's configuration")
    if nginx_conf.nginx_binary() is None and os.environ.get("CI", "").lower() != "true":
        # make test installs Debian's nginx where it can, and has said so where it cannot.
        print("   SKIPPED: no nginx (apt-get install nginx); CI=true fails instead")
    else:
        try:
            result = nginx_conf.test_config(nginx_conf.EXAMPLE_VALUES)
            nginx_ok = result.returncode == 0
            output = (result.stdout + result.stderr).strip()
        except (FileNotFoundError, KeyError) as exc:
            nginx_ok, output = False, str(exc)
        for line in output.splitlines():
            print(f"   {line}")
        print(f"   {'ok' if nginx_ok else 'FAILED'}")
        ok = ok and nginx_ok

    print("== .env.example")
    documented, problems = read_env_example(args.env_example)
    for name, where in sorted(variables_read(args.compose).items()):
        if name not in documented:
            problems.append(f"{name} (read in {where}) is missing from {args.env_example.name}")
    for problem in problems:
        print(f"   {problem}")
    print(f"   {len(documented)} variables documented; {'ok' if not problems else 'FAILED'}")
    ok = ok and not problems

    print("compose checks: " + ("passed" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
