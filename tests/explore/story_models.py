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
"""

from __future__ import annotations

import harness as h
from harness.kube import APIServer, Controller, CreateEvent, Funcs, Informer, KubeObject, watch

NAMESPACE = "perf"


def _admitted(obj: KubeObject) -> bool:
    return bool(obj.status.get("admitted"))


def skip_admitted_creates(e: CreateEvent) -> bool:
    """The filter: a Workload created already admitted is not ours to start."""
    return not _admitted(e.object)


@h.scenario
async def filtered_relist(world: h.World, *, fixed: bool = False) -> None:
    api = APIServer(world)
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
    api = APIServer(world)
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
    api = APIServer(world)
    await api.create(KubeObject("Lease", NAMESPACE, "l1"))
    await world.sleep(0.8)
    world.note("lease holder went quiet", key=f"Lease {NAMESPACE}/l1")

    def renewed() -> bool:
        lease = api.peek("Lease", NAMESPACE, "l1")
        return fixed or (lease is not None and lease.status.get("renewed", False))

    world.eventually(renewed, within=34.2, name="the lease is renewed")
