"""instaclustr/cassandra-operator#398: the operator never sees a pod terminating, and its PVC leaks.

Upstream (found by Sieve, Sun et al., OSDI 2022, "unobserved state"; issue #398, "Reconcile() fails to
delete the corresponding pvc if missing deletionTimestamp of Cassandra pod"): with ``deletePVCs: true``,
``finalizeDeletedPods`` (``pkg/controller/cassandradatacenter/finalizers.go``) deletes the PVC of every
pod that ``AllDeletedPods`` (``helpers.go``) finds in the informer cache with a deletionTimestamp. A user
scales the datacenter from 2 nodes to 1; the StatefulSet controller deletes ``ca-1`` gracefully and the
kubelet removes it once its containers have exited. If the operator's cache never shows ``ca-1``
terminating -- its deletion mark and its removal both came while the operator was not looking -- no
reconcile ever finds it, and ``data-ca-1`` is left behind for ever. Fixed as PR #399 does it: a finalizer
on every Cassandra pod, removed by the operator only after it deleted the pod's PVC, so a terminating pod
stays (and stays visible) until its PVC is gone.

The pieces, each with its upstream semantics:

* the operator (``cassandradatacenter_controller.go`` ``Reconcile``) reconciles on its CassandraDataCenter
  and on its StatefulSet (``EnqueueRequestForOwner``); Pods are read from the cache, never watched. Each
  reconcile runs ``addFinalizer`` (fixed), ``finalizeDeletedPods``, then ``checkClusterHealth`` (a
  StatefulSet whose ``status.replicas`` differs from its spec is "undergoing scaling": requeue after a
  minute) and the scale. Left out: the sidecar's decommission before the scale (it only comes first),
  the pods' Running check and the Cassandra node states (no phase or node state is modelled), and the
  PVC informer (the PVCs are listed from the apiserver).
* the StatefulSet controller (``pkg/controller/statefulset/stateful_set_control.go``
  ``updateStatefulSet``): the status is computed from the pods it sees (a terminating pod counts in
  ``replicas``, not in ``currentReplicas``) and written after the sync; a condemned pod is deleted
  highest ordinal first, and the scale-down waits while one terminates. Claims before pods, as
  ``createPersistentVolumeClaims``.
* the kubelet: a terminating pod's containers exit after SIGTERM, about a second later and at the latest
  at the end of the 30 s grace period (when is the search's choice within that window); it then makes
  the final DELETE (grace 0, UID precondition). A pod that still has finalizers stays until they go.

No timing is placed: the watch drops, their relists, every informer's lag and the kubelet's exit are the
search's. Oracle, the upstream symptom: at the end, no PVC remains whose pod is gone; and the scale-down
ends (a fix that left ``ca-1`` terminating for ever would fail it).

**One entry, not two**, in the referee's eyes. Pods are read, never watched, so the operator looks at
``ca-1`` only when the StatefulSet changes; while ``ca-1`` terminates it changes twice at once (the sync
that marks ``ca-1`` writes ``observedGeneration``, the next one drops it from ``currentReplicas``) and then
only when ``ca-1`` is gone. Either a drop of the operator's pod watch before ``ca-1``'s deletion mark, or
that event delivered 2 s late (its informer's lag window), puts both reconciles before the mark reaches
the cache: the relist (or the late event) then shows ``ca-1`` terminating to nobody. The watch gap need
not cover the delete. The proved canonical minimum is the late event; the unobserved-state member of the
search finds it as the drop. The issue's own story (step 5: the delete arrives before the reconcile
looks) is the same single late view. The kubelet's 3 s is not what makes it one entry: with any exit
time the drop alone suffices (with 1-2 s, a held response or StatefulSet event does too).
"""

from __future__ import annotations

from collections.abc import Callable

import harness as h
from harness.kube import (
    AlreadyExists,
    APIServer,
    Controller,
    EnqueueRequestForOwner,
    Informer,
    Kubelet,
    KubeObject,
    NotFound,
    Result,
    controller_ref,
    watch,
)

NS, CDC, STS = "default", "cdc", "ca"
LABELS = {"cassandra-operator.instaclustr.com/datacenter": CDC}
POD_FINALIZER = "finalizer.pvcs.cassandraoperator.instaclustr.com/v1"  # PR #399's
GRACE = 30  # terminationGracePeriodSeconds: upstream sets none, so the Pod default
#: seconds from SIGTERM to the kubelet's final DELETE, nominally (any time up to GRACE): the containers exit, the
#: PLEG notices within its 1 s relist, and the status manager deletes only once the pod's volumes are unmounted
#: (pkg/kubelet/status/status_manager.go ``canBeDeleted``: ``PodResourcesAreReclaimed``)
RECLAIMED = 3.0


