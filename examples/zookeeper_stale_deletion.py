"""pravega/zookeeper-operator#312: a restarted operator reads a stale deletionTimestamp and deletes the new cluster's PVC.

Upstream (found by Sieve, Sun et al., OSDI 2022; issue #312, "PVC can be mistakenly deleted when reading from
stale apiserver"): a ZookeeperCluster ``zk`` with ``persistence.reclaimPolicy: Delete`` carries the finalizer
``cleanUpZookeeperPVC``. The user deletes it (``reconcileFinalizers`` -> ``cleanUpAllPVCs`` deletes its PVCs, then
the finalizer is removed) and creates it again under the same name (another UID; its StatefulSet makes a new
``data-zk-0``). The operator restarts and its ZookeeperCluster informer lists from a lagging apiserver whose watch
cache still shows the *old* ``zk`` with a deletionTimestamp: ``cleanUpAllPVCs`` lists PVCs by the label
``app=zk`` alone (``getPVCList``) and deletes the new cluster's ``data-zk-0``.

Modelled upstream code (pravega/zookeeper-operator at c25d1936^, v0.2.9,
``pkg/controller/zookeepercluster/zookeepercluster_controller.go``): ``Reconcile`` (``reconcileFinalizers``,
``reconcileStatefulSet``'s create, ``RequeueAfter: ReconcileTime`` = 30 s), ``reconcileFinalizers``,
``getPVCList`` (``r.client.List``: the manager's cache, so a PVC informer of the process), ``cleanUpAllPVCs``,
``deletePVC`` (by name, no precondition; an error is logged and ignored); ``add``: ZookeeperCluster with
``EnqueueRequestForObject``, StatefulSet with ``EnqueueRequestForOwner``. ``zk.MakeStatefulSet``'s
volumeClaimTemplate labels (``app``; with the fix also ``uid``). Left out: config map, services, PDB, status, the
zookeeper znode writes, ``cleanupOrphanPVCs`` (the replicas never change here, so it deletes nothing) and pods
(a minimal StatefulSet controller only makes the claims).

Fixed, as upstream (PR #313, c25d1936): the volumeClaimTemplate carries ``uid: <ZookeeperCluster UID>`` and
``getPVCList`` selects on ``app`` *and* ``uid``.

No timing is placed: the crash, the restart, the revision the lagging watch cache serves and every lag are the
search's. Oracle (the upstream symptom): a PVC made for the live, not-deleting ZookeeperCluster is deleted. The
oracle tells the victim by a ghost annotation (``test/made-for``: the UID the claim was made for), which no
controller reads.

``gc=False`` (the default) leaves the garbage collector out and has the user delete the old StatefulSet once the
old cluster is gone (the GC's cascade). With ``gc=True`` the search meets a runaway first: a restarted LIST at a
revision of the *live* old cluster makes the operator re-create the StatefulSet for the old owner's UID, the GC
deletes it at once, its DELETED re-enqueues the key, and this loop runs every ~1 ms of virtual time until the
lagging cache catches up (up to ``stale_window``): more than the harness's 200,000 steps. Upstream would spin the
same way for as long as the apiserver lags; it is not the issue's symptom.
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
    EnqueueRequestForOwner,
    GarbageCollector,
    Informer,
    KubeObject,
    NotFound,
    Result,
    WatchEvent,
    controller_ref,
    watch,
)

NS, ZK = "default", "zk"
FINALIZER = "cleanUpZookeeperPVC"  # utils.ZkFinalizer
GHOST = "test/made-for"  # ghost state for the oracle only
RECONCILE_TIME = 30.0


def zookeeper_operator(world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool) -> None:
    """``ReconcileZookeeperCluster`` (v0.2.9) before (fixed=False) and after PR #313."""
    zks = Informer(world, api, "ZookeeperCluster", name="zookeeper-operator/informer/ZookeeperCluster",
                   process=process)
    sets = Informer(world, api, "StatefulSet", name="zookeeper-operator/informer/StatefulSet", process=process)
    pvcs = Informer(world, api, "PersistentVolumeClaim", name="zookeeper-operator/informer/PersistentVolumeClaim",
                    process=process)

    def get_pvc_list(zk: KubeObject) -> list[KubeObject]:
        selector = {"app": zk.name, "uid": zk.uid} if fixed else {"app": zk.name}
        return pvcs.lister.list(zk.namespace, selector)

    async def reconcile(key: str) -> Result:
        zk = zks.lister.try_get(NS, key.split("/")[1])
        if zk is None:
            return Result()
        # reconcileFinalizers (reclaimPolicy: Delete)
        if zk.deletion_timestamp is None:
            if FINALIZER not in zk.finalizers:
                zk = await api.patch("ZookeeperCluster", NS, zk.name,
                                     {"metadata": {"finalizers": [*zk.finalizers, FINALIZER]}},
                                     resource_version=zk.resource_version)
        else:
            if FINALIZER in zk.finalizers:
                for pvc in get_pvc_list(zk):  # cleanUpAllPVCs
                    if world.noting:
                        world.note(f"Deleting PVC {pvc.name} (for ZookeeperCluster {zk.uid}, deleting)", key=pvc.ref)
                    try:
                        await api.delete("PersistentVolumeClaim", NS, pvc.name)  # deletePVC: by name
                    except NotFound:
                        pass  # "Error deleteing PVC." logged, ignored
                await api.patch("ZookeeperCluster", NS, zk.name,
                                {"metadata": {"finalizers": [f for f in zk.finalizers if f != FINALIZER]}},
                                resource_version=zk.resource_version)  # r.client.Update(instance)
            return Result()
        # reconcileStatefulSet: create when missing (the update path is not needed here)
        if sets.lister.try_get(NS, zk.name) is None:
            template_labels = {"app": zk.name, **({"uid": zk.uid} if fixed else {})}
            try:
                await api.create(KubeObject("StatefulSet", NS, zk.name, labels={"app": zk.name},
                                            spec={"replicas": zk.spec["replicas"],
                                                  "claimLabels": template_labels},
                                            owner_references=[controller_ref(zk)]))
            except AlreadyExists:
                pass
        return Result(requeue_after=RECONCILE_TIME)

    controller: Controller[str] = Controller(world, "zookeeper-operator/reconcile", reconcile, process=process)
    watch(zks, controller.queue)
    watch(sets, controller.queue, EnqueueRequestForOwner("ZookeeperCluster", only_controller=True))
    zks.start()
    sets.start()
    pvcs.start()

    async def run() -> None:  # the manager starts the workers once every cache has synced
        await zks.wait_for_cache_sync()
        await sets.wait_for_cache_sync()
        await pvcs.wait_for_cache_sync()
        controller.start()

    process.spawn("zookeeper-operator/manager", run)


