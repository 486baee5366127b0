"""rabbitmq/cluster-operator#648: after a restart, a stale view makes the operator delete a live StatefulSet.

Upstream (found by Sieve, Sun et al., OSDI 2022, "time travel"): the operator's
``prepareForDeletion`` deletes the StatefulSet ``<cluster>-server`` **by name** when it
sees its RabbitmqCluster with a deletionTimestamp, then removes its finalizer. A
user deletes the cluster and creates it again under the same name. The operator
restarts and lists from an apiserver whose watch cache is stuck at the moment the
old cluster was being deleted; it acts on that past, and deletes the StatefulSet
the new cluster's operator run just created. The issue proposes the fix modelled
as ``fixed=True``: check that the StatefulSet belongs to the cluster being deleted
(its owner's UID) and delete it with a UID precondition.

Nothing places the timing: the crash point, the restart delay (within the
process's window) and the revision the lagging cache serves (each older revision
is a fault point of its own) are the search's choices. Oracle, the upstream
symptom: a StatefulSet of a RabbitmqCluster that is not being deleted is deleted.
"""

from __future__ import annotations

from collections.abc import Callable

import harness as h
from harness.kube import (
    DELETED,
    AlreadyExists,
    APIServer,
    Controller,
    ControllerProcess,
    GarbageCollector,
    Informer,
    KubeObject,
    NotFound,
    WatchEvent,
    controller_ref,
)

NS, NAME, FINALIZER = "default", "rmq", "deletion.rabbitmq.com"
STS = f"{NAME}-server"


class Operator:
    """One incarnation of the operator: a RabbitmqCluster informer and one reconcile loop."""

    def __init__(self, world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool) -> None:
        self.api, self.fixed = api, fixed
        self.clusters = Informer(world, api, "RabbitmqCluster", process=process)
        # Owns(&appsv1.StatefulSet{}); a watch event takes a few milliseconds, so a create the GC undoes at once
        # (a stale owner) loops in time, not at one instant
        self.statefulsets = Informer(world, api, "StatefulSet", latency=0.005, process=process)
        self.controller: Controller[str] = Controller(world, "operator/reconcile", self.reconcile, process=process)
        self.clusters.add_event_handler(lambda c: self.controller.enqueue(c.key),
                                        lambda _o, c: self.controller.enqueue(c.key))
        self.statefulsets.add_event_handler(None, None, lambda _s: self.controller.enqueue(f"{NS}/{NAME}"))
        self.clusters.start()
        self.statefulsets.start()
        self.controller.start()

    async def reconcile(self, key: str) -> None:
        cluster = self.clusters.lister.try_get(NS, key.split("/")[1])
        if cluster is None:
            return
        if cluster.deletion_timestamp is not None:  # prepareForDeletion
            if self.fixed:  # #648: only our own StatefulSet, and only if it is still that one
                try:
                    sts = await self.api.get("StatefulSet", NS, STS)
                    if (ref := sts.controller_owner()) is not None and ref.uid == cluster.uid:
                        await self.api.delete("StatefulSet", NS, STS, uid=sts.uid)
                except NotFound:
                    pass
            else:
                try:
                    await self.api.delete("StatefulSet", NS, STS)  # by name: whatever has the name now
                except NotFound:
                    pass
            await self.api.patch("RabbitmqCluster", NS, NAME, {"metadata": {"finalizers": []}},
                                 resource_version=cluster.resource_version)
            return
        if FINALIZER not in cluster.finalizers:
            await self.api.patch("RabbitmqCluster", NS, NAME, {"metadata": {"finalizers": [FINALIZER]}},
                                 resource_version=cluster.resource_version)
            return  # the update event brings the cluster back
        try:
            await self.api.create(KubeObject("StatefulSet", NS, STS, owner_references=[controller_ref(cluster)]))
        except AlreadyExists:
            pass  # nothing to do; any other error is returned, and the key requeued with backoff
        await self.api.patch("RabbitmqCluster", NS, NAME, {"status": {"ready": True}}, subresource="status")


def owned_by(sts: KubeObject | None, cluster: KubeObject | None) -> bool:
    ref = sts.controller_owner() if sts is not None else None
    return ref is not None and cluster is not None and ref.uid == cluster.uid


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create ``rmq``, delete it, create it again; its StatefulSet must never be deleted while it lives."""
    api = APIServer(world, stale_reads=True)
    ControllerProcess(world, "operator", lambda p: Operator(world, api, p, fixed=fixed), crash_faults=True).start()
    GarbageCollector(world, api, ["RabbitmqCluster", "StatefulSet"]).start()  # the old StatefulSet goes with its owner
    wrongly_deleted: list[str] = []

    def on_statefulset(ev: WatchEvent) -> None:
        live = api.peek("RabbitmqCluster", NS, NAME)
        if ev.type == DELETED and live is not None and live.deletion_timestamp is None and owned_by(ev.object, live):
            wrongly_deleted.append(f"StatefulSet {ev.object.key} of the live RabbitmqCluster {live.key} "
                                   f"({live.uid}) was deleted at t={world.now:.3f}")

    api.watch("StatefulSet", on_statefulset)
    world.invariant(lambda: not wrongly_deleted or wrongly_deleted[0],
                    "the StatefulSet of a live RabbitmqCluster is never deleted")

    async def until(done: Callable[[], bool], what: str) -> None:  # kubectl wait, polling
        while not done():
            await world.sleep(0.1, f"user waits until {what}")

    await api.create(KubeObject("RabbitmqCluster", NS, NAME))
    await until(lambda: api.peek("StatefulSet", NS, STS) is not None, f"StatefulSet {STS} exists")
    await api.delete("RabbitmqCluster", NS, NAME)
    await until(lambda: api.peek("RabbitmqCluster", NS, NAME) is None, f"RabbitmqCluster {NAME} is gone")
    new = await api.create(KubeObject("RabbitmqCluster", NS, NAME))
    await until(lambda: owned_by(api.peek("StatefulSet", NS, STS), new), "the new cluster's StatefulSet exists")
