"""The goals summary's line type: one goal, measured beside its reference from the same
run, with its target and verdict.

Verdicts: PASS, MISS, or "not run" (the scenario was skipped or does not exist yet).
A MISS is a finding, not a failure: nothing in the benchmark asserts a timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

PASS = "PASS"
MISS = "MISS"
NOT_RUN = "not run"


@dataclass(kw_only=True)
class Goal:
    # What the row is, in a few words a reader can keep (``default-1x4-vs-in-hand-limit``):
    # unique in a run, the same from run to run, what a reader of latest.json keys on.
    id: str
    name: str
    measured: str
    reference: str  # the same run's reference figure, or why there is none
    ratio: float | None  # measured / reference where that reads as a ratio
    target: str
    status: str  # PASS, MISS or NOT_RUN

    @classmethod
    def verdict(cls, met: bool | None) -> str:
        return NOT_RUN if met is None else PASS if met else MISS

    @classmethod
    def not_run(cls, goal_id: str, name: str, target: str, why: str) -> Goal:
        """The row of a goal with nothing measured, saying ``why`` where the reference goes."""
        return cls(
            id=goal_id,
            name=name,
            measured="-",
            reference=why,
            ratio=None,
            target=target,
            status=NOT_RUN,
        )


class ReportsGoal(Protocol):
    """What a scenario written elsewhere (``bench/pgbouncer.py``) hands the summary:
    its result, with its own report block, and its line in the goals summary."""

    def goal(self) -> Goal: ...

    def render(self) -> list[str]: ...
