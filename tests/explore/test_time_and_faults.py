"""Time, lag and fault placement are part of the explored space (no timing placed by hand).

Each model here states a pattern from real controller races; its bug needs a
delivery later than its nominal time, a reorder without a same-instant tie, a
fault at a late point, or a stale read, and nothing in the model places that
timing: the default search must find it, and the canonical run stays clean.
"""

from __future__ import annotations

import random
from typing import Any

import harness as h
from harness.explore import DEFAULT_STRATEGY
from harness.kube import APIServer, ControllerProcess, Informer, KubeObject, NotFound, ServerTimeout
from harness.sim import FaultPlacement, PlanChooser, run_once

BUDGET = 3000


def found(scenario: Any, **params: Any) -> h.Result:
    result = h.explore(scenario, budget=BUDGET, seed=0, **params)
    assert result.counterexample is not None, result.outcome
    return result


def clean_canonically(scenario: Any, **params: Any) -> None:
    result = h.explore(scenario, strategy="canonical", **params)
    assert result.counterexample is None, result.outcome


# ------------------------------------------------------------------ lag
async def lag_vs_timer(world: h.World, *, fixed: bool = False) -> None:
    """A controller creates a Pod and, 1 s later (its own requeue timer), expects to see it in its cache."""
    api = APIServer(world, namespaces=("ns",))
    pods = Informer(world, api, "Pod")
    pods.start()
    await pods.wait_for_cache_sync()
    await api.create(KubeObject("Pod", "ns", "p"))
    seen: dict[str, object] = {}

    def requeue() -> None:
        seen["cached"] = pods.lister.try_get("ns", "p") is not None

    world.call_later(1.0, requeue, label="controller requeue after 1s", actor="controller")
    world.at_end(
        lambda: seen.get("cached") or fixed or "the 1 s requeue ran before the Pod's ADDED reached the cache",
        "requeue sees its own create",
    )


def test_informer_lag_beyond_timer() -> None:
    clean_canonically(lag_vs_timer)
    cx = found(lag_vs_timer).counterexample
    assert cx is not None and cx.deviations == 1 and cx.proved_minimal
    (entry,) = cx.plan or ()
    assert isinstance(entry, h.Hold) and "deliver ADDED ns/p" in entry.what.label
    assert h.explore(lag_vs_timer, budget=BUDGET, fixed=True).counterexample is None


async def cross_informers(world: h.World, *, fixed: bool = False) -> None:
    """A ReplicaSet is created, a Pod 0.3 s later; the Pod handler looks its owner up in the RS cache."""
    api = APIServer(world, namespaces=("ns",))
    rs = Informer(world, api, "ReplicaSet")
    pods = Informer(world, api, "Pod")
    orphans: list[str] = []

    def on_pod(pod: KubeObject) -> None:
        if rs.lister.try_get("ns", "r") is None and not fixed:
            orphans.append(pod.key)

    pods.add_event_handler(on_add=on_pod)
    rs.start()
    pods.start()
    await rs.wait_for_cache_sync()
    await pods.wait_for_cache_sync()
    await api.create(KubeObject("ReplicaSet", "ns", "r"))
    await world.sleep(0.3, "0.3 s later")
    await api.create(KubeObject("Pod", "ns", "p"))
    world.invariant(lambda: not orphans or f"Pod {orphans[0]} handled before its ReplicaSet was cached", "owner cached")


def test_cross_informer_reorder_without_tie() -> None:
    clean_canonically(cross_informers)
    cx = found(cross_informers).counterexample
    assert cx is not None and cx.deviations == 1
    (entry,) = cx.plan or ()
    assert isinstance(entry, h.Hold) and entry.what.actor == "informer/ReplicaSet"


async def burst(world: h.World, *, n: int = 20) -> None:
    api = APIServer(world, namespaces=("ns",))
    pods = Informer(world, api, "Pod", latency=0.05)
    pods.start()
    await pods.wait_for_cache_sync()
    for i in range(n):
        await api.create(KubeObject("Pod", "ns", f"p{i}"))
    world.state["start"] = world.now


def test_watch_pipelines_burst() -> None:
    out = run_once(burst, PlanChooser())
    times = [r.time for r in out.trace if "deliver ADDED" in r.label]
    assert len(times) == 20
    # in flight together: every event arrives one latency after its commit, not one latency after the previous
    assert max(times) - min(times) < 0.05 + 1e-9


