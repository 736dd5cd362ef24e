"""The bench binds the worker's statements as the driver does: a parameter a later change
adds to ``queries.sql`` must reach the bench too (flow control's ``keys_limited`` once did
not, and ``make bench`` stopped at its scale phase)."""

from bench import raw_sql, scale
from jobs.drivers.postgres import QUERIES


def test_the_scale_phase_binds_every_parameter_of_the_workers_claim():
    assert set(scale._claim_params()) == QUERIES["complete_and_claim"].params


def test_pgbench_defines_every_variable_of_the_fused_script():
    used = set(raw_sql.re.findall(r"(?<![\w:]):([A-Za-z_]\w*)", raw_sql.pgbench_script("fused")))
    assert used <= set(raw_sql.pgbench_variables()) | {"client_id", "worker_id"}


def test_pgbench_leftovers_are_completed_with_every_parameter_of_the_statement():
    params = raw_sql._leftover_params("00000000-0000-0000-0000-000000000000", "w", 1)
    assert set(params) == QUERIES["complete_and_claim"].params
