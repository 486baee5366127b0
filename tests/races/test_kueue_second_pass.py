"""kubernetes-sigs/kueue#5511 (fix PR #5587, c5eaee29; final fix PR #15571): second-pass entries outlive the delete.

Two registry entries share one scenario:

* ``kueue_second_pass``: test A's ``AfterEach`` deletes wl1 0.3 s after the node failure,
  inside the 1 s ``AfterFunc`` window. The upstream test sequence always lands there, so
  the buggy variant fails canonically (0 deviations); the final fix is proved clean.
* ``kueue_second_pass_residual``: from #5587 on. The delete lands between ``takeAllReady`` and
  ``requeueAndUpdate``; #5587 re-prequeues the captured object (1 deviation), #15571's re-read
  of the Workload drops the request.
"""

from __future__ import annotations

from typing import Any

import pytest

import harness
from harness.kube import KubeObject
from harness.kube import _informer as informer_module
from harness.sim import ReplayChooser, RunOutcome
from races import REGISTRY
from races._kueue_queue import NODE_TO_REPLACE, Info, SecondPassQueue
from races._kueue_scheduler import Scheduler
from races.kueue_second_pass import RACES, scenario, scenario_after_5587

RACE, RESIDUAL = RACES
SAFETY = "no Heads() result or preemption target for a deleted workload"
STALE = (
    "Heads() returned workload test-a/wl1 at t={t}, after the queue manager observed its DELETE at t={d}: "
    "a deleted workload outlives its delete in the second-pass queue"
)


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
    assert REGISTRY["kueue_second_pass"] is RACE and REGISTRY["kueue_second_pass_residual"] is RESIDUAL
    assert RACE.upstream == "kubernetes-sigs/kueue#5511 (fix PR #5587, c5eaee29; final fix PR #15571)"
    # the final fix closes the residual window too: both rows are found and cleared
    assert not RACE.known_open and not RESIDUAL.known_open
    assert RESIDUAL.scenario is scenario_after_5587 and RESIDUAL.faults == RACE.faults == "all"


# ------------------------------------------------ the queue alone (upstream unit test)
def _needing_second_pass(name: str) -> KubeObject:
    return KubeObject(
        "Workload",
        "default",
        name,
        annotations={NODE_TO_REPLACE: "x1"},
        spec={"pods": 2},
        status={"admission": {"clusterQueue": "tas-main", "topology": ["x1", "x2"]}},
    )


@pytest.mark.parametrize("fixed", [False, True])
def test_second_pass_queue_mirrors_TestQueueSecondPassIfNeeded(fixed: bool) -> None:
    """``QueueSecondPassIfNeeded``; ``deleteByKey``; the 1 s clock step; ``takeAllReady``."""
    foo, second = _needing_second_pass("foo"), _needing_second_pass("second")
    q = SecondPassQueue(fixed)
    for w in (foo, second):
        if fixed:
            q.prequeue(w)  # QueueSecondPassIfNeeded, before clock.AfterFunc
    q.delete_by_key("default/foo")  # deleted in the meanwhile
    for w in (foo, second):  # the timers fire
        info = Info(w, "tas-main")
        if fixed:
            q.queue(info)
        else:
            q.offer(info)
    ready = sorted(i.key for i in q.take_all_ready())
    assert ready == (["default/second"] if fixed else ["default/foo", "default/second"])
    assert q.take_all_ready() == []


# ------------------------------------------------------------ buggy variant
def test_buggy_found_at_once_with_zero_deviations() -> None:
    result = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)
    assert result.verdict == "found" and result.first_found_run == 1
    cx = result.counterexample
    assert cx is not None
    assert cx.proved_minimal is True and cx.deviations == 0
    assert _in_order(_labels(cx.trace), RACE.key_events)
    assert cx.violation.name == SAFETY
    assert cx.violation.message == STALE.format(t="1.250", d="0.550")
    assert cx.replay().violation is not None


def test_exhaustive_agrees_on_the_minimum() -> None:
    result = harness.explore(scenario, strategy="exhaustive:1", fixed=False)
    assert result.counterexample is not None and result.counterexample.deviations == 0 and result.runs == 1


def test_canonical_run_serves_the_stale_entry_when_the_timer_fires() -> None:
    out = _run([], fixed=False)
    assert out.violation is not None and out.deviations == 0
    assert out.violation.name == SAFETY and out.violation.time == pytest.approx(1.25)
    labels = _labels(out.trace)
    # the delete is observed 0.3 s after the node failure, well inside the 1 s window
    assert labels.index("informer/Workload deliver DELETED test-a/wl1 rv=15") < labels.index(
        "AfterFunc(1s) fires: queueSecondPass test-a/wl1"
    )


@pytest.mark.parametrize("teardown_after", [0.0, 1.7, 3.0])
def test_the_teardown_delay_does_not_place_the_bug(teardown_after: float) -> None:
    """Test A's AfterEach comes 0.3 s after the node failure; any other delay lands in a window too.

    The failed node makes wl1's second pass fail and re-arm the 1 s timer every second, so the
    delete always lands while a timer holds the object: the buggy variant fails canonically.
    Known open, so the fixed variant is not expected clean.
    """
    found = harness.explore(
        scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False, teardown_after=teardown_after
    )
    assert found.verdict == "found" and found.counterexample is not None
    assert found.counterexample.violation.name == SAFETY and found.counterexample.deviations == 0

