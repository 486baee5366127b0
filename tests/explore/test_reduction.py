"""The exhaustive referee's reduction: what steps record, what a declared process is, and that it keeps verdicts.

A hold's "until" sibling places the held action right after another one; when
that one belongs to another declared process and touches none of the held
process's apiserver objects, the two orders reach the same state and the
sibling is skipped. These tests check the footprints it reads, the
declarations it trusts, and, on every race and toy, that with and without it
the search reaches the same verdict and the same counterexample.
"""

from __future__ import annotations

from typing import Any

import pytest

import harness as h
from harness.explore import _exhaustive, registered_races
from harness.kube import APIServer, KubeObject
from harness.kube._examples import stale_status_writers
from harness.sim import PlanChooser, World, run_once
from tests import toys


def both(scenario: Any, k: int, budget: int = 50_000, **params: Any) -> tuple[h.Result, h.Result]:
    """The same exhaustive search with and without the reduction."""
    return tuple(  # type: ignore[return-value]
        h.explore(scenario, strategy=h.Exhaustive(k, reduce=r), budget=budget, prove_minimal=False, **params)
        for r in (True, False)
    )


def assert_same_verdict(reduced: h.Result, full: h.Result) -> None:
    assert reduced.verdict == full.verdict, (reduced.outcome, full.outcome)
    assert reduced.verdict in ("found", "proved-clean"), reduced.outcome
    if full.counterexample is not None:
        assert reduced.counterexample is not None
        assert reduced.counterexample.plan == full.counterexample.plan
        assert reduced.counterexample.trace.digest() == full.counterexample.trace.digest()
    assert reduced.runs <= full.runs


# ---------------------------------------------------------------- declarations
def test_share_memory_declares_one_process_per_call_and_merges_overlaps() -> None:
    world = World(PlanChooser())
    assert world.process_of("scheduler/informer/Pod") is None  # undeclared: may share memory with any
    world.share_memory("scheduler", "DeletedJobs")
    world.share_memory("garbagecollector")
    assert world.process_of("scheduler/informer/Pod") == world.process_of("DeletedJobs/delay") == "scheduler"
    assert world.process_of("garbagecollector/worker-1") == "garbagecollector"
    assert world.process_of("main") is None
    world.share_memory("garbagecollector", "scheduler")  # one prefix in two declarations: one process
    assert world.process_of("DeletedJobs/delay") == world.process_of("garbagecollector/worker-2")


@pytest.mark.parametrize("bad", [(), ("scheduler/informer",)])
def test_share_memory_refuses_what_is_not_a_prefix(bad: tuple[str, ...]) -> None:
    with pytest.raises(h.UsageError, match="prefix"):
        World(PlanChooser()).share_memory(*bad)


async def _footprints(world: World) -> None:
    world.share_memory("main")
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "c1"))
    await api.get("ConfigMap", "default", "c1")
    await api.list("ConfigMap")


def test_steps_record_what_they_read_and_wrote_at_the_apiserver() -> None:
    chooser = PlanChooser(footprints=True)
    out = run_once(_footprints, chooser)
    assert out.violation is None
    by_label = {i.label: fp for i, fp in zip(chooser.ran, chooser.footprints, strict=True)}
    obj = "ConfigMap default/c1"
    assert {(obj, True), ("ConfigMap *", True), ("revision", True)} <= set(by_label["create ConfigMap default/c1"])
    assert set(by_label["get ConfigMap default/c1"]) == {(obj, False)}
    (listed,) = [fp for label, fp in by_label.items() if label.startswith("list ConfigMap")]
    assert set(listed) == {("ConfigMap *", False), (obj, False)}  # the kind, and each object the LIST returned
    assert by_label["response create ConfigMap default/c1"] == ()  # the answer is the client's own memory
    unasked = PlanChooser()  # every chooser but the reducing referee's: nothing is recorded
    run_once(_footprints, unasked)
    assert unasked.ran == chooser.ran and not any(unasked.footprints)
    assert chooser.process_of("main") == "main"


