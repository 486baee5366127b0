"""datastax/cass-operator#412 (k8ssandra/cass-operator#118): a stale deletionTimestamp deletes a live datacenter's PVCs.

Upstream (found by Sieve, Sun et al., OSDI 2022): when cass-operator sees its CassandraDatacenter with a
deletionTimestamp, ``ProcessDeletion`` calls ``deletePVCs``, which lists the PVCs with the label
``cassandra.datastax.com/datacenter: <dc name>`` (``listPVCs``, read through the manager's cached client),
deletes each by name, then removes the finalizer with an ``Update``. A user creates ``cdc``, deletes it and
creates it again (new UID, new PVCs, same names and labels). The operator restarts and its informer lists
from a lagging apiserver whose watch cache still shows the old ``cdc`` being deleted: the cleanup deletes
the PVCs found by *name* labels -- the new datacenter's.

Fixed (the issue's proposal, PR datastax/cass-operator#416, k8ssandra/cass-operator#122): label each PVC with
the datacenter's UID, list the PVCs by that UID, and delete each with a UID precondition.

Modelled upstream code (datastax/cass-operator@34e5466, operator/pkg/reconciliation/):
``handler.go`` ``calculateReconciliationActions`` / ``addFinalizer``; ``reconcile_datacenter.go``
``ProcessDeletion`` / ``deletePVCs`` / ``listPVCs``. The StatefulSet and its volumeClaimTemplates are folded
into the operator creating the PVCs itself. Nothing places the timing: the crash, the restart delay and the
revision the lagging cache serves are the search's choices.

Oracle, the upstream symptom: a PVC made for the live datacenter (by UID) is deleted while that datacenter is
not being deleted. "Made for" is a ghost annotation (``MADE_FOR``) that the operator writes but never reads,
so the buggy variant stays label-by-name only (guide, section 5).
"""

from __future__ import annotations

from collections.abc import Callable

import harness as h
from harness.kube import (
    ADDED,
    DELETED,
    AlreadyExists,
    APIServer,
    Controller,
    ControllerProcess,
    Informer,
    KubeObject,
    WatchEvent,
)

NS, NAME, CLUSTER = "default", "cdc", "cluster1"
FINALIZER = "finalizer.cassandra.datastax.com"
DC_LABEL, CLUSTER_LABEL = "cassandra.datastax.com/datacenter", "cassandra.datastax.com/cluster"
DC_UID_LABEL = "cassandra.datastax.com/datacenter-uid"  # PR #122's DatacenterUID label
SIZE = 1  # server pods, one PVC each
MADE_FOR = "model.race-harness/made-for-uid"  # ghost annotation: the datacenter UID the operator acted for


def pvc_name(i: int) -> str:
    """volumeClaimTemplate ``server-data`` of StatefulSet ``<cluster>-<dc>-default-sts``, pod ``i``."""
    return f"server-data-{CLUSTER}-{NAME}-default-sts-{i}"


