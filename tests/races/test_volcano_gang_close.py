"""volcano-sh/volcano#4011: the gang plugin's OnSessionClose and task-less jobs (races/volcano_gang_close.py)."""

from __future__ import annotations

import pytest
from race_support import assert_found_then_clean, assert_in_order

import harness
from harness.sim import Hold, ReplayChooser
from races import REGISTRY
from races.volcano_gang_close import (
    JobInfo,
    is_pod_group_conditions_updated,
    job_terminated,
    scenario,
)

RACE = REGISTRY["volcano_gang_close"]


@pytest.fixture(scope="module")
def buggy() -> harness.Result:
    return harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)


def test_registry_entry() -> None:
    assert RACE.scenario is scenario
    assert RACE.upstream == "volcano-sh/volcano#4011 (fix PR #4012, 15ebb45e)"
    assert not RACE.known_open


def test_buggy_variant_is_found(buggy: harness.Result) -> None:
    assert buggy.verdict == "found"
    assert buggy.counterexample is not None
    assert buggy.counterexample.violation.name == "no PodGroup write for a job with no tasks"


def test_counterexample_has_the_key_events_in_order(buggy: harness.Result) -> None:
    assert buggy.counterexample is not None
    assert_in_order([r.label for r in buggy.counterexample.trace], RACE.key_events)


def test_pod_deleted_is_delivered_then_the_session_opens_before_the_pod_group_deleted(buggy: harness.Result) -> None:
    cx = buggy.counterexample
    assert cx is not None and cx.plan is not None and len(cx.plan) == 1
    # one postponement: the scheduler's PodGroup watch lags, so its DELETED waits behind it
    (hold,) = cx.plan
    assert isinstance(hold, Hold) and hold.what.actor == "scheduler/informer/PodGroup"
    labels = [r.label for r in cx.trace]
    pod_deleted = labels.index("scheduler/informer/Pod deliver DELETED default/j1-worker-0 rv=10")
    session = labels.index("open session: snapshot the cache", pod_deleted)
    assert not any("scheduler/informer/PodGroup deliver DELETED" in label for label in labels[:session])


def test_minimal_deviations_match_exhaustive(buggy: harness.Result) -> None:
    cx = buggy.counterexample
    assert cx is not None and cx.proved_minimal is True
    exhaustive = harness.explore(scenario, strategy="exhaustive:1", fixed=False)
    assert exhaustive.verdict == "found" and exhaustive.counterexample is not None
    assert cx.deviations == exhaustive.counterexample.deviations == 1


def test_oracle_wording_names_the_taskless_condition(buggy: harness.Result) -> None:
    assert buggy.counterexample is not None
    msg = buggy.counterexample.violation.message
    assert "'1/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable'" in msg
    assert "answered 404 NotFound" in msg  # the PodGroup was already gone
    assert "volcano#4011" in msg


def test_counterexample_replays() -> None:
    out = harness.explore(scenario, strategy="exhaustive:1", fixed=False)
    assert out.counterexample is not None
    replayed = out.counterexample.replay()
    assert replayed.violation is not None and replayed.violation.same_bug(out.counterexample.violation)


@pytest.mark.parametrize("delete_at", [0.0, 1.0, 4.25])
def test_the_delete_time_does_not_place_the_bug(delete_at: float) -> None:
    """The user deletes the vcjob at 2.5 s, mid-period; before the first session, on a tick or later finds the same bug."""
    assert_found_then_clean(
        scenario, budget=RACE.budget, violation="no PodGroup write for a job with no tasks", delete_at=delete_at
    )


def test_fixed_variant_is_clean_under_the_same_budget() -> None:
    result = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=True)
    assert result.verdict == "none-found"


def test_fixed_variant_is_proved_clean_up_to_one_deviation() -> None:
    result = harness.explore(scenario, strategy="exhaustive:1", fixed=True)
    assert result.verdict == "proved-clean", result.outcome


def test_canonical_run_delivers_both_deletes_before_the_session() -> None:
    out = harness.run_once(scenario, ReplayChooser([]), params={"fixed": False})
    assert out.violation is None
    assert out.deviations == 0
    # The only PodGroup write is the first session's "1/1 tasks" condition; later sessions write nothing.
    writes = [r for r in out.trace if r.label.startswith("update_status PodGroup")]
    assert [r.time for r in writes] == [1.0]
    labels = [r.label for r in out.trace]
    # the user's delete at 2.5 s: both DELETED events reach the scheduler before its 3 s session
    session = labels.index("open session: snapshot the cache", labels.index("delete Job default/j1"))
    assert labels.index("scheduler/informer/Pod deliver DELETED default/j1-worker-0 rv=10") < session
    assert labels.index("scheduler/informer/PodGroup deliver DELETED default/j1-uid-0005 rv=11") < session
    assert out.trace[session].time == 3.0


def test_job_info_semantics() -> None:
    a, b = JobInfo("default/pg"), JobInfo("default/pg")
    assert a != b and len({a, b}) == 2  # pointers: identity, never value equality
    assert job_terminated(a)
    assert str(a) == "JobInfo default/pg (PgUID -)"


def test_condition_comparison_ignores_time_and_transition_id() -> None:
    old = [{"type": "Unschedulable", "message": "1/1 tasks", "lastTransitionTime": 1.0, "transitionID": "s1"}]
    same = [{"type": "Unschedulable", "message": "1/1 tasks", "lastTransitionTime": 2.0, "transitionID": "s2"}]
    other = [{"type": "Unschedulable", "message": "1/0 tasks", "lastTransitionTime": 2.0, "transitionID": "s2"}]
    assert not is_pod_group_conditions_updated(same, old)
    assert is_pod_group_conditions_updated(other, old)
    assert is_pod_group_conditions_updated([], old)