# ------------------------------------------------------------ kept verdicts
def test_reduction_skips_reorderings_of_independent_processes_and_keeps_the_proof() -> None:
    reduced, full = both(stale_status_writers, 2, fixed=True)
    assert_same_verdict(reduced, full)
    assert reduced.skipped > 0
    assert full.skipped == 0
    assert reduced.runs * 2 < full.runs, (reduced.runs, full.runs)
    assert "reorderings of independent actions skipped" in reduced.outcome


def test_a_model_that_declares_nothing_is_searched_in_full() -> None:
    """No reordering is skipped where nothing is declared; what is left out is only a plan whose run would be the
    run it came from (a hold released right after the last action that ran while it held: ``next_to``)."""
    reduced, full = both(stale_status_writers, 1, fixed=True, processes=False)
    assert_same_verdict(reduced, full)
    assert reduced.skipped == 0
    assert reduced.runs == full.runs - reduced.repeats


@pytest.mark.parametrize("scenario", [toys.lost_update, toys.slow_liveness], ids=lambda s: s.__name__)
def test_a_hold_released_right_after_its_last_until_is_not_run_again(scenario: Any, monkeypatch: Any) -> None:
    """"Hold X until y", y the last action that ran while X was held, when X ran as the very next step at y's
    instant, is the run of "hold X as long as its window allows" itself: not run, and neither is what it extends
    to. On toys with no declared process (so no reordering is skipped) the referee that leaves them out reaches
    every distinct run the one that runs every plan reaches, to two entries, with the same verdict."""
    runs: set[tuple[tuple[str, object], ...]] = set()
    report = _exhaustive._report

    def seen(chooser: Any, out: Any, job: Any) -> Any:
        runs.add(tuple((r.actor, r.label) for r in out.trace))
        return report(chooser, out, job)

    monkeypatch.setattr(_exhaustive, "_report", seen)
    full = h.explore(scenario, strategy=h.Exhaustive(2, reduce=False), fixed=True)
    every, runs = runs, set()
    reduced = h.explore(scenario, strategy=h.Exhaustive(2), fixed=True)
    assert_same_verdict(reduced, full)
    assert reduced.skipped == 0 and runs == every, (len(runs), len(every))
    assert reduced.repeats > 0 and reduced.runs < full.runs, (reduced.runs, full.runs)
    assert "skipped that would repeat a run" in reduced.outcome


@pytest.mark.parametrize("scenario", [toys.lost_update, toys.order_violation, toys.slow_liveness], ids=lambda s: s.__name__)
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_reduction_keeps_every_toy_verdict(scenario: Any, fixed: bool) -> None:
    k = 1 if scenario is toys.order_violation and fixed else 2
    assert_same_verdict(*both(scenario, k, fixed=fixed))


async def _requeue_into_maintenance(world: World) -> None:
    """Two processes that share nothing, where only *when* a's delivery runs matters.

    a's delivery may come up to 10 s late and requeues 5 s after it runs; b
    ticks at 4 s and holds a maintenance window from 8 to 10 s. The requeue
    lands in it only if the delivery runs right after b's first tick: between
    the two ends of its window, across a time jump, with b's actions
    independent of it.
    """
    world.share_memory("a")
    world.share_memory("b")
    requeued: list[float] = []

    async def a() -> None:
        await world.step("deliver", window=10.0)
        await world.sleep(5.0, "requeue")
        requeued.append(world.now)

    async def b() -> None:
        await world.sleep(4.0, "tick")
        await world.sleep(4.0, "maintenance starts")
        await world.sleep(2.0, "maintenance ends")

    world.spawn("a", a)
    world.spawn("b", b)
    world.at_end(
        lambda: f"requeue at {requeued[0]:g}s inside maintenance [8, 10)" if requeued and 8 <= requeued[0] < 10 else None,
        name="requeue outside maintenance",
    )


def test_an_independent_action_that_ran_after_a_time_jump_still_places_the_held_one() -> None:
    """Holding a's delivery until b's tick moves it across a jump of virtual time,
    not just past b's action: the sibling runs, and the reduced search finds
    what the full one finds (it once proved this clean)."""
    reduced, full = both(_requeue_into_maintenance, 1)
    assert full.verdict == "found"
    assert_same_verdict(reduced, full)
    assert reduced.counterexample is not None
    assert "inside maintenance" in reduced.counterexample.violation.message


