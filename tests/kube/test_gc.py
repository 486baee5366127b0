"""Garbage collector: background, foreground and orphan deletion (section 0.7)."""

from __future__ import annotations

from typing import Any

from kube_support import LIMITS, clean, run

from harness.kube import APIServer, GarbageCollector, KubeObject, OwnerReference, controller_ref
from harness.sim import ReplayChooser, RunOutcome, World, run_once

KINDS = ["Job", "Pod", "PodGroup"]


def told(scenario: Any) -> RunOutcome:
    """The canonical run with its notes (what the collector said it did)."""
    return clean(run_once(scenario, ReplayChooser([]), limits=LIMITS, notes=True))


async def until_observed(world: World, gc: GarbageCollector, *objects: KubeObject) -> None:
    """Wait until the collector's own informers (its graph) hold ``objects`` at their resourceVersions.

    The graph lags like any cache: a foreground owner whose dependent the GC has not observed yet is released
    before that dependent (upstream has the same window), so a test of the cascade order waits for the graph.
    """
    by_kind = {inf.kind: inf for inf in gc.informers}

    def seen() -> bool:
        for o in objects:
            cached = by_kind[o.kind].lister.try_get(o.namespace, o.name)
            if cached is None or cached.resource_version < o.resource_version:
                return False
        return True

    while not seen():
        await world.sleep(0.1, "user waits for the garbage collector's graph")


def gc_scenario(propagation: str, log: list[tuple[str, str]], pod_on_node: bool = False) -> Any:
    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        gc = GarbageCollector(world, api, KINDS)
        gc.start()
        for kind in KINDS:  # one observer stream over all kinds, in commit order
            api.watch(kind, lambda ev: log.append((ev.type, ev.object.ref)))
        job = await api.create(KubeObject("Job", "ns", "j"))
        spec = {"nodeName": "n1", "terminationGracePeriodSeconds": 5} if pod_on_node else {}
        pod = await api.create(KubeObject("Pod", "ns", "p", owner_references=[controller_ref(job)], spec=spec))
        pg = await api.create(KubeObject("PodGroup", "ns", "pg", owner_references=[controller_ref(job)]))
        await world.sleep(1.0)
        await until_observed(world, gc, job, pod, pg)
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
        api = APIServer(world, namespaces=("ns",))
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


def test_foreground_deletion_cascades_through_grandchildren() -> None:
    """Deployment -> ReplicaSet -> Pod, the Deployment deleted in foreground: Pod, then ReplicaSet, then Deployment.

    Upstream: ``garbagecollector.go`` ``attemptToDeleteItem``: a dependent whose owners are all waiting for
    their dependents' deletion, and which has dependents of its own, is deleted with
    ``DeletePropagationForeground`` ("at least one owner of item has FinalizerDeletingDependents, and the item
    itself has dependents, so it is going to be deleted in Foreground"); ``processDeletingDependentsItem``
    removes ``foregroundDeletion`` only once no blocking dependent is left. So no owner is released while its
    grandchildren exist (the e2e "should delete RS created by deployment when not orphaning" and the
    integration ``TestCascadingDeletion`` rely on it).
    """
    kinds = ["Deployment", "ReplicaSet", "Pod"]
    for seed in [None, *range(12)]:
        log: list[tuple[str, str]] = []
        box: dict[str, Any] = {}

        async def scenario(world: World, log: list[tuple[str, str]] = log, box: dict[str, Any] = box) -> None:
            api = APIServer(world, namespaces=("ns",))
            gc = GarbageCollector(world, api, kinds)
            gc.start()
            for kind in kinds:
                api.watch(kind, lambda ev: log.append((ev.type, ev.object.ref)))
            dep = await api.create(KubeObject("Deployment", "ns", "web"))
            rs = await api.create(KubeObject("ReplicaSet", "ns", "web-1", owner_references=[controller_ref(dep)]))
            pods = [await api.create(KubeObject("Pod", "ns", f"web-1-{i}", owner_references=[controller_ref(rs)]))
                    for i in range(2)]
            await until_observed(world, gc, dep, rs, *pods)
            log.clear()
            await api.delete("Deployment", "ns", "web", propagation="Foreground")
            await world.sleep(30.0)
            box["left"] = [o.ref for k in kinds for o in api.peek_all(k)]

        clean(run(scenario, seed=seed))
        gone = deletes(log)
        assert box["left"] == [], (seed, box)
        assert sorted(gone[:2]) == ["Pod ns/web-1-0", "Pod ns/web-1-1"], (seed, gone)
        assert gone[2:] == ["ReplicaSet ns/web-1", "Deployment ns/web"], (seed, gone)
        # the ReplicaSet was itself deleted in foreground: marked (MODIFIED) before any pod went
        assert log.index(("MODIFIED", "ReplicaSet ns/web-1")) < log.index(("DELETED", gone[0])), (seed, log)
        if seed is None:
            notes = [n.text for n in told(scenario).trace.notes if n.kind == "gc"]
            assert any("deletes ReplicaSet ns/web-1 in foreground" in t for t in notes), notes


