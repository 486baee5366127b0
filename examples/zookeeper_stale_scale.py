"""pravega/zookeeper-operator#314: a stale ZookeeperCluster deletes a live member's PVC and scales the StatefulSet down.

Upstream (found by Sieve, Sun et al., OSDI 2022; issue #314, "Reading stale ZookeeperCluster spec/status can
lead to undesired pod and PVC deletion"): a ZookeeperCluster ``zkc`` with ``replicas: 2`` and
``persistence.reclaimPolicy: Delete`` is scaled down to 1 (``zk-1`` goes; once the status shows 1 ready replica,
``reconcileFinalizers`` -> ``cleanupOrphanPVCs`` deletes ``data-zk-1``, the PVC beyond the replica count) and up
to 2 again (a new ``zk-1`` and ``data-zk-1``). The operator restarts and its ZookeeperCluster informer lists from
a lagging apiserver whose watch cache still shows ``replicas: 1`` with ``status.readyReplicas: 1``:
``cleanupOrphanPVCs`` finds 2 PVCs > 1 replica and deletes ``data-zk-1`` of the live ``zk-1``, and
``reconcileStatefulSet`` scales the StatefulSet back down to 1.

Modelled upstream code (pravega/zookeeper-operator before b087a7f8,
``pkg/controller/zookeepercluster/zookeepercluster_controller.go``): ``Reconcile`` (``reconcileFinalizers``,
``reconcileStatefulSet`` / ``updateStatefulSet``, ``reconcileClusterStatus``, ``RequeueAfter: 30s``),
``cleanupOrphanPVCs`` / ``getPVCList`` (by the labels ``app`` and ``uid``) / ``IsPVCOrphan``; ``add``: the
ZookeeperCluster watched with ``EnqueueRequestForObject``, its StatefulSet with ``EnqueueRequestForOwner``.
The config map, services, PDB and the zookeeper znode writes are left out (the race does not need them).

Fixed, as upstream did (PR #326, with its addenda #355 and #359, ``compareResourceVersion``): the StatefulSet
carries the label ``owner-rv``, the resourceVersion of the ZookeeperCluster it was last written from; a
reconcile whose ZookeeperCluster is older than the StatefulSet's ``owner-rv`` returns an error ("Staleness")
before updating the StatefulSet, and a newer one stamps its own resourceVersion on the StatefulSet.
Upstream's check sits in ``reconcileStatefulSet`` only, and ``reconcileFinalizers`` runs *before* it, so the
issue's other half (the PVC deletion) is left open by the merged fix: ``guard_pvcs=True`` (the default) also
applies the same check before ``cleanupOrphanPVCs``, as the issue names both paths; ``guard_pvcs=False`` is the
fix exactly as merged (``--variant fixed --param guard_pvcs=false --expect violation``).

No timing is placed: the crash, the restart, the revision the lagging watch cache serves, informer lag and the
kubelet's exit are the search's. Oracle, the upstream symptom: a PVC in use by a live, not-terminating member
pod the user asked for (ordinal < the user's replicas) is deleted, or the StatefulSet is scaled below the
replicas the user set.

Simplifications: a pod is ready while it is not terminating (no readiness probe); the operator lists PVCs with a
quorum LIST (upstream reads them through the manager's cache); a deleted PVC goes at once (no pvc-protection
finalizer: the oracle counts the delete request). The issue's own path, as a hand-written plan
(``h.run_plan(scenario, entries)``; the crash is the second ``patch StatefulSet``, the scale-up, in the buggy
variant and the fourth in the fixed one, which also writes ``owner-rv``)::

    [{"fault": ["zookeeper-operator/reconcile/worker-1",
                "zookeeper-operator crashes before response patch StatefulSet default/zk", null, 2]},
     {"fault": ["zookeeper-operator/informer/ZookeeperCluster", "zookeeper-operator/informer/ZookeeperCluster lists
                from a lagging watch cache at the revision of MODIFIED default/zk #5", "ZookeeperCluster", 1]}]

``#5`` (``replicas: 1, readyReplicas: 1``) deletes the new ``data-zk-1``; ``#4`` (``replicas: 1, readyReplicas:
2``) scales the StatefulSet 2 -> 1. The default search's canonical minimum is another two-fault plan: the crash
comes during the scale-down, the restarted LIST is served before ``zkc`` existed, and when the frozen view catches
up its replay of the old revisions (``replicas: 2``, then ``replicas: 1, readyReplicas: 1``) scales up and then
deletes the new ``data-zk-1``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import harness as h
from harness.kube import (
    DELETED,
    MODIFIED,
    AlreadyExists,
    APIServer,
    Controller,
    ControllerProcess,
    EnqueueRequestForOwner,
    Informer,
    Kubelet,
    KubeObject,
    NotFound,
    Result,
    WatchEvent,
    controller_ref,
    watch,
)

NS, ZK = "default", "zk"
FINALIZER = "cleanUpZookeeperPVC"
OWNER_RV = "owner-rv"
#: how far behind the partitioned apiserver's watch cache may be (the issue: apiserver2's cache stops while
#: ``zkc`` has ``replicas: 1``; Sieve's HA setup). With the default 2 s, the restart after the scale-up reaches
#: the ``replicas: 1, readyReplicas: 1`` revision only at the window's very edge (it was written 2 s before the
#: scale-up in the canonical run), and the ``replicas: 1, readyReplicas: 2`` one (the StatefulSet path) not at
#: all (``--param stale_window=2`` is still found, by other paths than the issue's).
STALE_WINDOW = 30.0
GRACE = 30
RECLAIMED = 1.0  # SIGTERM to the kubelet's final DELETE, nominally (any time up to GRACE)
RECONCILE_TIME = 30.0


def ordinal(name: str) -> int:
    return int(name.rpartition("-")[2])


def claims_of(pod: KubeObject) -> set[str]:
    return {v["persistentVolumeClaim"]["claimName"] for v in pod.spec.get("volumes", [])}


def zookeeper_operator(world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool,
                       guard_pvcs: bool) -> None:
    """``ReconcileZookeeperCluster`` (v0.2.9), before (fixed=False) and after PR #326/#355/#359."""
    zks = Informer(world, api, "ZookeeperCluster", name="zookeeper-operator/informer/ZookeeperCluster",
                   process=process)
    sets = Informer(world, api, "StatefulSet", name="zookeeper-operator/informer/StatefulSet", process=process)

    def stale(zk: KubeObject) -> str | None:
        """``compareResourceVersion`` < 0: the ZookeeperCluster is older than the StatefulSet's owner-rv."""
        sts = sets.lister.try_get(NS, ZK)
        if sts is None or OWNER_RV not in sts.labels:
            return None
        if int(zk.resource_version) < int(sts.labels[OWNER_RV]):
            return f"Staleness: cr.ResourceVersion {zk.resource_version} is smaller than labeledRV {sts.labels[OWNER_RV]}"
        return None

    async def cleanup_orphan_pvcs(zk: KubeObject) -> bool:
        """False: refused as stale (the fix, ``guard_pvcs``); the reconcile returns the error."""
        # this check should make sure we do not delete the PVCs before the STS has scaled down
        if zk.status.get("readyReplicas", 0) != zk.spec["replicas"]:
            return True
        if fixed and guard_pvcs and (why := stale(zk)) is not None:
            if world.noting:
                world.note(f"cleanupOrphanPVCs: {why}", key=zk.ref)
            return False
        pvcs = await api.list("PersistentVolumeClaim", NS, selector={"app": ZK, "uid": zk.uid})
        if len(pvcs) <= zk.spec["replicas"]:
            return True  # nothing orphaned: the reconcile goes on
        for pvc in pvcs:
            if ordinal(pvc.name) >= zk.spec["replicas"]:  # utils.IsPVCOrphan
                if world.noting:
                    world.note(f"cleanupOrphanPVCs: Deleting PVC {pvc.name} ({len(pvcs)} PVCs, "
                               f"replicas {zk.spec['replicas']}, readyReplicas {zk.status.get('readyReplicas')})",
                               key=pvc.ref)
                try:
                    await api.delete("PersistentVolumeClaim", NS, pvc.name)
                except NotFound:
                    pass  # r.deletePVC logs the error and goes on
        return True

    async def reconcile(key: str) -> Result:
        zk = zks.lister.try_get(NS, key.split("/")[1])
        if zk is None:
            return Result()
        status = dict(zk.status)
        # reconcileFinalizers
        if zk.deletion_timestamp is None:
            if FINALIZER not in zk.finalizers:
                zk = await api.patch("ZookeeperCluster", NS, ZK, {"metadata": {"finalizers": [FINALIZER]}},
                                     resource_version=zk.resource_version)
            if not await cleanup_orphan_pvcs(zk):
                return Result(requeue=True)  # return err: controller-runtime requeues rate-limited
        # reconcileStatefulSet
        sts = sets.lister.try_get(NS, ZK)
        if sts is None:
            labels = {"app": ZK, **({OWNER_RV: str(zk.resource_version)} if fixed else {})}
            try:
                await api.create(KubeObject("StatefulSet", NS, ZK, labels=labels,
                                            spec={"replicas": zk.spec["replicas"], "uid": zk.uid},
                                            owner_references=[controller_ref(zk)]))
            except AlreadyExists:
                pass
            return Result(requeue_after=RECONCILE_TIME)
        patch: dict[str, object] = {}
        if fixed:
            if (why := stale(zk)) is not None:
                if world.noting:
                    world.note(f"reconcileStatefulSet: {why}", key=zk.ref)
                return Result(requeue=True)  # return err: controller-runtime requeues rate-limited
            if OWNER_RV not in sts.labels or int(zk.resource_version) > int(sts.labels[OWNER_RV]):
                patch["metadata"] = {"labels": {OWNER_RV: str(zk.resource_version)}}
        if sts.spec["replicas"] != zk.spec["replicas"]:
            if world.noting:
                world.note(f"Updating StatefulSet {sts.key}: replicas {sts.spec['replicas']} -> {zk.spec['replicas']}",
                           key=sts.ref)
            patch["spec"] = {"replicas": zk.spec["replicas"]}
        if patch:  # updateStatefulSet: r.client.Update(foundSts), the cached object's resourceVersion
            await api.patch("StatefulSet", NS, ZK, patch, resource_version=sts.resource_version)
        status["replicas"] = sts.status.get("replicas", 0)
        status["readyReplicas"] = sts.status.get("readyReplicas", 0)
        # reconcileClusterStatus: r.client.Status().Update(instance)
        if status != zk.status:
            await api.patch("ZookeeperCluster", NS, ZK, {"status": status}, subresource="status",
                            resource_version=zk.resource_version)
        return Result(requeue_after=RECONCILE_TIME)

    controller: Controller[str] = Controller(world, "zookeeper-operator/reconcile", reconcile, process=process)
    watch(zks, controller.queue)
    watch(sets, controller.queue, EnqueueRequestForOwner("ZookeeperCluster", only_controller=True))
    zks.start()
    sets.start()

    async def run() -> None:  # the manager starts the workers once every cache has synced
        await zks.wait_for_cache_sync()
        await sets.wait_for_cache_sync()
        controller.start()

    process.spawn("zookeeper-operator/manager", run)


