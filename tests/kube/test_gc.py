"""Garbage collector: background, foreground and orphan deletion (section 0.7)."""

from __future__ import annotations

from typing import Any

from kube_support import clean, run

from harness.kube import APIServer, GarbageCollector, KubeObject, controller_ref
from harness.sim import World

KINDS = ["Job", "Pod", "PodGroup"]


def gc_scenario(propagation: str, log: list[tuple[str, str]], pod_on_node: bool = False) -> Any:
    async def scenario(world: World) -> None:
        api = APIServer(world)
        gc = GarbageCollector(world, api, KINDS)
        gc.start()
        for kind in KINDS:  # one observer stream over all kinds, in commit order
            api.watch(kind, lambda ev: log.append((ev.type, ev.object.ref)))
        job = await api.create(KubeObject("Job", "ns", "j"))
        spec = {"nodeName": "n1", "terminationGracePeriodSeconds": 5} if pod_on_node else {}
        await api.create(KubeObject("Pod", "ns", "p", owner_references=[controller_ref(job)], spec=spec))
        await api.create(KubeObject("PodGroup", "ns", "pg", owner_references=[controller_ref(job)]))
        await world.sleep(1.0)
        log.clear()
        await api.delete("Job", "ns", "j", propagation=propagation)
        await world.sleep(10.0)
        world.state["left"] = [o.ref for k in KINDS for o in api.peek_all(k)]

    return scenario


def deletes(log: list[tuple[str, str]]) -> list[str]:
    return [ref for typ, ref in log if typ == "DELETED"]


def test_background_gc_deletes_owner_first() -> None:
    log: list[tuple[str, str]] = []
    out = clean(run(gc_scenario("Background", log)))
    assert deletes(log)[0] == "Job ns/j"
    assert sorted(deletes(log)[1:]) == ["Pod ns/p", "PodGroup ns/pg"]
    assert [r for r in out.trace if r.label.startswith("delete Pod")]


def test_background_gc_dependent_order_is_explorable() -> None:
    orders = set()
    for seed in range(40):
        log: list[tuple[str, str]] = []
        clean(run(gc_scenario("Background", log), seed=seed))
        assert deletes(log)[0] == "Job ns/j"
        orders.add(tuple(deletes(log)[1:]))
    # both orders of the dependents' deletes are reachable (lag may also leave runs that end first)
    assert {("Pod ns/p", "PodGroup ns/pg"), ("PodGroup ns/pg", "Pod ns/p")} <= orders


def test_foreground_gc_deletes_owner_last() -> None:
    for seed in [None, *range(10)]:
        log: list[tuple[str, str]] = []
        clean(run(gc_scenario("Foreground", log), seed=seed))
        assert log[0] == ("MODIFIED", "Job ns/j")  # deletionTimestamp + foregroundDeletion
        assert deletes(log)[-1] == "Job ns/j"
        assert sorted(deletes(log)[:-1]) == ["Pod ns/p", "PodGroup ns/pg"]


def test_foreground_gc_waits_for_graceful_pod() -> None:
    log: list[tuple[str, str]] = []
    clean(run(gc_scenario("Foreground", log, pod_on_node=True)))
    assert deletes(log)[-2:] == ["Pod ns/p", "Job ns/j"]


def test_orphan_strips_owner_references() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world)
        gc = GarbageCollector(world, api, KINDS)
        gc.start()
        job = await api.create(KubeObject("Job", "ns", "j"))
        await api.create(KubeObject("Pod", "ns", "p", owner_references=[controller_ref(job)]))
        await world.sleep(1.0)
        await api.delete("Job", "ns", "j", propagation="Orphan")
        await world.sleep(10.0)
        pod = api.peek("Pod", "ns", "p")
        box["pod_refs"] = None if pod is None else pod.owner_references
        box["job"] = api.peek("Job", "ns", "j")

    clean(run(scenario))
    assert box == {"pod_refs": [], "job": None}
