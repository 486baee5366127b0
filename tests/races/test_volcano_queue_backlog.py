"""volcano-sh/volcano#3597 (fix PR #3751): queue-controller 409 retries pile up in the workqueue.

The overload scenario is a load-induced feedback loop: the canonical run of the
buggy variant already breaks the backlog bound, so its minimal counterexample
has 0 deviations. The reusable core (one conflict) needs one deviation.
"""

from __future__ import annotations

from typing import Any

import pytest
from race_support import assert_found_then_clean

import harness
from harness.sim import RandomChooser, ReplayChooser, RunOutcome, World
from races import REGISTRY
from races.volcano_queue_backlog import (
    RACES,
    QueueController,
    Scheduler,
    _slope,
    queue_backlog,
    queue_status_conflict,
)

RACE = RACES[0]
BOUND = "queue-controller workqueue backlog (queued + processing + waiting)"


def _canonical(scenario: Any = queue_backlog, **params: Any) -> tuple[RunOutcome, dict[str, Any]]:
    """The canonical run, plus the model objects the scenario left in ``world.state``."""
    state: dict[str, Any] = {}

    async def wrapped(world: World, **p: Any) -> None:
        await scenario(world, **p)
        state.update(world.state)

    return harness.run_once(wrapped, ReplayChooser([]), params=params), state


def _labels(out: Any) -> list[str]:
    return [r.label for r in out.trace]


def _in_order(labels: list[str], events: tuple[str, ...]) -> bool:
    i = 0
    for label in labels:
        if i < len(events) and events[i] in label:
            i += 1
    return i == len(events)


# ---------------------------------------------------------------- registry
def test_registered_with_upstream_reference() -> None:
    assert REGISTRY["volcano_queue_backlog"] is RACE
    assert RACE.scenario is queue_backlog
    assert RACE.upstream == "volcano-sh/volcano#3597 (fix PR #3751, f14999ca)"
    assert RACE.strategy == "random" and RACE.budget == 8 and not RACE.known_open


