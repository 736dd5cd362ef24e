#!/usr/bin/env python3
"""The front door's nginx configuration outside its container: render it, test it, run it.

``frontend/nginx/default.conf.template`` is the server block the nginx image renders at
start-up. Here it is rendered the same way (``${NGINX_*}`` replaced) and wrapped in a
minimal main configuration under a prefix directory, so Debian's nginx package can test
it (``nginx -t``, from ``scripts/check_compose.py``) or serve with it (the tests in
``backend/tests/processes/test_front_door.py``).

Usage:
  scripts/nginx_conf.py                 render with example values and run ``nginx -t``
  scripts/nginx_conf.py --write PREFIX --upstream HOST:PORT --listen [HOST:]PORT --root DIR
                                        write a configuration to serve with
                                        (``nginx -p PREFIX -c PREFIX/nginx.conf``; the e2e run)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "frontend" / "nginx" / "default.conf.template"
VARIABLE = re.compile(r"\$\{(NGINX_[A-Z_]+)\}")
MIME_TYPES = Path("/etc/nginx/mime.types")


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (str(p) for p in (Path("/usr/sbin/nginx"),) if p.exists()), None
    )


def render_site(values: dict[str, str]) -> str:
    """The template with every ``${NGINX_*}`` replaced; a missing value is an error."""
    text = TEMPLATE.read_text()
    missing = sorted(set(VARIABLE.findall(text)) - set(values))
    if missing:
        raise KeyError(f"no value for {', '.join(missing)}")
    return VARIABLE.sub(lambda match: values[match.group(1)], text)


def write_config(prefix: Path, values: dict[str, str]) -> Path:
    """Write the rendered site and a main configuration around it under ``prefix``."""
    prefix.mkdir(parents=True, exist_ok=True)
    site = prefix / "default.conf"
    site.write_text(render_site(values))
    # Workers of a root master run as this user; the test's files are root's.
    user = "user root;\n" if os.geteuid() == 0 else ""
    main = prefix / "nginx.conf"
    main.write_text(
        f"{user}worker_processes 1;\n"
        f"pid {prefix}/nginx.pid;\n"
        f"error_log {prefix}/error.log warn;\n"
        "daemon off;\n"
        "events { worker_connections 512; }\n"
        "http {\n"
        f"    include {MIME_TYPES};\n"
        "    default_type application/octet-stream;\n"
        f"    access_log {prefix}/access.log;\n"
        f"    client_body_temp_path {prefix}/client_body;\n"
        f"    proxy_temp_path {prefix}/proxy;\n"
        f"    fastcgi_temp_path {prefix}/fastcgi;\n"
        f"    uwsgi_temp_path {prefix}/uwsgi;\n"
        f"    scgi_temp_path {prefix}/scgi;\n"
        f"    include {site};\n"
        "}\n"
    )
    return main


def test_config(values: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``nginx -t`` on the rendered configuration, in a throwaway prefix."""
    nginx = nginx_binary()
    if nginx is None:
        raise FileNotFoundError("nginx not found: apt-get install nginx")
    with tempfile.TemporaryDirectory(prefix="jobq-nginx-") as tmp:
        main = write_config(Path(tmp), values)
        return subprocess.run(
            [nginx, "-t", "-p", tmp, "-c", str(main)], capture_output=True, text=True, check=False
        )


# Values for the static check: the upstream must resolve where the check runs.
EXAMPLE_VALUES = {
    "NGINX_API_UPSTREAM": "127.0.0.1:8000",
    "NGINX_LISTEN_PORT": "8080",
    "NGINX_STATIC_ROOT": "/usr/share/nginx/html",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, metavar="PREFIX")
    parser.add_argument("--upstream", default=EXAMPLE_VALUES["NGINX_API_UPSTREAM"])
    parser.add_argument("--listen", default=EXAMPLE_VALUES["NGINX_LISTEN_PORT"])
    parser.add_argument("--root", default=EXAMPLE_VALUES["NGINX_STATIC_ROOT"])
    args = parser.parse_args()
    values = {
        "NGINX_API_UPSTREAM": args.upstream,
        "NGINX_LISTEN_PORT": args.listen,
        "NGINX_STATIC_ROOT": args.root,
    }
    if args.write:
        print(write_config(args.write.resolve(), values))
        return 0
    result = test_config(values)
    sys.stdout.write(result.stdout + result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
