"""The job types the bench enqueues and what their handlers (``bench.handlers``) do.

A leaf: the worker processes load the handlers, the scenarios and the report name the
types, and none of them needs the others for it.
"""

from __future__ import annotations

import random

JOB_TYPE = "bench.noop"
# Jobs that stay in flight (``bench.handlers``), for what costs only while attempts run.
SLEEP_JOB_TYPE = "bench.sleep"
SLEEP_SECONDS = 0.2
# The realistic mix (the mix goal), each job sleeping 1-10 ms by its payload's n, and a
# handler returning its wall clock (the latency goal's completion latency).
MIX_JOB_TYPE = "bench.mix"
MIX_SECONDS = (0.001, 0.010)
CLOCK_JOB_TYPE = "bench.clock"


def mix_seconds(n: int) -> float:
    """``bench.mix``'s sleep for the job whose payload has ``n``: the same every run."""
    return random.Random(n).uniform(*MIX_SECONDS)