def test_orphaning_removes_one_owner_reference_with_precondition() -> None:
    """Orphaning removes the one owner's reference, with the dependent's resourceVersion as a precondition.

    Upstream: ``garbagecollector.go`` ``orphanDependents`` patches each dependent with
    ``GenerateDeleteOwnerRefStrategicMergeBytes`` (built-in kinds: delete the entry by uid) or, for custom
    resources, ``deleteOwnerRefJSONMergePatch`` (``patch.go``): the cached references minus that owner, with
    the cached ``resourceVersion`` as a precondition. Either way a reference another writer adds meanwhile
    survives: a stale patch gets 409 and the owner is requeued (``attemptToOrphanWorker`` -> requeueItem).
    """
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        gc = GarbageCollector(world, api, ["Job", "Widget"])
        gc.start()
        job = await api.create(KubeObject("Job", "ns", "j"))
        other = await api.create(KubeObject("Job", "ns", "k"))
        w = await api.create(KubeObject("Widget", "ns", "w", owner_references=[controller_ref(job)]))
        await until_observed(world, gc, job, other, w)
        patches: list[int] = []
        api.watch("Widget", lambda ev: patches.append(ev.object.resource_version))
        # an adopter adds a second owner at the instant the orphan finalizer is set; the GC's cache has not seen it
        await api.delete("Job", "ns", "j", propagation="Orphan")
        await api.patch("Widget", "ns", "w", {"metadata": {"ownerReferences": [
            controller_ref(job), OwnerReference(other.uid, "Job", "k")]}})
        await world.sleep(30.0)
        widget = api.peek("Widget", "ns", "w")
        box["refs"] = None if widget is None else [r.name for r in widget.owner_references]
        box["job"] = api.peek("Job", "ns", "j")
        box["conflicts"] = api.error_count(409, "patch", "Widget")

    for seed in [None, *range(8)]:
        box.clear()
        clean(run(scenario, seed=seed))
        assert box["refs"] == ["k"], (seed, box)  # the one reference removed, the added one kept
        assert box["job"] is None, (seed, box)
    # canonically the GC reads its cache before the adopter's write reaches it: its patch is refused
    box.clear()
    clean(run(scenario))
    assert box["conflicts"] >= 1


def test_dangling_owner_references_are_removed() -> None:
    """A reference to a gone owner is patched out while another owner remains; with none left, the object goes.

    Upstream: ``garbagecollector.go`` ``attemptToDeleteItem`` classifies references with live GETs
    (``classifyReferences``/``isDangling``): with a solid owner, dangling (and foreground-waiting) references
    are removed by a patch ("remove dangling references and waiting references for item"); with every owner
    absent the item is deleted.
    """
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        gc = GarbageCollector(world, api, ["Job", "Widget"])
        gc.start()
        a = await api.create(KubeObject("Job", "ns", "a"))
        b = await api.create(KubeObject("Job", "ns", "b"))
        shared = await api.create(KubeObject("Widget", "ns", "shared", owner_references=[
            OwnerReference(a.uid, "Job", "a"), OwnerReference(b.uid, "Job", "b")]))
        only_a = await api.create(KubeObject("Widget", "ns", "only-a", owner_references=[
            OwnerReference(a.uid, "Job", "a")]))
        # a reference to an owner that never existed (a uid no object has)
        ghost = await api.create(KubeObject("Widget", "ns", "ghost", owner_references=[
            OwnerReference("uid-9999", "Job", "nobody"), OwnerReference(b.uid, "Job", "b")]))
        await until_observed(world, gc, a, b, shared, only_a, ghost)
        await api.delete("Job", "ns", "a", propagation="Background")
        await world.sleep(30.0)
        box["widgets"] = {w.name: [r.name for r in w.owner_references] for w in api.peek_all("Widget")}

    for seed in [None, *range(8)]:
        box.clear()
        clean(run(scenario, seed=seed))
        assert box["widgets"] == {"shared": ["b"], "ghost": ["b"]}, (seed, box)
    notes = [n.text for n in told(scenario).trace.notes if n.kind == "gc"]
    assert any("removes the ownerReference(s) to Job ns/a" in t and "from Widget ns/shared" in t for t in notes), notes
    assert any("removes the ownerReference(s) to Job ns/nobody" in t for t in notes), notes
    assert any("deletes Widget ns/only-a: its owner Job ns/a" in t for t in notes), notes