# ------------------------------------------------------------ buggy variant
def test_buggy_found_by_random_search_with_minimal_counterexample() -> None:
    result = harness.explore(queue_backlog, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    assert result.found and result.verdict == "found"
    assert result.first_found_run == 1  # a load-induced loop: every interleaving fails
    cx = result.counterexample
    assert cx is not None
    assert cx.proved_minimal is True
    assert cx.deviations == 0  # the canonical run itself breaks the bound
    assert cx.violation.name == BOUND
    assert cx.violation.message == f"bound '{BOUND}' exceeded: 201 > 200"
    assert _in_order(_labels(cx), RACE.key_events)
    # the counterexample replays exactly
    assert cx.replay().violation is not None


def test_exhaustive_proves_zero_deviations_minimal() -> None:
    result = harness.explore(queue_backlog, strategy="exhaustive:1", fixed=False)
    assert result.counterexample is not None
    assert result.counterexample.deviations == 0 and result.runs == 1
    random = harness.explore(queue_backlog, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    assert random.counterexample is not None
    assert random.counterexample.deviations == result.counterexample.deviations


def test_canonical_buggy_run_breaks_the_bound_by_feedback() -> None:
    out, state = _canonical(fixed=False)
    assert out.violation is not None and out.violation.name == BOUND
    assert out.deviations == 0
    assert 10.0 < out.end_time < 12.0
    c: QueueController = state["controller"]
    # conflicts outrun the 10/s bucket: every 409 was re-queued with AddRateLimited
    assert c.conflicts == c.requeued and c.conflicts / out.end_time > 10.0
    assert c.max_delay > 1.0  # the newest bucket reservation waits seconds
    # every request names the same queue, yet none was deduplicated: they are distinct pointers
    assert c.queue.backlog == 201 and c.queue.waiting > 150
    assert c.dropped == 0  # maxRequeueNum=15 has not dropped anything this early


def test_buggy_backlog_grows_linearly_without_the_bound() -> None:
    out, state = _canonical(fixed=False, duration=60.0, max_backlog=10**9)
    assert out.violation is not None and out.violation.name == "workqueue backlog does not grow"
    assert out.violation.message.startswith("at the end of the run: the queue-controller workqueue backlog grows by ")
    assert "items/s over the last 30 s (least-squares slope; limit 0.1 items/s" in out.violation.message
    slope = _slope([s for s in state["samples"] if s[0] >= 30.0])
    assert 15.0 < slope < 25.0


def test_conflict_oracle_wording() -> None:
    out, _ = _canonical(fixed=False, duration=20.0, max_backlog=10**9, max_slope=1e9)
    assert out.violation is not None and out.violation.name == "no 409 from queue-controller status writes"
    assert "queue-controller status writes got 409 Conflict" in out.violation.message
    assert "the queue controller's UpdateStatus of Queue q1 from its lister copy" in out.violation.message


def test_below_the_bucket_rate_nothing_conflicts() -> None:
    # 10 events/s: each write reaches the lister before the next event, so no 409 at all
    out, state = _canonical(fixed=False, scale=0.2, duration=60.0)
    assert out.violation is None
    assert state["controller"].conflicts == 0


def test_higher_scale_fails_sooner() -> None:
    out, _ = _canonical(fixed=False, scale=10.0)
    assert out.violation is not None and out.violation.name == BOUND
    assert out.end_time < 2.0


def test_same_seed_same_trace_different_seeds_different_traces() -> None:
    params = {"fixed": False, "duration": 5.0}
    a = harness.run_once(queue_backlog, RandomChooser(7), params=params)
    b = harness.run_once(queue_backlog, RandomChooser(7), params=params)
    assert a.trace.digest() == b.trace.digest()
    digests = {harness.run_once(queue_backlog, RandomChooser(s), params=params).trace.digest() for s in range(6)}
    assert len(digests) > 1


# ------------------------------------------------------------ fixed variant
def test_fixed_canonical_600_seconds_is_clean() -> None:
    out, state = _canonical(fixed=True)
    assert out.violation is None and out.end_time == 600.0
    c: QueueController = state["controller"]
    s: Scheduler = state["scheduler"]
    assert c.conflicts == 0 and c.requeued == 0 and c.max_delay == 0.0
    assert c.status_writes == 1  # the one ApplyStatus that sets State=Open
    assert s.sessions == 599 and s.conflicts == 0
    assert max(b for _, b in state["samples"]) <= 1
    assert set(c.metrics) == {"pending", "running", "unknown", "inqueue", "completed"}


def test_fixed_clean_under_the_race_budget() -> None:
    result = harness.explore(queue_backlog, strategy="random", budget=RACE.budget, seed=0, fixed=True, duration=30.0)
    assert result.verdict == "none-found"


@pytest.mark.parametrize(("churn_start", "session_offset"), [(0.0, 0.0), (0.17119, 0.5), (1.0, 0.05287)])
def test_the_churn_and_session_phases_do_not_place_the_bug(churn_start: float, session_offset: float) -> None:
    """The churn starts at 0.1007 s and sessions at 0.0311 s past each second; other phases break the bound too."""
    assert_found_then_clean(
        queue_backlog, budget=RACE.budget, violation=BOUND, clean_budget=RACE.budget, clean={"duration": 30.0},
        churn_start=churn_start, session_offset=session_offset,
    )

# ------------------------------------------------------ the reusable core
CORE_CONFLICT = (
    "at t={} the queue controller's UpdateStatus of Queue q1 from its lister copy (rv=5; the apiserver has rv=10) "
    "got 409 Conflict; the request was re-queued with AddRateLimited"
)


def test_core_canonical_run_is_clean() -> None:
    out, state = _canonical(queue_status_conflict, fixed=False)
    assert out.violation is None
    assert state["controller"].conflicts == 0 and state["controller"].status_writes == 2


def test_core_found_with_one_deviation() -> None:
    result = harness.explore(queue_status_conflict, strategy="random", budget=200, seed=0, fixed=False)
    cx = result.counterexample
    assert cx is not None and cx.proved_minimal is True
    assert cx.deviations == 1
    # the MODIFIED event is held as long as its window allows: the stale write lands when it ends
    assert cx.violation.message == CORE_CONFLICT.format(f"{cx.violation.time:.3f}")
    exhaustive = harness.explore(queue_status_conflict, strategy="exhaustive:1", fixed=False)
    assert exhaustive.counterexample is not None and exhaustive.counterexample.deviations == 1
    # worker A writes q1; worker B read its lister copy before A's write reached it, then writes
    # a stale copy (the minimum may hold the informer's LIST or its MODIFIED event: either way no
    # delivery of q1's new revision lies between B's get and B's write)
    labels = _labels(cx)
    writes = [i for i, label in enumerate(labels) if label == "update_status Queue q1"]
    assert len(writes) == 2
    recs = list(cx.trace)
    get_b = max(i for i in range(writes[1]) if labels[i] == "queue-controller get" and recs[i].actor == recs[writes[1]].actor)
    assert not any("deliver MODIFIED q1" in label for label in labels[get_b : writes[1]])
    assert recs[writes[0]].actor != recs[writes[1]].actor  # two workers, two distinct requests


def test_core_fixed_proved_clean() -> None:
    proof = harness.explore(queue_status_conflict, strategy="exhaustive:2", budget=20_000, fixed=True)
    assert proof.verdict == "proved-clean", proof.outcome
    random = harness.explore(queue_status_conflict, strategy="random", budget=200, seed=0, fixed=True)
    assert random.verdict == "none-found"
