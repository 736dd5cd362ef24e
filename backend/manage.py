#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config import telemetry

    worker = sys.argv[1:2] == ["run_job_workers"]
    telemetry.configure("job-queue-worker" if worker else "job-queue-api")
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