# -------------------------------------------------------- commit != response
async def expect_after_create(world: h.World, *, fixed: bool = False) -> None:
    """The controller records its expectation after Create returns (buggy) or before (fixed)."""
    api = APIServer(world, namespaces=("ns",))
    pods = Informer(world, api, "Pod")
    expected: dict[str, int] = {"adds": 0}
    lowered_below_zero: list[int] = []

    def on_add(_pod: KubeObject) -> None:
        expected["adds"] -= 1
        if expected["adds"] < 0:
            lowered_below_zero.append(expected["adds"])

    pods.add_event_handler(on_add=on_add)
    pods.start()
    await pods.wait_for_cache_sync()
    if fixed:
        expected["adds"] += 1
    await api.create(KubeObject("Pod", "ns", "p"))
    if not fixed:
        expected["adds"] += 1
    world.invariant(lambda: not lowered_below_zero or "the Pod's ADDED arrived before Create returned", "expectations")


def test_event_before_write_response() -> None:
    clean_canonically(expect_after_create)
    r = h.explore(expect_after_create, strategy="exhaustive:1")
    cx = r.counterexample
    assert cx is not None and cx.deviations == 1
    assert any("response create Pod ns/p" in rec.label for rec in cx.trace)
    assert h.explore(expect_after_create, strategy="exhaustive:2", fixed=True).verdict == "proved-clean"


# ------------------------------------------------------------ stale reads
async def stale_after_restart(world: h.World, *, fixed: bool = False) -> None:
    """An operator crashes; while it is down, a user deletes a Parent; the restarted operator lists.

    From a lagging watch cache it may still see the Parent and create a Child for it (an orphan).
    The fixed operator confirms with a quorum GET before it creates.
    """
    api = APIServer(world, namespaces=("ns",), stale_reads=True, stale_window=2.0)
    await api.create(KubeObject("Parent", "ns", "a"))

    def build(proc: ControllerProcess) -> Informer:
        parents = Informer(world, api, "Parent", process=proc)
        parents.start()

        async def reconcile() -> None:
            await parents.wait_for_cache_sync()
            for parent in parents.lister.list():
                if fixed:
                    try:
                        await api.get("Parent", "ns", parent.name)
                    except NotFound:
                        continue
                if api.peek("Child", "ns", parent.name) is None:
                    await api.create(KubeObject("Child", "ns", parent.name))

        if proc.incarnation > 1:
            proc.spawn("operator/reconcile", reconcile)
        return parents

    proc = ControllerProcess(world, "operator", build, restart_after=1.0)
    proc.start()
    proc.crash()  # the operator is down from the start (a rollout); it comes back after 1 s
    await world.sleep(0.5, "user waits")
    await api.delete("Parent", "ns", "a")
    world.at_end(
        lambda: not (api.peek("Child", "ns", "a") and not api.peek("Parent", "ns", "a"))
        or "the restarted operator created Child ns/a for a Parent deleted before it listed",
        "no orphan child",
    )


def test_stale_list_after_restart() -> None:
    clean_canonically(stale_after_restart)
    cx = found(stale_after_restart).counterexample
    assert cx is not None and cx.deviations == 1
    assert any(rec.kind == "fault" and "lists from a lagging watch cache" in rec.label for rec in cx.trace)
    assert h.explore(stale_after_restart, budget=BUDGET, fixed=True).counterexample is None


async def rewatch(world: h.World) -> None:
    api = APIServer(world, namespaces=("ns",))
    pods = Informer(world, api, "Pod", watch_ends=True, compactions=True)
    pods.start()
    await pods.wait_for_cache_sync()
    for i in range(3):
        await api.create(KubeObject("Pod", "ns", f"p{i}"))
    world.state["informer"] = pods


def test_compacted_watch_gets_410_and_relists() -> None:
    base = PlanChooser()
    run_once(rewatch, base)
    end = next(i for i, k in base.fault_points if k == "watch_end")
    comp_probe = PlanChooser([h.Fault(end)])
    run_once(rewatch, comp_probe)
    compaction = next(i for i, k in comp_probe.fault_points if k == "compaction")
    resumed = run_once(rewatch, PlanChooser([h.Fault(end)]))
    assert not any(r.label.endswith(" list") and r.time > 0 for r in resumed.trace)  # resumed, no relist
    gone = run_once(rewatch, PlanChooser([h.Fault(end), h.Fault(compaction)]))
    relists = [r for r in gone.trace if r.label == "informer/Pod list"]
    assert len(relists) == 2  # the initial list and the relist after 410 Gone
    assert relists[1].time >= 0.8  # client-go's first backoff step


