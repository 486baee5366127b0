"""K8SPXC-716 as a newcomer would model it: after a restart, a stale view makes the operator delete live PVCs.

Upstream (percona-xtradb-cluster-operator, found by Sieve, Sun et al., OSDI 2022): a cluster with the
``delete-pxc-pvc`` finalizer has its PersistentVolumeClaims deleted when it is deleted. A user deletes the
cluster and creates it again under the same name. The operator restarts, its informer lists from a lagging
watch cache that still shows the old cluster marked for deletion, and the finalizer's cleanup deletes the PVCs
by label -- the new cluster's. Fixed (the upstream fix's idea): delete only PVCs made for this cluster's UID,
with a UID precondition. The crash, the restart and the revision the lagging cache serves are the search's.
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
    Informer,
    KubeObject,
    NotFound,
    WatchEvent,
)

NS, NAME, FINALIZER = "pxc", "cluster1", "delete-pxc-pvc"
PVC = f"datadir-{NAME}-pxc-0"


def operator(world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool) -> None:
    clusters = Informer(world, api, "PerconaXtraDBCluster", process=process)

    async def reconcile(key: str) -> None:
        cr = clusters.lister.try_get(NS, key.split("/")[1])
        if cr is None:
            return
        if cr.deletion_timestamp is not None:  # the delete-pxc-pvc finalizer: PVCs by the cluster's label
            for pvc in await api.list("PersistentVolumeClaim", NS, selector={"app.kubernetes.io/instance": NAME}):
                if fixed and pvc.labels.get("cluster-uid") != cr.uid:
                    continue  # another cluster's PVC under the same name
                try:
                    await api.delete("PersistentVolumeClaim", NS, pvc.name, uid=pvc.uid if fixed else None)
                except NotFound:
                    pass
            await api.patch("PerconaXtraDBCluster", NS, NAME, {"metadata": {"finalizers": []}},
                            resource_version=cr.resource_version)
            return
        if FINALIZER not in cr.finalizers:
            await api.patch("PerconaXtraDBCluster", NS, NAME, {"metadata": {"finalizers": [FINALIZER]}},
                            resource_version=cr.resource_version)
            return
        try:  # the StatefulSet's volumeClaimTemplate, as the PVC it makes
            await api.create(KubeObject("PersistentVolumeClaim", NS, PVC,
                                        labels={"app.kubernetes.io/instance": NAME, "cluster-uid": cr.uid}))
        except AlreadyExists:
            pass

    controller: Controller[str] = Controller(world, "pxc/reconcile", reconcile, process=process)
    clusters.add_event_handler(lambda c: controller.enqueue(c.key), lambda _o, c: controller.enqueue(c.key))
    clusters.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create cluster1, delete it, create it again: the new cluster's PVC must never be deleted while it lives."""
    api = APIServer(world, stale_reads=True, namespaces=(NS,))  # the cluster has the operator's namespace
    ControllerProcess(world, "pxc-operator", lambda p: operator(world, api, p, fixed=fixed), crash_faults=True).start()
    lost: list[str] = []

    def on_pvc(ev: WatchEvent) -> None:
        live = api.peek("PerconaXtraDBCluster", NS, NAME)
        if ev.type == DELETED and live is not None and live.deletion_timestamp is None \
                and ev.object.labels.get("cluster-uid") == live.uid:
            lost.append(f"PVC {ev.object.key} of the live cluster {live.uid} was deleted at t={world.now:.3f}")

    api.watch("PersistentVolumeClaim", on_pvc)
    world.invariant(lambda: not lost or lost[0], "a live cluster's PVC is never deleted")

    async def until(done: Callable[[], bool], what: str) -> None:  # kubectl wait, polling
        while not done():
            await world.sleep(0.1, f"user waits until {what}")

    await api.create(KubeObject("PerconaXtraDBCluster", NS, NAME))
    await until(lambda: api.peek("PersistentVolumeClaim", NS, PVC) is not None, "the PVC exists")
    await api.delete("PerconaXtraDBCluster", NS, NAME)
    await until(lambda: api.peek("PersistentVolumeClaim", NS, PVC) is None, "the PVC is gone")
    await until(lambda: api.peek("PerconaXtraDBCluster", NS, NAME) is None, "the cluster is gone")
    await api.create(KubeObject("PerconaXtraDBCluster", NS, NAME))
    await world.sleep(5.0, "user watches the new cluster")
