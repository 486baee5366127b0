"""openkruise/kruise#1528 (fix PR #1526, fd7e86e8): an ImagePullJob waits ~300 s for its NodeImage.

The busybox job reconciles inside the cache-lag window after the nginx job's NodeImage
write ("handle add default/j2" before "deliver MODIFIED worker-1"). With no latency placed,
every informer delivers at t=0 and that is already the canonical order: the buggy variant fails
with 0 deviations. The fixed variant requeues after 5 s and is proved clean up to 1 deviation.
"""

from __future__ import annotations

from typing import Any

import pytest
from race_support import assert_found_then_clean

import harness
from harness.sim import ReplayChooser, RunOutcome
from races import REGISTRY
from races.kruise_imagepulljob import RACES, scenario

RACE = RACES[0]
LIVENESS = "ImagePullJob default/j2 (busybox:latest) synced into NodeImage worker-1 within 60 s of creation"


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
def test_buggy_found_by_random_search_in_the_canonical_order() -> None:
    result = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    assert result.verdict == "found"
    assert result.first_found_run is not None and result.first_found_run <= 10
    cx = result.counterexample
    assert cx is not None
    assert cx.proved_minimal is True
    assert cx.deviations == 0 and not cx.plan
    assert _in_order(_labels(cx.trace), RACE.key_events)
    assert cx.replay().violation is not None


def test_exhaustive_agrees_on_the_minimum() -> None:
    random = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    exhaustive = harness.explore(scenario, strategy="exhaustive:1", fixed=False)
    assert random.counterexample is not None and exhaustive.counterexample is not None
    assert exhaustive.counterexample.digest() == random.counterexample.digest()


def test_oracle_wording_names_the_job_and_the_60_s_bound() -> None:
    cx = harness.explore(scenario, strategy="exhaustive:1", fixed=False).counterexample
    assert cx is not None
    assert cx.violation.kind == "oracle" and cx.violation.name == LIVENESS
    assert cx.violation.message == (
        f"'{LIVENESS}' did not happen within 60 virtual seconds (expected by t=60, registered at t=0)"
    )


# ------------------------------------------------------------ fixed variant
def test_fixed_clean_under_the_same_budget_and_proved_to_one_deviation() -> None:
    assert harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=True).verdict == "none-found"
    proof = harness.explore(scenario, strategy="exhaustive:1", budget=5000, fixed=True)
    assert proof.verdict == "proved-clean", proof.outcome


@pytest.mark.parametrize("delta", [0.1, 0.37, 1.7])
def test_the_informer_latency_does_not_place_the_bug(delta: float) -> None:
    """Both informers deliver at t=0 by default (``delta`` 0); other latencies find the same bug, and the fix stays clean."""
    assert_found_then_clean(scenario, budget=RACE.budget, violation=LIVENESS, delta=delta)


def test_fixed_requeue_syncs_busybox_5_s_later_on_the_same_interleaving() -> None:
    buggy = _run([], fixed=False)
    assert buggy.violation is not None
    assert [r.time for r in buggy.trace if r.label == "update NodeImage worker-1"] == [0.0]
    out = _run([], fixed=True)
    assert out.violation is None
    writes = [r for r in out.trace if r.label == "update NodeImage worker-1"]
    assert [round(r.time, 3) for r in writes] == [0.0, 5.0]  # nginx, then busybox after RequeueAfter=5s
    # the run settles after the job-level expectation's own ~300 s requeue (unchanged by the fix)
    assert out.end_time == pytest.approx(305.0)