# ----------------------------------------------------------- ambiguous writes
async def ambiguous(world: h.World) -> None:
    api = APIServer(world, namespaces=("ns",), ambiguous_writes=True)

    async def client() -> None:  # an actor of its own: the scenario's "main" gets no fault points
        try:
            await api.create(KubeObject("Pod", "ns", "p"))
            world.state["outcome"] = "ok"
        except ServerTimeout:
            world.state["outcome"] = "timeout"
        world.state["stored"] = api.peek("Pod", "ns", "p") is not None

    world.spawn("client", client)
    world.at_end(
        lambda: world.state["outcome"] == "ok" or not world.state["stored"] or "committed, yet reported as failed",
        "clear",
    )


def test_ambiguous_write_commits() -> None:
    clean_canonically(ambiguous)
    cx = h.explore(ambiguous, strategy="exhaustive:1").counterexample
    assert cx is not None and cx.plan is not None and [e.kind for e in cx.plan] == ["fault"]
    assert "commits, but its response is lost" in cx.plan[0].describe()


# ----------------------------------------------------------- fault placement
def test_fault_points_uniform_under_budget() -> None:
    rng = random.Random(7)
    fired_at: list[int] = []
    for _ in range(4000):
        placement = FaultPlacement.draw(rng, ["crash"], 10, max_faults=1)
        fired = [i for i in range(1, 11) if placement.fires("crash")]
        fired_at.extend(fired)
    counts = [fired_at.count(i) for i in range(1, 11)]
    total = sum(counts)
    assert total > 1000  # about half the runs get a fault
    assert all(0.07 * total < c < 0.13 * total for c in counts), counts  # uniform, not "first point first"


async def late_crash(world: h.World, *, fixed: bool = False) -> None:
    """An operator writes ten objects in order; its restart logic trusts the fifth as a marker (buggy)."""
    api = APIServer(world, namespaces=("ns",))

    def build(proc: ControllerProcess) -> None:
        async def run() -> None:
            # buggy restart: "o4 is the last of the first batch", so it wrongly assumes all are done
            if (proc.incarnation > 1 and not fixed and api.peek("Obj", "ns", "o4") is not None
                    and api.peek("Obj", "ns", "o5") is None):
                return
            for i in range(10):
                if api.peek("Obj", "ns", f"o{i}") is None:
                    await api.create(KubeObject("Obj", "ns", f"o{i}"))

        proc.spawn("operator", run)

    ControllerProcess(world, "operator", build, crash_faults=True, restart_after=1.0).start()
    world.at_end(
        lambda: all(api.peek("Obj", "ns", f"o{i}") for i in range(10)) or "the restarted operator left objects missing",
        "all ten written",
    )


def test_late_crash_found_by_default_search() -> None:
    clean_canonically(late_crash)
    cx = found(late_crash).counterexample
    assert cx is not None and cx.deviations == 1
    # the fifth of ten objects is committed, the sixth not yet: the crash lands on its response or the next create
    (fault,) = [r.label for r in cx.trace if r.kind == "fault"]
    assert fault in ("operator crashes before response create Obj ns/o4", "operator crashes before create Obj ns/o5")
    assert h.explore(late_crash, budget=BUDGET, fixed=True).counterexample is None


# ------------------------------------------------------------------ defaults
def test_portfolio_is_default() -> None:
    assert DEFAULT_STRATEGY == "portfolio"
    r = h.explore(lag_vs_timer, budget=BUDGET)
    assert r.strategy.startswith("portfolio") and r.found_by in ("random", "pct", "hypothesis")
    assert f"by {r.found_by}" in r.outcome


def test_canonical_run_unchanged() -> None:
    """The canonical run (every choice 0) is the nominal-time run: no postponement, no fault."""
    for scenario in (lag_vs_timer, cross_informers, expect_after_create, ambiguous, late_crash):
        out = run_once(scenario, PlanChooser(), faults=frozenset({"*"}))
        assert out.violation is None, (scenario.__name__, out.violation)
        assert not any(r.kind in ("wait", "fault") or r.choice for r in out.trace)
