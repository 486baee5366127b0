"""instaclustr/cassandra-operator#407: after a restart, a stale pod view deletes the PVC of the current pod.

Upstream (found by Sieve, Sun et al., OSDI 2022; issue #407, "Reading stale pod information can lead to
undesired PVC deletion", open): with ``deletePVCs: true`` the operator's ``finalizeDeletedPods`` deletes the
PVC of every pod its cache shows terminating (PR #399's pod finalizer is left out: the race does not need
it). PVCs are listed by the datacenter's labels, and the PVC name (``data-ca-1``) is the same
for every incarnation of pod ``ca-1``. A user scales the datacenter 2 -> 1 (``ca-1`` terminates, its PVC is
deleted) and back 1 -> 2 (a new ``ca-1``, new UID, new ``data-ca-1``). The operator restarts, its pod
informer lists from a lagging apiserver that still shows the old ``ca-1`` terminating, and the operator
deletes the new ``data-ca-1``, in use by the live ``ca-1``.

Fixed (the issue's proposal): every PVC is labelled with the UID of the pod it was made for, and the
operator lists PVCs by that UID. The label is written only after a quorum GET confirms the pod (a stale
view must not stamp an old UID on a new PVC), with the PVC's resourceVersion as precondition.

No timing is placed: the crash, the restart, the stale revision, informer lag and the kubelet's exit are
the search's. Oracle, the upstream symptom: a PVC is never deleted while a live, not-terminating pod uses it.
"""

from __future__ import annotations

from collections.abc import Callable