# ------------------------------------------------------------ fixed variant
def test_5587_alone_is_clean_without_lag_and_open_with_one_late_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """#5587 closes the 1 s window; one late DELETED delivery reaches its residual window."""
    with monkeypatch.context() as m:
        m.setattr(informer_module, "DEFAULT_MAX_LAG", 0.0)
        no_lag = harness.explore(scenario, strategy="exhaustive:1", budget=5000, fixed=True, only_5587=True)
    assert no_lag.verdict == "proved-clean", no_lag.outcome
    lag = harness.explore(scenario, strategy="exhaustive:1", budget=5000, fixed=True, only_5587=True)
    cx = lag.counterexample
    assert cx is not None and cx.deviations == 1 and cx.proved_minimal is True
    assert cx.violation.name == SAFETY


def test_kueue_final_fix_is_clean_under_lag() -> None:
    """#15571: the late DELETED that opens #5587's window finds the re-read; clean with every fault kind."""
    proof = harness.explore(scenario, strategy="exhaustive:1", fixed=True)
    assert proof.verdict == "proved-clean" and proof.runs > 100, proof.outcome
    sampled = harness.explore(scenario, strategy="random", budget=600, seed=3, fixed=True, faults="all")
    assert sampled.verdict == "none-found", sampled.outcome
    residual = harness.explore(scenario_after_5587, strategy="exhaustive:1", fixed=True)
    assert residual.verdict == "proved-clean", residual.outcome


def test_the_re_read_drops_the_request_of_a_deleted_workload() -> None:
    """The timer fires after the DELETE reached the cache: #15571 drops it, #5587 queues the captured object."""
    from races._kueue_queue import QueueManager, StaleTracker

    class _Lister:
        def try_get(self, _ns: str, _name: str) -> None:
            return None  # the Workload's DELETED has reached the informer cache

    class _Informer:
        lister = _Lister()

    def _manager(reread: bool) -> QueueManager:
        world: Any = type("W", (), {"Event": lambda self: type("E", (), {"set": lambda self: None})()})()
        return QueueManager(world, _Informer(), StaleTracker.__new__(StaleTracker), fixed=True, reread=reread)

    w = _needing_second_pass("wl1")
    for reread, ready in ((False, ["default/wl1"]), (True, [])):
        m = _manager(reread)
        m.second_pass_queue.prequeue(w)  # requeueAndUpdate re-armed the timer after takeAllReady
        m.queue_second_pass(w)
        assert [i.key for i in m.second_pass_queue.take_all_ready()] == ready
        assert m.second_pass_queue.prequeued == {}


def test_fixed_canonical_run_admits_both_test_b_workloads() -> None:
    out = _run([], fixed=True)
    assert out.violation is None
    labels = _labels(out.trace)
    assert "patch_status Workload test-b/wl1" in labels and "patch_status Workload test-b/wl2" in labels
    # the timer still fires, but finds the key no longer pre-queued
    assert "AfterFunc(1s) fires: queueSecondPass test-a/wl1" in labels


def test_liveness_oracle_fires_when_test_b_cannot_admit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The liveness oracle can fail: a scheduler that never fits test B's workloads."""
    original = Scheduler.get_assignments

    def no_fit_in_b(self: Scheduler, e: Any, cq: Any, snap: Any) -> None:
        original(self, e, cq, snap)
        if e.info.obj.namespace == "test-b":
            e.mode, e.targets = "NoFit", []

    monkeypatch.setattr(Scheduler, "get_assignments", no_fit_in_b)
    out = _run([], fixed=True)
    assert out.violation is not None
    assert out.violation.name == "test-b: all of wl1, wl2 admitted within 10 s"
    assert "did not happen within 10 virtual seconds" in out.violation.message


# ------------------------------------------------------- residual: #5587 against #15571
def test_residual_window_is_open_in_5587_and_closed_by_15571() -> None:
    result = harness.explore(scenario_after_5587, strategy="random", budget=RESIDUAL.budget, seed=0, fixed=False)
    assert result.verdict == "found"  # #5587 does not close it
    cx = result.counterexample
    assert cx is not None
    assert cx.proved_minimal is True and cx.deviations == 1
    assert _in_order(_labels(cx.trace), RESIDUAL.key_events)
    assert cx.violation.message == STALE.format(t="2.250", d="1.250")
    # the delete is observed after takeAllReady handed the entry to the scheduler, before requeueAndUpdate
    labels = _labels(cx.trace)
    fired = labels.index("AfterFunc(1s) fires: queueSecondPass test-a/wl1")
    heads = labels.index("Heads: wait for pending workloads (sync.Cond)", fired)
    delete = labels.index("informer/Workload deliver DELETED test-a/wl1 rv=15")
    get_ns = labels.index("get Namespace test-a (cached client)", heads)
    assert heads < delete < get_ns
    fixed = harness.explore(scenario_after_5587, strategy="exhaustive:1", fixed=True)
    assert fixed.verdict == "proved-clean", fixed.outcome


def test_residual_canonical_order_is_clean_from_5587_on_and_fails_before() -> None:
    assert _run([], fixed=True, only_5587=True, teardown_after=1.0).violation is None
    buggy = harness.explore(scenario, strategy="random", budget=RESIDUAL.budget, seed=0, fixed=False, teardown_after=1.0)
    assert buggy.counterexample is not None and buggy.counterexample.deviations == 0
