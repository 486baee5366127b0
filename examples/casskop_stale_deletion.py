"""Orange-OpenSource/casskop#316: a stale deletionTimestamp makes casskop delete a live cluster's PVCs.

Upstream (found by Sieve, Sun et al., OSDI 2022): a CassandraCluster ``cc`` with ``deletePVC: true`` carries the
``kubernetes.io/pvc-to-delete`` finalizer (``updateDeletePvcStrategy``). When ``ReconcileRack`` sees the cluster
with a deletionTimestamp, it calls ``DeletePVCs(cc, dcName, rackName)`` for every datacenter and rack of the
topology; ``DeletePVCs`` lists PVCs through the manager's cached client by ``LabelsForCassandraDCRack`` (app,
cluster *name*, dc *name*, rack *name*) and deletes each (errors only logged). The user deletes ``cc`` and
creates it again (new UID, same names, same labels). casskop restarts, its CassandraCluster cache is listed from
a lagging apiserver that still shows the old ``cc`` being deleted, and the cleanup deletes the PVCs of the new
cluster.

Fixed (the issue's proposal): label each PVC with the CassandraCluster's UID when it is made, and list by it.
That alone leaves a residual (3 faults, not found by the default 1,000-run search;
``tests/examples/test_casskop_stale_deletion.py`` plays it):
when the restarted PVC cache lags too, it still lists the *old* cluster's PVC (old-UID label) under the name the
new cluster's PVC now has, and the delete by name removes the new one. ``precondition=True`` adds a UID
precondition to the delete (as cass-operator's fix for the same bug, #412, does), which closes it.

Modelled upstream code (casskop ``pkg/controller/cassandracluster``): ``cassandracluster_controller.go``
``Reconcile`` (Get, SetDefaults + ``updateDeletePvcStrategy`` + Update on the first pass, ``RequeueAfter: 5s``),
``reconcile.go`` ``ReconcileRack`` (``InitCassandraRackinStatus``, the ``DeletionTimestamp != nil &&
Spec.DeletePVC`` branch), ``pod_operation.go`` ``DeletePVCs``, ``pvc.go`` ``ListPVC``/``deletePVC``. Folded: the
StatefulSet of each dc-rack is the operator creating its pod and PVC directly; the finalizer is removed with an
Update once every rack was cleaned. Nothing places the timing: the crash, the restart delay and the revision the
lagging cache serves are the search's choices.

Oracle, the upstream symptom: a PVC made for the live cluster (by UID) is deleted while that cluster is not
being deleted. "Made for" is a ghost annotation (``MADE_FOR``) the operator writes and never reads.
"""

from __future__ import annotations

from collections.abc import Callable

import harness as h
from harness.kube import (
    ADDED,
    DELETED,
    AlreadyExists,
    ApiError,
    APIServer,
    Controller,
    ControllerProcess,
    GarbageCollector,
    Informer,
    KubeObject,
    Result,
    WatchEvent,
    controller_ref,
)

NS, NAME = "default", "cc"
FINALIZER = "kubernetes.io/pvc-to-delete"
TOPOLOGY = {"dc1": ["rack1"], "dc2": ["rack1"]}  # spec.topology: datacenters and their racks, 1 node per rack
DC_LABEL, RACK_LABEL = "cassandraclusters.db.orange.com.dc", "cassandraclusters.db.orange.com.rack"
UID_LABEL = "cassandraclusters.db.orange.com.uid"  # the proposed fix
MADE_FOR = "model.race-harness/made-for-uid"  # ghost annotation: the cluster UID the operator acted for


def dc_rack_labels(cc: KubeObject, dc: str, rack: str) -> dict[str, str]:
    """``k8s.LabelsForCassandraDCRack``: by names only."""
    return {"app": "cassandracluster", "cassandracluster": cc.name, DC_LABEL: dc, RACK_LABEL: rack}


def pvc_name(dc: str, rack: str) -> str:
    """volumeClaimTemplate ``data`` of StatefulSet ``<cc>-<dc>-<rack>``, pod 0."""
    return f"data-{NAME}-{dc}-{rack}-0"


def cluster(deletion_pvc: bool = True) -> KubeObject:
    return KubeObject("CassandraCluster", NS, NAME,
                      spec={"deletePVC": deletion_pvc, "topology": {dc: list(r) for dc, r in TOPOLOGY.items()}})