import harness as h
from harness.kube import (
    DELETED,
    AlreadyExists,
    APIServer,
    Conflict,
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

NS, CDC, STS = "default", "cdc", "ca"
LABELS = {"cassandra-operator.instaclustr.com/datacenter": CDC}
POD_UID = "cassandra-operator.instaclustr.com/pod-uid"  # the fix's label
#: how far behind a lagging apiserver's watch cache may be (Sieve's HA setup); the default 2 s cannot reach
#: back from the scale-up over the kubelet's nominal 3 s to a revision where the old ca-1 is terminating
STALE_WINDOW = 30.0
#: the user's pause between the end of the scale-down and the scale-up. With 0 (scale up the second ca-1 is
#: gone) the bug needs no restart at all: the operator's Pod informer delivering the old ca-1's DELETED late
#: (inside its 2 s lag window) is one entry, the proved minimum (``--param pause=0``). A pause longer than the
#: informer's lag leaves the issue's own path: restart + a LIST from a lagging apiserver.
PAUSE = 5.0
GRACE = 30
RECLAIMED = 3.0  # SIGTERM to the kubelet's final DELETE, nominally (any time up to GRACE)


def claims_of(pod: KubeObject) -> set[str]:
    return {v["persistentVolumeClaim"]["claimName"] for v in pod.spec.get("volumes", [])}


def cassandra_operator(world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool) -> None:
    """``ReconcileCassandraDataCenter`` (after PR #399), before (fixed=False) and after the proposed fix."""
    cdcs = Informer(world, api, "CassandraDataCenter", name="cassandra-operator/informer/CassandraDataCenter",
                    process=process)
    sets = Informer(world, api, "StatefulSet", name="cassandra-operator/informer/StatefulSet", process=process)
    pods = Informer(world, api, "Pod", name="cassandra-operator/informer/Pod", process=process)

    async def label_pvcs(pod: KubeObject) -> None:
        """Fix: stamp the pod's UID on its PVCs, once a quorum read confirms the pod is the one we saw."""
        for pvc in await api.list("PersistentVolumeClaim", NS, selector=LABELS):
            if pvc.name not in claims_of(pod) or POD_UID in pvc.labels:
                continue
            try:
                live = await api.get("Pod", NS, pod.name)
            except NotFound:
                continue
            if live.uid != pod.uid or live.deletion_timestamp is not None:
                continue
            try:
                await api.patch("PersistentVolumeClaim", NS, pvc.name, {"metadata": {"labels": {POD_UID: pod.uid}}},
                                resource_version=pvc.resource_version)
            except (NotFound, Conflict):
                pass

    async def reconcile(key: str) -> Result:
        cdc = cdcs.lister.try_get(NS, key.split("/")[1])
        if cdc is None:
            return Result()
        mine = pods.lister.list(NS, LABELS)
        if fixed:
            for pod in (p for p in mine if p.deletion_timestamp is None):
                await label_pvcs(pod)
        for pod in (p for p in mine if p.deletion_timestamp is not None):  # finalizeDeletedPods(AllDeletedPods)
            selector = {**LABELS, POD_UID: pod.uid} if fixed else LABELS
            for pvc in await api.list("PersistentVolumeClaim", NS, selector=selector):
                if pvc.name in claims_of(pod):
                    if world.noting:
                        world.note(f"Deletion of PVC {pvc.name} (pod {pod.name} {pod.uid} is terminating)", key=pvc.ref)
                    try:
                        await api.delete("PersistentVolumeClaim", NS, pvc.name)
                    except NotFound:
                        pass
        sts = sets.lister.try_get(NS, STS)
        if sts is None:  # createOrUpdateStatefulSet
            template = {"replicas": cdc.spec["nodes"], "volumeClaimTemplates": ["data"]}
            try:
                await api.create(KubeObject("StatefulSet", NS, STS, labels=dict(LABELS), spec=template,
                                            owner_references=[controller_ref(cdc)]))
            except AlreadyExists:
                pass
            return Result()
        if sts.status.get("replicas", 0) != sts.spec["replicas"]:  # checkClusterHealth: undergoing scaling
            return Result(requeue_after=60.0)
        if sts.spec["replicas"] != cdc.spec["nodes"]:  # scaleStatefulSet
            await api.patch("StatefulSet", NS, STS, {"spec": {"replicas": cdc.spec["nodes"]}},
                            resource_version=sts.resource_version)
        return Result()

    controller: Controller[str] = Controller(world, "cassandra-operator/reconcile", reconcile, process=process)
    watch(cdcs, controller.queue)
    watch(sets, controller.queue, EnqueueRequestForOwner("CassandraDataCenter", only_controller=True))
    for informer in (cdcs, sets, pods):  # Pods are read from the manager's cache, not watched
        informer.start()
    controller.start()


def statefulset_controller(world: h.World, api: APIServer) -> None:
    """``StatefulSetController``: claims before pods, highest ordinal deleted first, status after the sync."""
    sets = Informer(world, api, "StatefulSet", name="statefulset-controller/informer/StatefulSet")
    pods = Informer(world, api, "Pod", name="statefulset-controller/informer/Pod")

    async def sync(key: str) -> None:
        sts = sets.lister.try_get(NS, key.split("/")[1])
        if sts is None:
            return
        mine = sorted((p for p in pods.lister.list(NS, LABELS) if p.controller_owner() is not None),
                      key=lambda p: int(p.name.rpartition("-")[2]))
        status = {"observedGeneration": sts.generation, "replicas": len(mine),
                  "currentReplicas": sum(p.deletion_timestamp is None for p in mine)}
        replicas = sts.spec["replicas"]
        have = {p.name for p in mine}
        for ordinal in range(replicas):
            name = f"{STS}-{ordinal}"
            if name in have:
                continue
            for claim in sts.spec["volumeClaimTemplates"]:
                try:
                    await api.create(KubeObject("PersistentVolumeClaim", NS, f"{claim}-{name}", labels=dict(LABELS)))
                except AlreadyExists:
                    pass
            volumes = [{"name": c, "persistentVolumeClaim": {"claimName": f"{c}-{name}"}}
                       for c in sts.spec["volumeClaimTemplates"]]
            try:
                await api.create(KubeObject("Pod", NS, name, labels=dict(LABELS), owner_references=[controller_ref(sts)],
                                            spec={"nodeName": "node-1", "terminationGracePeriodSeconds": GRACE,
                                                  "volumes": volumes}))
            except AlreadyExists:
                pass
        condemned = [p for p in mine if int(p.name.rpartition("-")[2]) >= replicas]
        if condemned and not any(p.deletion_timestamp is not None for p in condemned):
            try:
                await api.delete("Pod", NS, condemned[-1].name)
            except NotFound:
                pass
        if {k: sts.status.get(k) for k in status} != status:
            await api.patch("StatefulSet", NS, STS, {"status": status}, subresource="status")

    controller: Controller[str] = Controller(world, "statefulset-controller", sync)
    watch(sets, controller.queue)
    watch(pods, controller.queue, EnqueueRequestForOwner("StatefulSet", only_controller=True))
    sets.start()
    pods.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, pause: float = PAUSE) -> None:
    """Scale a 2-node datacenter down to 1 and back to 2: no PVC in use by a live pod may be deleted."""
    for process in ("cassandra-operator", "statefulset-controller", "kubelet"):
        world.share_memory(process)
    api = APIServer(world, stale_reads=True, stale_window=STALE_WINDOW)
    ControllerProcess(world, "cassandra-operator", lambda p: cassandra_operator(world, api, p, fixed=fixed),
                      crash_faults=True).start()
    statefulset_controller(world, api)
    Kubelet(world, api, exits_after=RECLAIMED).start()

    lost: list[str] = []

    def on_pvc(ev: WatchEvent) -> None:
        if ev.type != DELETED:
            return
        for pod in api.peek_all("Pod"):
            if ev.object.name in claims_of(pod) and pod.deletion_timestamp is None:
                lost.append(f"PVC {ev.object.key} ({ev.object.uid}) was deleted at t={world.now:.3f} while pod "
                            f"{pod.key} ({pod.uid}), live and not terminating, uses it")

    api.watch("PersistentVolumeClaim", on_pvc)
    world.invariant(lambda: not lost or lost[0], "a PVC in use by a live, not-terminating pod is never deleted")

    async def until(done: Callable[[], bool], what: str) -> bool:  # kubectl wait --timeout=120s, polling
        with world.move_on_after(120):
            while not done():
                await world.sleep(1.0, f"user waits until {what}")
            return True
        return False

    def pod(name: str) -> KubeObject | None:
        return api.peek("Pod", NS, name)

    await api.create(KubeObject("CassandraDataCenter", NS, CDC, spec={"nodes": 2, "deletePVCs": True}))
    if not await until(lambda: len(api.peek_all("Pod")) == 2, "both Cassandra pods exist"):
        return
    await world.sleep(30.0, "user waits while the nodes join the ring")
    old = pod(f"{STS}-1")
    await api.patch("CassandraDataCenter", NS, CDC, {"spec": {"nodes": 1}})
    if not await until(lambda: pod(f"{STS}-1") is None, f"{STS}-1 is gone"):
        return
    await world.sleep(pause, "user checks the ring after the decommission")
    await api.patch("CassandraDataCenter", NS, CDC, {"spec": {"nodes": 2}})
    await until(lambda: (p := pod(f"{STS}-1")) is not None and old is not None and p.uid != old.uid,
                f"a new {STS}-1 exists")
    await world.sleep(10.0, "user watches the datacenter")
