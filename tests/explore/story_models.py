"""Small models whose counterexamples the story tests read (marked, so a saved trace of them replays).

* :func:`filtered_relist`: a controller-runtime controller with an event filter
  that drops the Create of an already-admitted Workload ("it was admitted
  before we saw it: someone else handles it"). In the canonical run the
  Workload is created unadmitted and its admission comes as an Update, which
  passes. When the watch drops before the Workload's events are sent, the
  relist after client-go's backoff synthesises one Create of the admitted
  Workload, and the filter drops it: the Workload is never started. The fault
  is the search's choice (``watch_drops=True`` makes one point per event).
* :func:`quiet_delete`: an oracle whose message names no object; the delete
  that breaks it must still be in the story.
* :func:`late_expiry`: an ``eventually`` oracle that breaks because time passed.
* :func:`expectations_ttl`: kubernetes#129795 as a newcomer would model it from
  the docs, with no notes of its own: the ReplicaSet controller's
  ``ControllerExpectations`` expire (``ExpectationsTimeout``, here a short
  ``ttl``) before the informer shows the pod it created; the next sync trusts
  the cache, which has no pod yet, and creates a second one. The story must
  name the decisive read: the sync that found its expectations expired and
  the lister without the pod the apiserver already had.
"""

from __future__ import annotations

import harness as h
from harness.kube import (
    APIServer,
    Controller,
    ControllerExpectations,
    CreateEvent,
    Funcs,
    Informer,
    KubeObject,
    controller_ref,
    watch,
)

NAMESPACE = "perf"


def _admitted(obj: KubeObject) -> bool:
    return bool(obj.status.get("admitted"))


def skip_admitted_creates(e: CreateEvent) -> bool:
    """The filter: a Workload created already admitted is not ours to start."""
    return not _admitted(e.object)


@h.scenario
async def filtered_relist(world: h.World, *, fixed: bool = False) -> None:
    api = APIServer(world, namespaces=(NAMESPACE,))
    workloads = Informer(world, api, "Workload", name="runner/informer/Workload", watch_drops=True)

    async def reconcile(key: str) -> None:
        ns, name = key.split("/")
        wl = workloads.lister.try_get(ns, name)
        if wl is not None and _admitted(wl) and not wl.status.get("running"):
            await api.patch("Workload", ns, name, {"status": {"running": True}}, subresource="status")

    runner = Controller(world, "runner", reconcile)
    watch(workloads, runner.queue, None, *(() if fixed else (Funcs(create_func=skip_admitted_creates),)))
    workloads.start()
    runner.start()
    await workloads.wait_for_cache_sync()
    await api.create(KubeObject("Workload", NAMESPACE, "w1"))
    await api.patch("Workload", NAMESPACE, "w1", {"status": {"admitted": True}}, subresource="status")

    def running() -> bool:
        wl = api.peek("Workload", NAMESPACE, "w1")
        return wl is not None and bool(wl.status.get("running"))

    world.eventually(running, within=30.0, name="an admitted Workload is started within 30 s")


@h.scenario
async def quiet_delete(world: h.World, *, fixed: bool = False) -> None:
    api = APIServer(world, namespaces=(NAMESPACE,))
    for name in ("cs-a", "cs-b", "cs-c"):
        await api.create(KubeObject("ConfigSet", NAMESPACE, name))

    async def janitor() -> None:
        await world.step("janitor wakes")
        if not fixed:
            await api.delete("ConfigSet", NAMESPACE, "cs-a")

    async def auditor() -> None:
        for name in ("cs-x", "cs-y"):
            await api.create(KubeObject("Audit", NAMESPACE, name))

    world.spawn("janitor", janitor)
    world.spawn("auditor", auditor)
    world.at_end(lambda: len(api.peek_all("ConfigSet")) == 3, "the set is complete")


@h.scenario
async def late_expiry(world: h.World, *, fixed: bool = False) -> None:
    api = APIServer(world, namespaces=(NAMESPACE,))
    await api.create(KubeObject("Lease", NAMESPACE, "l1"))
    await world.sleep(0.8)
    world.note("lease holder went quiet", key=f"Lease {NAMESPACE}/l1")

    def renewed() -> bool:
        lease = api.peek("Lease", NAMESPACE, "l1")
        return fixed or (lease is not None and lease.status.get("renewed", False))

    world.eventually(renewed, within=34.2, name="the lease is renewed")


@h.scenario
async def expectations_ttl(world: h.World, *, fixed: bool = False, ttl: float = 1.0) -> None:
    """kubernetes#129795: a ReplicaSet of 1 gets 2 pods when its expectations expire before the pod shows."""
    api = APIServer(world, namespaces=(NAMESPACE,))
    expectations = ControllerExpectations(world, timeout=ttl)
    replica_sets = Informer(world, api, "ReplicaSet", resync_period=1.0)  # the periodic resync requeues the key
    pods = Informer(world, api, "Pod")

    async def sync(key: str) -> None:
        namespace, name = key.split("/")
        rs = replica_sets.lister.try_get(namespace, name)
        if rs is None or not expectations.satisfied_expectations(key):
            return
        if fixed:  # the fix as modelled: what an expired expectation may hide is read live, never from the cache
            owned = [p for p in await api.list("Pod", namespace) if p.controller_owner() is not None]
        else:
            owned = [p for p in pods.lister.list(namespace) if p.controller_owner() is not None]
        diff = rs.spec["replicas"] - len(owned)
        if diff > 0:
            expectations.expect_creations(key, diff)
            for _ in range(diff):
                await api.create(KubeObject("Pod", namespace, "", owner_references=[controller_ref(rs)]),
                                 generate_name=f"{name}-")

    controller = Controller(world, "replicaset-controller", sync)
    replica_sets.add_event_handler(lambda rs: controller.enqueue(rs.key), lambda _o, rs: controller.enqueue(rs.key))
    pods.add_event_handler(lambda pod: expectations.creation_observed(f"{pod.namespace}/web"))
    replica_sets.start()
    pods.start()
    controller.start()
    world.horizon = 6.0
    await api.create(KubeObject("ReplicaSet", NAMESPACE, "web", spec={"replicas": 1}))

    def at_most_one_pod() -> str | None:
        have = [p.name for p in api.peek_all("Pod")]
        return None if len(have) <= 1 else f"ReplicaSet {NAMESPACE}/web wants 1 pod and has {len(have)}: {have}"

    world.invariant(at_most_one_pod, "a ReplicaSet never has more pods than replicas")