def cassandra_operator(world: h.World, api: APIServer, *, fixed: bool) -> None:
    """``ReconcileCassandraDataCenter`` before (fixed=False) and after PR #399."""
    cdcs = Informer(world, api, "CassandraDataCenter", name="cassandra-operator/informer/CassandraDataCenter")
    sets = Informer(world, api, "StatefulSet", name="cassandra-operator/informer/StatefulSet")
    pods = Informer(world, api, "Pod", name="cassandra-operator/informer/Pod", watch_drops=True)

    async def reconcile(key: str) -> Result:
        cdc = cdcs.lister.try_get(NS, key.split("/")[1])
        if cdc is None:
            return Result()
        mine = pods.lister.list(NS, LABELS)
        if fixed:  # addFinalizer: every Cassandra pod carries the PVC finalizer
            for pod in mine:
                if POD_FINALIZER not in pod.finalizers and pod.deletion_timestamp is None:
                    await api.patch("Pod", NS, pod.name, {"metadata": {"finalizers": [*pod.finalizers, POD_FINALIZER]}},
                                    resource_version=pod.resource_version)
        for pod in (p for p in mine if p.deletion_timestamp is not None):  # finalizeDeletedPods(AllDeletedPods)
            if fixed and POD_FINALIZER not in pod.finalizers:
                continue
            claims = {v["persistentVolumeClaim"]["claimName"] for v in pod.spec["volumes"]}
            for pvc in await api.list("PersistentVolumeClaim", NS, selector=LABELS):
                if pvc.name in claims:
                    if world.noting:
                        world.note(f"Deletion of PVC {pvc.name} (pod {pod.name} is terminating)", key=pvc.ref)
                    try:
                        await api.delete("PersistentVolumeClaim", NS, pvc.name)
                    except NotFound:
                        pass
            if fixed:  # PR #399: the pod may go now
                finalizers = [f for f in pod.finalizers if f != POD_FINALIZER]
                await api.patch("Pod", NS, pod.name, {"metadata": {"finalizers": finalizers}},
                                resource_version=pod.resource_version)
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

    controller: Controller[str] = Controller(world, "cassandra-operator", reconcile)
    watch(cdcs, controller.queue)
    watch(sets, controller.queue, EnqueueRequestForOwner("CassandraDataCenter", only_controller=True))
    for informer in (cdcs, sets, pods):  # the manager's cache: Pods are read from it, not watched
        informer.start()
    controller.start()


def statefulset_controller(world: h.World, api: APIServer) -> None:
    """``StatefulSetController``: one ``sync`` per StatefulSet, woken by it and by its pods."""
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
            for claim in sts.spec["volumeClaimTemplates"]:  # createPersistentVolumeClaims
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
            try:  # the highest ordinal first; the next only once it is gone
                await api.delete("Pod", NS, condemned[-1].name)
            except NotFound:
                pass
        if {k: sts.status.get(k) for k in status} != status:  # updateStatefulSetStatus
            await api.patch("StatefulSet", NS, STS, {"status": status}, subresource="status")

    controller: Controller[str] = Controller(world, "statefulset-controller", sync)
    watch(sets, controller.queue)
    watch(pods, controller.queue, EnqueueRequestForOwner("StatefulSet", only_controller=True))
    sets.start()
    pods.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """A datacenter of 2 nodes scaled down to 1: no PVC may outlive its pod, and the scale-down must end."""
    for process in ("cassandra-operator", "statefulset-controller", "kubelet"):
        world.share_memory(process)
    api = APIServer(world)
    cassandra_operator(world, api, fixed=fixed)
    statefulset_controller(world, api)
    Kubelet(world, api, exits_after=RECLAIMED).start()

    def leaked() -> str | None:
        for pvc in api.peek_all("PersistentVolumeClaim"):
            pod = pvc.name.removeprefix("data-")
            if api.peek("Pod", NS, pod) is None:
                return f"PVC {pvc.name} leaked: its pod {pod} is gone"
        return None

    world.at_end(leaked, "no PVC outlives its pod")
    world.at_end(lambda: api.peek("Pod", NS, f"{STS}-1") is None or f"{STS}-1 never went away",
                 "the scale-down ends")

    async def until(done: Callable[[], bool], what: str) -> None:  # kubectl wait, polling
        while not done():
            await world.sleep(1.0, f"user waits until {what}")

    await api.create(KubeObject("CassandraDataCenter", NS, CDC, spec={"nodes": 2, "deletePVCs": True}))
    await until(lambda: len(api.peek_all("Pod")) == 2, "both Cassandra pods exist")
    await world.sleep(30.0, "user waits while the nodes join the ring")
    await api.patch("CassandraDataCenter", NS, CDC, {"spec": {"nodes": 1}})
    await until(lambda: api.peek("Pod", NS, f"{STS}-1") is None, f"{STS}-1 is gone")