class Casskop:
    """One incarnation of casskop: the manager's caches (clusters, PVCs) and the cassandracluster controller."""

    def __init__(self, world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool,
                 precondition: bool) -> None:
        self.api, self.fixed, self.precondition = api, fixed, precondition
        self.clusters = Informer(world, api, "CassandraCluster", name="casskop/informer/CassandraCluster",
                                 process=process)
        # the cached client's PVC reads (ListPVC): controller-runtime starts an informer for the kind
        self.pvcs = Informer(world, api, "PersistentVolumeClaim", name="casskop/informer/PersistentVolumeClaim",
                             process=process)
        self.controller: Controller[str] = Controller(world, "casskop/reconcile", self.reconcile, process=process)
        # c.Watch(&source.Kind{Type: &api.CassandraCluster{}}, &handler.EnqueueRequestForObject{})
        self.clusters.add_event_handler(lambda cc: self.controller.enqueue(cc.key),
                                        lambda _old, cc: self.controller.enqueue(cc.key),
                                        lambda _cc: None)
        process.spawn("casskop/manager", self.run, daemon=True)

    async def run(self) -> None:
        self.clusters.start()
        self.pvcs.start()
        await self.clusters.wait_for_cache_sync()
        await self.pvcs.wait_for_cache_sync()
        self.controller.start()

    async def delete_pvcs(self, cc: KubeObject, dc: str, rack: str) -> None:
        """``DeletePVCs``: list by dc-rack labels (fixed: and the cluster's UID), delete each; errors are logged."""
        selector = dc_rack_labels(cc, dc, rack)
        if self.fixed:
            selector[UID_LABEL] = cc.uid
        for pvc in self.pvcs.lister.list(cc.namespace, selector):
            try:
                await self.api.delete("PersistentVolumeClaim", pvc.namespace, pvc.name,  # client.Delete(pvc)
                                      uid=pvc.uid if self.fixed and self.precondition else None)
            except ApiError:
                pass  # "Error Deleting PVC[...], Please make manual Actions.."

    async def reconcile(self, key: str) -> Result:
        ns, name = key.split("/")
        cc = self.clusters.lister.try_get(ns, name)
        if cc is None:
            return Result()  # not found: forget
        if not cc.status.get("phase"):  # SetDefaults + updateDeletePvcStrategy + InitCassandraRackinStatus
            if cc.spec.get("deletePVC") and not cc.finalizers:
                cc.finalizers = [FINALIZER]
                cc = await self.api.update(cc)  # RV-checked: a conflict is returned (requeued)
            cc.status = {"phase": "Initializing", "racks": [f"{dc}-{r}" for dc, rs in TOPOLOGY.items() for r in rs]}
            await self.api.update_status(cc)
            return Result(requeue=True)
        for dc, racks in cc.spec["topology"].items():  # ReconcileRack
            for rack in racks:
                if f"{dc}-{rack}" not in cc.status.get("racks", []):
                    continue
                if cc.deletion_timestamp is not None and cc.spec.get("deletePVC"):
                    await self.delete_pvcs(cc, dc, rack)
                    continue  # go to next rack
                await self.ensure_rack(cc, dc, rack)
        if cc.deletion_timestamp is not None and cc.spec.get("deletePVC") and FINALIZER in cc.finalizers:
            cc.finalizers = [f for f in cc.finalizers if f != FINALIZER]  # preventClusterDeletion(cc, false)
            await self.api.update(cc)
            return Result()
        return Result(requeue_after=5.0)  # requeue5

    async def ensure_rack(self, cc: KubeObject, dc: str, rack: str) -> None:
        """The rack's StatefulSet, folded: its pod 0 and the PVC of its volumeClaimTemplate."""
        labels = dc_rack_labels(cc, dc, rack)
        if self.fixed:
            labels[UID_LABEL] = cc.uid
        try:
            await self.api.create(KubeObject("PersistentVolumeClaim", NS, pvc_name(dc, rack), labels=labels,
                                             annotations={MADE_FOR: cc.uid}))
        except AlreadyExists:
            pass
        try:
            await self.api.create(KubeObject("Pod", NS, f"{NAME}-{dc}-{rack}-0", labels=dict(labels),
                                             owner_references=[controller_ref(cc)]))
        except AlreadyExists:
            pass


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, precondition: bool = False) -> None:
    """Create ``cc`` (deletePVC), delete it, create it again: a live cluster's PVC must never be deleted."""
    api = APIServer(world, stale_reads=True)
    world.share_memory("casskop")
    ControllerProcess(world, "casskop", lambda p: Casskop(world, api, p, fixed=fixed, precondition=precondition),
                      crash_faults=True).start()
    GarbageCollector(world, api, ["CassandraCluster", "Pod"]).start()

    made_for: dict[str, str] = {}  # PVC uid -> the cluster uid it was made for
    lost: list[str] = []

    def on_pvc(ev: WatchEvent) -> None:
        live = api.peek("CassandraCluster", NS, NAME)
        if ev.type == ADDED:
            made_for[ev.object.uid] = ev.object.annotations[MADE_FOR]
        elif ev.type == DELETED and live is not None and live.deletion_timestamp is None \
                and made_for.get(ev.object.uid) == live.uid:
            lost.append(f"PVC {ev.object.key} ({ev.object.uid}) of the live CassandraCluster {live.key} "
                        f"({live.uid}) was deleted at t={world.now:.3f}")

    api.watch("PersistentVolumeClaim", on_pvc)
    world.invariant(lambda: lost[0] if lost else None, "a live CassandraCluster's PVC is never deleted")
    world.expose("PVC made for cluster", lambda: dict(made_for))

    async def until(done: Callable[[], bool], what: str, timeout: float = 60.0) -> bool:
        """``kubectl wait --timeout=60s``, polling: False when it times out."""
        for _ in range(int(timeout / 0.5)):
            if done():
                return True
            await world.sleep(0.5, f"user waits until {what}")
        return done()

    def pvcs_made_for(uid: str) -> bool:
        return all((p := api.peek("PersistentVolumeClaim", NS, pvc_name(dc, r))) is not None
                   and made_for.get(p.uid) == uid for dc, rs in TOPOLOGY.items() for r in rs)

    async def user() -> None:
        first = await api.create(cluster())
        if not await until(lambda: pvcs_made_for(first.uid), "the PVCs of cc exist"):
            return
        await api.delete("CassandraCluster", NS, NAME)
        if not await until(lambda: api.peek("CassandraCluster", NS, NAME) is None, f"{first.key} is gone"):
            return
        new = await api.create(cluster())
        await until(lambda: pvcs_made_for(new.uid), "the new cc's PVCs exist")
        await world.sleep(5.0, "user watches the new cluster")

    try:
        await user()
    finally:  # casskop requeues every 5 s: the run ends 10 s after the user's last step
        world.horizon = world.now + 10.0
