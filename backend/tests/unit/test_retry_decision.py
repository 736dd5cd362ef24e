"""The retry policy's decision, as pure logic: precedence, the backoff's answer checked,
and the policy's arguments checked where they are given."""

from __future__ import annotations

import pytest

from jobs.limits import RETRY_DELAY_MAX_SECONDS
from jobs.registry import RetryPolicy
from jobs.worker.retries import GIVE_UP, RetryDecision, decide


class Transient(Exception):
    pass


class Permanent(Transient):
    pass


def test_give_up_on_wins_over_retry_on_and_backoff():
    policy = RetryPolicy.of(
        backoff=lambda exc, attempt: 10, retry_on=(Transient,), give_up_on=(Permanent,)
    )
    assert decide(policy, Permanent(), 1) == GIVE_UP


def test_retry_on_gives_up_on_any_exception_it_does_not_name():
    assert decide(RetryPolicy.of(retry_on=(Transient,)), ValueError(), 1) == GIVE_UP


def test_retry_on_matches_subclasses():
    policy = RetryPolicy.of(retry_on=(Transient,), backoff=lambda exc, attempt: 3)
    assert decide(policy, Permanent(), 1) == RetryDecision(3.0)


def test_backoff_is_asked_with_the_exception_and_the_attempt():
    asked = []
    policy = RetryPolicy.of(backoff=lambda exc, attempt: asked.append((exc, attempt)) or 7)
    error = ValueError()
    assert decide(policy, error, 4) == RetryDecision(7.0)
    assert asked == [(error, 4)]


@pytest.mark.parametrize(
    ("answer", "delay"), [(-5, 0.0), (2.5, 2.5), (float("inf"), RETRY_DELAY_MAX_SECONDS)]
)
def test_a_backoff_answer_is_clamped_into_bounds(answer, delay):
    policy = RetryPolicy.of(backoff=lambda exc, attempt: answer)
    assert decide(policy, ValueError(), 1) == RetryDecision(delay)


@pytest.mark.parametrize("answer", [float("nan"), "10", True])
def test_a_backoff_answer_that_is_no_number_falls_back_to_the_default(settings, answer):
    policy = RetryPolicy.of(backoff=lambda exc, attempt: answer)
    decision = decide(policy, ValueError(), 1)
    assert not decision.give_up
    assert 0 <= (decision.delay_seconds or 0) <= settings.JOB_WORKER_BACKOFF_BASE_SECONDS


def test_a_backoff_that_raises_falls_back_to_the_default(settings):
    policy = RetryPolicy.of(backoff=lambda exc, attempt: 1 / 0)
    decision = decide(policy, ValueError(), 2)
    assert 0 <= (decision.delay_seconds or 0) <= 2 * settings.JOB_WORKER_BACKOFF_BASE_SECONDS


def test_a_backoff_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="backoff"):
        RetryPolicy.of(backoff=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["retry_on", "give_up_on"])
def test_exception_lists_of_anything_but_exception_classes_are_refused(name):
    with pytest.raises(TypeError, match=name):
        RetryPolicy.of(**{name: (ValueError, "oops")})  # type: ignore[arg-type]