class CassOperator:
    """One incarnation of cass-operator: the manager's caches (datacenters, PVCs) and one reconcile loop."""

    def __init__(self, world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool) -> None:
        self.api, self.fixed = api, fixed
        self.dcs = Informer(world, api, "CassandraDatacenter", process=process)
        self.pvcs = Informer(world, api, "PersistentVolumeClaim", process=process)  # the cached client's reads
        self.controller: Controller[str] = Controller(world, "cass-operator/reconcile", self.reconcile,
                                                      process=process)
        # For(&CassandraDatacenter{}): EnqueueRequestForObject
        self.dcs.add_event_handler(lambda dc: self.controller.enqueue(dc.key),
                                   lambda _old, dc: self.controller.enqueue(dc.key),
                                   lambda _dc: None)
        process.spawn("cass-operator/manager", self.run, daemon=True)

    async def run(self) -> None:
        """The manager: start the caches, wait for them, then the controller's workers."""
        self.dcs.start()
        self.pvcs.start()
        await self.dcs.wait_for_cache_sync()
        await self.pvcs.wait_for_cache_sync()
        self.controller.start()

    def list_pvcs(self, dc: KubeObject) -> list[KubeObject]:
        """``listPVCs``: by the datacenter's name label (fixed: by its UID label), from the cache."""
        selector = {DC_UID_LABEL: dc.uid} if self.fixed else {DC_LABEL: dc.name}
        return self.pvcs.lister.list(dc.namespace, selector)

    async def reconcile(self, key: str) -> None:
        ns, name = key.split("/")
        dc = self.dcs.lister.try_get(ns, name)
        if dc is None:
            return  # "CassandraDatacenter resource not found. Ignoring since object must be deleted."
        if dc.deletion_timestamp is not None:  # ProcessDeletion
            for pvc in self.list_pvcs(dc):  # deletePVCs: any error is returned (requeued)
                await self.api.delete("PersistentVolumeClaim", ns, pvc.name, uid=pvc.uid if self.fixed else None)
            dc.finalizers = []  # SetFinalizers(nil), then Update: RV-checked
            await self.api.update(dc)
            return
        if not dc.finalizers:  # addFinalizer: Update, then carry on with the updated object
            dc.finalizers = [FINALIZER]
            dc = await self.api.update(dc)
        # ReconcileAllRacks, folded: the StatefulSet controller makes one PVC per pod from the volumeClaimTemplate
        # (level-triggered upstream; here: create, AlreadyExists is fine)
        for i in range(dc.spec.get("size", SIZE)):
            labels = {DC_LABEL: dc.name, CLUSTER_LABEL: CLUSTER}
            if self.fixed:
                labels[DC_UID_LABEL] = dc.uid
            ghost = {MADE_FOR: dc.uid}  # for the oracle only: the operator never reads it
            try:
                await self.api.create(KubeObject("PersistentVolumeClaim", ns, pvc_name(i), labels=labels,
                                                 annotations=ghost))
            except AlreadyExists:
                pass


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create ``cdc``, delete it, create it again: a live datacenter's PVC must never be deleted.

    A PVC is the live datacenter's when the operator made it for that datacenter's UID (the ghost annotation
    ``MADE_FOR``).
    """
    api = APIServer(world, stale_reads=True)
    ControllerProcess(world, "cass-operator", lambda p: CassOperator(world, api, p, fixed=fixed),
                      crash_faults=True).start()

    made_for: dict[str, str] = {}  # PVC uid -> the datacenter uid it is counted for
    lost: list[str] = []

    def on_pvc(ev: WatchEvent) -> None:
        live = api.peek("CassandraDatacenter", NS, NAME)
        if ev.type == ADDED:
            made_for[ev.object.uid] = ev.object.annotations[MADE_FOR]
        elif ev.type == DELETED and live is not None and live.deletion_timestamp is None \
                and made_for.get(ev.object.uid) == live.uid:
            lost.append(f"PVC {ev.object.key} ({ev.object.uid}) of the live CassandraDatacenter {live.key} "
                        f"({live.uid}) was deleted at t={world.now:.3f}")

    api.watch("PersistentVolumeClaim", on_pvc)
    world.invariant(lambda: lost[0] if lost else None, "a live datacenter's PVC is never deleted")
    world.expose("PVC made for datacenter", lambda: dict(made_for))

    async def until(done: Callable[[], bool], what: str, timeout: float = 60.0) -> bool:
        """``kubectl wait --timeout=60s``, polling: False when it times out."""
        for _ in range(int(timeout / 0.1)):
            if done():
                return True
            await world.sleep(0.1, f"user waits until {what}")
        return done()

    first = await api.create(KubeObject("CassandraDatacenter", NS, NAME, spec={"size": SIZE}))
    if not await until(lambda: api.peek("PersistentVolumeClaim", NS, pvc_name(0)) is not None, "the PVCs of cdc exist"):
        return  # the test would fail here; not the race
    await api.delete("CassandraDatacenter", NS, NAME)
    if not await until(lambda: api.peek("CassandraDatacenter", NS, NAME) is None, f"{first.key} is gone"):
        return
    new = await api.create(KubeObject("CassandraDatacenter", NS, NAME, spec={"size": SIZE}))
    await until(lambda: (p := api.peek("PersistentVolumeClaim", NS, pvc_name(0))) is not None
                and made_for.get(p.uid) == new.uid, "the new cdc's PVCs exist")
    await world.sleep(5.0, "user watches the new datacenter")