def statefulset_controller(world: h.World, api: APIServer) -> None:
    """``StatefulSetController``: claims before pods, highest ordinal deleted first, status after the sync."""
    sets = Informer(world, api, "StatefulSet", name="statefulset-controller/informer/StatefulSet")
    pods = Informer(world, api, "Pod", name="statefulset-controller/informer/Pod")

    async def sync(key: str) -> None:
        sts = sets.lister.try_get(NS, key.split("/")[1])
        if sts is None:
            return
        mine = sorted((p for p in pods.lister.list(NS, {"app": ZK}) if p.controller_owner() is not None),
                      key=lambda p: ordinal(p.name))
        live = sum(p.deletion_timestamp is None for p in mine)
        status = {"observedGeneration": sts.generation, "replicas": len(mine), "readyReplicas": live}
        replicas = sts.spec["replicas"]
        have = {p.name for p in mine}
        for i in range(replicas):
            name = f"{ZK}-{i}"
            if name in have:
                continue
            claim = f"data-{name}"  # volumeClaimTemplates: labels app and uid (zk.MakeStatefulSet)
            try:
                await api.create(KubeObject("PersistentVolumeClaim", NS, claim,
                                            labels={"app": ZK, "uid": sts.spec["uid"]}))
            except AlreadyExists:
                pass
            volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
            try:
                await api.create(KubeObject("Pod", NS, name, labels={"app": ZK},
                                            owner_references=[controller_ref(sts)],
                                            spec={"nodeName": "node-1", "terminationGracePeriodSeconds": GRACE,
                                                  "volumes": volumes}))
            except AlreadyExists:
                pass
        condemned = [p for p in mine if ordinal(p.name) >= replicas]
        if condemned and not any(p.deletion_timestamp is not None for p in condemned):
            try:
                await api.delete("Pod", NS, condemned[-1].name)
            except NotFound:
                pass
        if {k: sts.status.get(k) for k in status} != status:
            await api.patch("StatefulSet", NS, ZK, {"status": status}, subresource="status")

    controller: Controller[str] = Controller(world, "statefulset-controller", sync)
    watch(sets, controller.queue)
    watch(pods, controller.queue, EnqueueRequestForOwner("StatefulSet", only_controller=True))
    sets.start()
    pods.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, guard_pvcs: bool = True,
                   stale_window: float = STALE_WINDOW) -> None:
    """Scale zkc 2 -> 1 -> 2: no live member's PVC is deleted, the StatefulSet never goes below the user's replicas."""
    for process in ("zookeeper-operator", "statefulset-controller", "kubelet"):
        world.share_memory(process)
    api = APIServer(world, stale_reads=True, stale_window=stale_window)
    ControllerProcess(world, "zookeeper-operator",
                      lambda p: zookeeper_operator(world, api, p, fixed=fixed, guard_pvcs=guard_pvcs),
                      crash_faults=True).start()
    statefulset_controller(world, api)
    Kubelet(world, api, exits_after=RECLAIMED).start()

    lost: list[str] = []

    def wanted() -> int:
        zk = api.peek("ZookeeperCluster", NS, ZK)
        return zk.spec["replicas"] if zk is not None else 0

    def on_pvc(ev: WatchEvent) -> None:
        if ev.type != DELETED and ev.object.deletion_timestamp is None:
            return
        for pod in api.peek_all("Pod"):
            if ev.object.name in claims_of(pod) and pod.deletion_timestamp is None and ordinal(pod.name) < wanted():
                lost.append(f"PVC {ev.object.key} ({ev.object.uid}) was deleted at t={world.now:.3f} while member "
                            f"pod {pod.key} ({pod.uid}), live and not terminating, uses it (user's replicas: "
                            f"{wanted()})")
                return

    sts_replicas: dict[str, int] = {}

    def on_sts(ev: WatchEvent) -> None:
        before, after = sts_replicas.get(ev.object.key), ev.object.spec["replicas"]
        sts_replicas[ev.object.key] = after
        if ev.type == MODIFIED and before is not None and after < before and after < wanted():
            lost.append(f"StatefulSet {ev.object.key} was scaled {before} -> {after} at t={world.now:.3f} while the "
                        f"user's ZookeeperCluster asks for {wanted()} replicas")

    api.watch("PersistentVolumeClaim", on_pvc)
    api.watch("StatefulSet", on_sts)
    world.invariant(lambda: not lost or lost[0],
                    "no live member's PVC is deleted and the StatefulSet is never scaled below the user's replicas")

    async def until(done: Callable[[], bool], what: str) -> bool:  # kubectl wait --timeout=180s, polling
        with world.move_on_after(180):
            while not done():
                await world.sleep(1.0, f"user waits until {what}")
            return True
        return False

    def pod(name: str) -> KubeObject | None:
        return api.peek("Pod", NS, name)

    # The operator requeues every 30 s for ever (RequeueAfter: ReconcileTime): the run ends 10 s after the user's last
    # step, whether the user saw the cluster through or gave up waiting.
    try:
        await user(api, until, pod)
    finally:
        world.horizon = world.now + 10.0


async def user(api: APIServer, until: Callable[[Callable[[], bool], str], Awaitable[bool]],
               pod: Callable[[str], KubeObject | None]) -> None:
    """The issue's steps: replicas 2, scale down to 1 and wait until stable, scale up to 2."""
    await api.create(KubeObject("ZookeeperCluster", NS, ZK, spec={"replicas": 2, "reclaimPolicy": "Delete"}))
    if not await until(lambda: len(api.peek_all("Pod")) == 2, "both zookeeper pods exist"):
        return
    old = pod(f"{ZK}-1")
    await api.patch("ZookeeperCluster", NS, ZK, {"spec": {"replicas": 1}})
    # "After getting stable": zk-1 is gone and the operator has deleted its orphan PVC
    if not await until(lambda: pod(f"{ZK}-1") is None and api.peek("PersistentVolumeClaim", NS, f"data-{ZK}-1") is None,
                       f"{ZK}-1 and data-{ZK}-1 are gone"):
        return
    await api.patch("ZookeeperCluster", NS, ZK, {"spec": {"replicas": 2}})
    await until(lambda: (p := pod(f"{ZK}-1")) is not None and old is not None and p.uid != old.uid,
                f"a new {ZK}-1 exists")