def statefulset_controller(world: h.World, api: APIServer) -> None:
    """The StatefulSet controller's part here: one claim per ordinal from the volumeClaimTemplate (never deleted)."""
    sets = Informer(world, api, "StatefulSet", name="statefulset-controller/informer/StatefulSet")

    async def sync(key: str) -> None:
        sts = sets.lister.try_get(NS, key.split("/")[1])
        if sts is None or sts.deletion_timestamp is not None:
            return
        owner = sts.controller_owner()
        for i in range(sts.spec["replicas"]):
            try:
                await api.create(KubeObject("PersistentVolumeClaim", NS, f"data-{sts.name}-{i}",
                                            labels=dict(sts.spec["claimLabels"]),
                                            annotations={GHOST: owner.uid if owner else ""}))
            except AlreadyExists:
                pass

    controller: Controller[str] = Controller(world, "statefulset-controller", sync)
    watch(sets, controller.queue)
    sets.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, stale_window: float = 2.0, gc: bool = False) -> None:
    """Create zk, delete it, create it again: the new cluster's PVC must never be deleted while it lives."""
    for process in ("zookeeper-operator", "statefulset-controller", "garbagecollector"):
        world.share_memory(process)
    api = APIServer(world, stale_reads=True, stale_window=stale_window)
    ControllerProcess(world, "zookeeper-operator", lambda p: zookeeper_operator(world, api, p, fixed=fixed),
                      crash_faults=True).start()
    statefulset_controller(world, api)
    if gc:  # see the module docstring: with the GC, a stale view of the live old cluster is a hot create/delete loop
        GarbageCollector(world, api, kinds=["ZookeeperCluster", "StatefulSet"]).start()

    lost: list[str] = []

    def on_pvc(ev: WatchEvent) -> None:
        live = api.peek("ZookeeperCluster", NS, ZK)
        if ev.type == DELETED and live is not None and live.deletion_timestamp is None \
                and ev.object.annotations.get(GHOST) == live.uid:
            lost.append(f"PVC {ev.object.key} of the live ZookeeperCluster {live.key} ({live.uid}) was deleted "
                        f"at t={world.now:.3f}")

    api.watch("PersistentVolumeClaim", on_pvc)
    world.invariant(lambda: not lost or lost[0], "a live ZookeeperCluster's PVC is never deleted")

    async def until(done: Callable[[], bool], what: str) -> bool:  # kubectl wait --timeout=60s, polling
        with world.move_on_after(60):
            while not done():
                await world.sleep(0.5, f"user waits until {what}")
            return True
        return False

    def cluster() -> KubeObject:
        return KubeObject("ZookeeperCluster", NS, ZK, spec={"replicas": 1, "reclaimPolicy": "Delete"})

    try:
        await api.create(cluster())
        if not await until(lambda: api.peek("PersistentVolumeClaim", NS, f"data-{ZK}-0") is not None,
                           "the PVC exists"):
            return
        await api.delete("ZookeeperCluster", NS, ZK)
        if not gc:  # the GC's cascade, done by the user: the old StatefulSet goes once its owner has gone
            if not await until(lambda: api.peek("ZookeeperCluster", NS, ZK) is None, "the cluster is gone"):
                return
            await api.delete("StatefulSet", NS, ZK)
        if not await until(lambda: api.peek("ZookeeperCluster", NS, ZK) is None
                           and api.peek("StatefulSet", NS, ZK) is None
                           and api.peek("PersistentVolumeClaim", NS, f"data-{ZK}-0") is None,
                           "the cluster, its StatefulSet and its PVC are gone"):
            return
        await api.create(cluster())
        await until(lambda: api.peek("PersistentVolumeClaim", NS, f"data-{ZK}-0") is not None, "the new PVC exists")
    finally:  # the operator requeues every 30 s: end the run 10 s after the user's last step
        world.horizon = world.now + 10.0
