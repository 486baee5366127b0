"""openkruise/kruise#1528 (fix PR #1526, fd7e86e8): an ImagePullJob waits ~300 s for its NodeImage.

The busybox job must reconcile inside the cache-lag window after the nginx job's
NodeImage write: one deviation ("handle add default/j2" before "deliver MODIFIED
worker-1"). The fixed variant requeues after 5 s and is proved clean up to 2 deviations.
"""

from __future__ import annotations

from typing import Any

import pytest

import harness
import races.kruise_imagepulljob as kruise
from harness.kube import ResourceVersionExpectation
from harness.sim import ReplayChooser, RunOutcome
from races import REGISTRY
from races.kruise_imagepulljob import RACES, scenario

RACE = RACES[0]
LIVENESS = "ImagePullJob default/j2 (busybox:latest) synced into NodeImage worker-1 within 10 s of creation"


def _labels(trace: Any) -> list[str]:
    return [r.label for r in trace]


def _in_order(labels: list[str], events: tuple[str, ...]) -> bool:
    i = 0
    for label in labels:
        if i < len(events) and events[i] in label:
            i += 1
    return i == len(events)


def _run(choices: list[int], **params: Any) -> RunOutcome:
    return harness.run_once(scenario, ReplayChooser(choices), params=params)


def test_registered_with_upstream_reference() -> None:
    assert REGISTRY["kruise_imagepulljob"] is RACE
    assert RACE.upstream == "openkruise/kruise#1528 (fix PR #1526, fd7e86e8)"
    assert RACE.strategy == "random" and not RACE.known_open


# ------------------------------------------------------------ buggy variant
def test_buggy_found_by_random_search_in_one_deviation() -> None:
    result = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    assert result.verdict == "found"
    assert result.first_found_run is not None and result.first_found_run <= 10
    cx = result.counterexample
    assert cx is not None
    assert cx.proved_minimal is True
    assert cx.deviations == 1
    assert _in_order(_labels(cx.trace), RACE.key_events)
    (deviation,) = [r for r in cx.trace if r.choice]
    assert "handle add default/j2" in deviation.label
    assert deviation.instead is not None and "deliver MODIFIED worker-1" in deviation.instead
    assert cx.replay().violation is not None


def test_exhaustive_agrees_on_the_minimum() -> None:
    random = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    exhaustive = harness.explore(scenario, strategy="exhaustive:1", fixed=False)
    assert random.counterexample is not None and exhaustive.counterexample is not None
    assert exhaustive.counterexample.deviations == random.counterexample.deviations == 1


def test_oracle_wording_names_the_job_and_the_10_s_bound() -> None:
    cx = harness.explore(scenario, strategy="exhaustive:1", fixed=False).counterexample
    assert cx is not None
    assert cx.violation.kind == "oracle" and cx.violation.name == LIVENESS
    assert cx.violation.message == (
        f"'{LIVENESS}' did not happen within 10 virtual seconds (expected by t=10.05, registered at t=0.05)"
    )


# ------------------------------------------------------------ fixed variant
def test_fixed_clean_under_the_same_budget_and_proved_to_two_deviations() -> None:
    assert harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=True).verdict == "none-found"
    assert harness.explore(scenario, strategy="exhaustive:2", budget=5000, fixed=True).verdict == "proved-clean"


def test_fixed_requeue_syncs_busybox_5_s_later_on_the_same_interleaving() -> None:
    cx = harness.explore(scenario, strategy="exhaustive:1", fixed=False).counterexample
    assert cx is not None
    out = _run(cx.choices, fixed=True)
    assert out.violation is None
    writes = [r for r in out.trace if r.label == "update NodeImage worker-1"]
    assert [round(r.time, 3) for r in writes] == [0.1, 5.15]  # nginx, then busybox after RequeueAfter=5s


# ------------------------------------------------------------ canonical run
def test_canonical_order_is_clean_with_no_conflicts() -> None:
    out = _run([], fixed=False)
    assert out.violation is None and out.deviations == 0
    # the NodeImage event is applied before the busybox job is enqueued, so both tags land at once
    writes = [r for r in out.trace if r.label == "update NodeImage worker-1"]
    assert [round(r.time, 3) for r in writes] == [0.1, 0.15]
    # the run settles after the job-level expectation's own ~300 s requeue (unchanged by the fix)
    assert out.end_time == pytest.approx(300.2)


def test_409_oracle_fires_without_the_resource_version_expectation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The secondary oracle can fail: with no read-your-writes barrier, busybox is written from a stale cache."""

    class NoBarrier(ResourceVersionExpectation):
        def is_satisfied(self, obj: Any) -> tuple[bool, float]:
            return True, 0.0

    monkeypatch.setattr(kruise, "ResourceVersionExpectation", NoBarrier)
    result = harness.explore(scenario, strategy="exhaustive:1", fixed=True)
    assert result.counterexample is not None
    assert result.counterexample.violation.name == "no NodeImage 409s"
    assert "got 409 Conflict" in result.counterexample.violation.message
