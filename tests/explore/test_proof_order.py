"""A minimality proof takes a level of two entries or more by its number of holds, fewest first.

The proof runs every level below the counterexample's whole (that is what
"minimal" means), then looks in the counterexample's own level for the first
failing plan in its order, the plan that stands for the bug. A level's holds
are what make it large (every decision of every run one level down, and each
hold's siblings); its faults are few. A counterexample of a crash and a late
delivery is then met among the plans of one hold, not after every plan of two
holds. ``restart_twice`` is such a bug with a known answer: neither entry alone
fails, and no pair of holds does (no crash, no restart: the expectations cover
the operator's own creations).
"""

from __future__ import annotations

import harness as h
from harness.explore import prove_found
from harness.explore._minimum import ProofOrder
from harness.kube import APIServer, Controller, ControllerProcess, Informer, KubeObject, Result
from harness.sim import PlanChooser, run_once

NS = "ns"


async def restart_twice(world: h.World, *, fixed: bool = False) -> None:
    """An operator makes one Job per Backup and remembers the Jobs it made until its Job informer shows them
    (client-go's ``ControllerExpectations``). Buggy: after a start it gives its Job informer 1 s before its worker
    reconciles; fixed: it waits for the informer's LIST (``WaitForCacheSync``). A restart loses the
    expectations, and a Job informer whose LIST comes later than 1 s shows no Job: a second one is made."""
    api = APIServer(world, namespaces=("ns",))
    await api.create(KubeObject("Backup", NS, "b"))

    def build(proc: ControllerProcess) -> None:
        jobs = Informer(world, api, "Job", name="op/informer/Job", process=proc)
        expected: set[str] = set()

        async def reconcile(key: str) -> Result | None:
            have = jobs.lister.list(NS, {"backup": "b"})
            if have:
                expected.discard(key)
            elif key not in expected:
                expected.add(key)
                await api.create(KubeObject("Job", NS, f"b-{proc.incarnation}", labels={"backup": "b"}))
            backup = await api.get("Backup", NS, "b")
            backup.status["jobs"] = len(have)
            await api.update_status(backup)
            return None

        ctrl: Controller[str] = Controller(world, "op", reconcile, process=proc)
        jobs.add_event_handler(on_add=lambda o: ctrl.enqueue(f"{NS}/b"))
        jobs.start()
        ctrl.start()

        async def first() -> None:
            if fixed:
                await jobs.wait_for_cache_sync()
            else:
                await world.sleep(1.0, "op: give the Job informer a moment")
            ctrl.enqueue(f"{NS}/b")

        proc.spawn("op/start", first)

    ControllerProcess(world, "op", build, crash_faults=True).start()
    world.invariant(lambda: len(api.peek_all("Job")) <= 1 or "a second Job for Backup b", "one Job per Backup")
    await world.sleep(6.0)


def _found() -> h.Counterexample:
    found = h.explore(restart_twice, seed=0, faults="crash", prove_minimal=False)
    assert found.counterexample is not None, found.outcome
    return found.counterexample


def test_crash_and_late_list_is_the_minimum_and_neither_alone_fails() -> None:
    cx = _found()
    assert cx.plan is not None and sorted(type(e).__name__ for e in cx.plan) == ["Fault", "Hold"], cx.plan
    for entry in cx.plan:
        alone = run_once(restart_twice, PlanChooser([entry]), faults=frozenset({"crash"}))
        assert alone.violation is None, (entry, alone.violation)
    again = run_once(restart_twice, PlanChooser(cx.plan), params={"fixed": True}, faults=frozenset({"crash"}))
    assert again.violation is None, again.violation


def test_fewest_holds_first_proves_the_same_minimum_in_fewer_runs() -> None:
    """Both orders prove the same plan minimal (the levels below run whole either way); fewest holds first
    meets it without running the level's pairs of holds first."""
    cx = _found()
    new, new_runs = prove_found(restart_twice, cx)
    old, old_runs = prove_found(restart_twice, cx, order=ProofOrder(fewest_holds_first=False))
    assert new.proved_minimal is True and old.proved_minimal is True, (new.proof, old.proof)
    assert new.plan == old.plan and new.digest() == old.digest()
    assert new_runs < old_runs, (new_runs, old_runs)  # measured: 236 and 409


def test_fixed_restart_operator_is_clean() -> None:
    fixed = h.explore(restart_twice, seed=0, faults="crash", fixed=True, budget=300)
    assert fixed.verdict == "none-found", fixed.outcome
