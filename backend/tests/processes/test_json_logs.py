"""A real ``run_job_workers`` process with ``JOB_LOG_FORMAT=json``: one JSON object per
line, carrying the fields of the text lines."""

import json
import re

import pytest

from harness import wait_until
from tests.factories import queued_job
from tests.helpers import WorkerProcess


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_process_logs_one_json_object_per_line(tmp_path):
    job = queued_job("demo.fail", max_attempts=1)
    worker = WorkerProcess(tmp_path / "worker.log", "--burst", JOB_LOG_FORMAT="json")
    assert worker.wait() == 0, worker.log()
    wait_until(lambda: "worker_stopped" in worker.log(), 5, "the last line")
    lines = [json.loads(line) for line in worker.log().splitlines() if line.strip()]
    actions = {entry.get("action") for entry in lines}
    assert {"worker_started", "claimed", "finished", "worker_stopped"} <= actions
    (finished,) = [entry for entry in lines if entry.get("action") == "finished"]
    assert (finished["job_id"], finished["attempt"], finished["outcome"]) == (
        str(job.pk),
        1,
        "failed",
    )
    assert re.fullmatch(r".+:\d+:thread-\d+:[0-9a-f]+", finished["worker_id"])