FAST_RACES = sorted(n for n in registered_races() if n != "volcano_queue_backlog")  # ~94k steps a run


@pytest.mark.parametrize("name", FAST_RACES)
@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
def test_reduction_keeps_every_race_verdict_and_counterexample(name: str, fixed: bool) -> None:
    race = registered_races()[name]
    reduced, full = both(race.scenario, 1, faults=race.faults, fixed=fixed, **race.params)
    assert_same_verdict(reduced, full)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["volcano_gang_close"])
def test_reduction_keeps_the_two_entry_proof_of_fixed_races(name: str) -> None:
    race = registered_races()[name]
    reduced, full = both(race.scenario, 2, budget=200_000, faults=race.faults, fixed=True, **race.params)
    assert_same_verdict(reduced, full)
    assert reduced.runs * 3 < full.runs * 2, (reduced.runs, full.runs)  # 19,611 against 47,100 (issue 39)


# ------------------------------------------------------------ issue 39: per key, inside a recorded process
def test_per_key_reduction_keeps_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a process that records its memory by key (the garbage collector), two actions of different actors
    that touch no common key commute: the referee skips more, and every verdict and counterexample stays."""
    from examples.rabbitmq_time_travel import scenario as rabbitmq

    race = registered_races()["volcano_gang_close"]
    cases: list[tuple[Any, dict[str, Any]]] = [
        (race.scenario, {"faults": race.faults, **race.params}),
        (rabbitmq, {}),
    ]
    runs: dict[tuple[int, bool], tuple[int, int]] = {}
    for i, (scenario, params) in enumerate(cases):
        for fixed in (False, True):
            reduced, full = both(scenario, 1, fixed=fixed, **params)
            assert_same_verdict(reduced, full)
            with monkeypatch.context() as m:  # the relation before issue 39: across declared processes only
                m.setattr(World, "recorded", lambda self, process: False)
                across = h.explore(scenario, strategy=h.Exhaustive(1), budget=50_000, prove_minimal=False,
                                   fixed=fixed, **params)
            assert_same_verdict(across, full)
            assert reduced.runs <= across.runs, (reduced.runs, across.runs)
            runs[i, fixed] = reduced.runs, across.runs
    reduced_runs, across_runs = runs[0, True]  # the fixed gang-close race: the garbage collector's keys
    assert reduced_runs < across_runs, (reduced_runs, across_runs)  # 178 against 209 when measured


def test_a_recorded_process_commutes_only_what_its_footprints_show_independent() -> None:
    from harness.explore._exhaustive import _Dependence
    from harness.sim import Ident

    async def gc_like(world: World) -> None:
        world.share_memory("gc", recorded=True)
        world.share_memory("ctrl")

    chooser = PlanChooser(footprints=True)
    run_once(gc_like, chooser)
    a, b, c, d = (Ident("gc/informer/Pod", "deliver", "Pod ns/a", 1), Ident("gc/worker-1", "get", None, 1),
                  Ident("gc/worker-2", "get", None, 1), Ident("ctrl/worker-1", "get", None, 1))
    chooser.ran[:] = [a, b, c, d]
    chooser.footprints[:] = [(("gc graph: u-a", True),), (("gc graph: u-b", False),), (("gc graph: u-a", False),),
                             (("mem", True),)]
    chooser.times[:] = [0.0, 0.0, 0.0, 0.0]
    dep = _Dependence(chooser)
    assert chooser.recorded("gc") and not chooser.recorded("ctrl")
    assert not dep(a, b)  # different actors of a recorded process, no common key: independent
    assert dep(a, c)  # one writes what the other reads: dependent
    assert dep(b, Ident("gc/worker-1", "delete", None, 1))  # one actor's own actions stay in program order
    assert dep(d, Ident("ctrl/informer/Pod", "deliver", None, 1))  # an unrecorded process: its memory is one
