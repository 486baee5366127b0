"""rabbitmq/cluster-operator#653 (found by Sieve, OSDI 2022): deleteSts and updatePVC after a stale read.

Upstream (``controllers/reconcile_persistence.go`` of the 2021 operator, as the issue and Sieve describe it; the
function names are upstream's, the bodies written from the issue, not checked line by line): before
``CreateOrUpdate`` of the StatefulSet, ``reconcilePVC`` asks ``needsPVCResize``: the capacity of the *current*
StatefulSet's volumeClaimTemplate (read from the manager's cache) against the *desired* one built from the
RabbitmqCluster's ``persistence.storage``;
when they differ (``currentCapacity.Cmp(desiredCapacity) != 0``), ``expandPVC`` deletes the StatefulSet
(``deleteSts``: orphan propagation, then waits until the cache no longer shows it, 3 s between checks), sets
every PVC's request to the desired capacity (``updatePVC``), and the reconcile goes on to re-create the
StatefulSet with the new template.

The issue: a cluster with 10Gi is resized to 15Gi; the operator does the above. The operator restarts and
lists RabbitmqClusters from a lagging apiserver (an HA replica stuck at the view before the resize): desired
10Gi != current 15Gi, so it deletes the StatefulSet again and tries to shrink the PVCs. Fix proposed in the
issue (``fixed=True``): resize only when desired > current (a PVC only grows).

Nothing places the timing: the crash point, the restart delay and the revision the lagging cache serves are
the search's choices. ``stale_window`` is raised to 10 s: the issue's apiserver is stuck at the view before the
resize, and the operator's own resize takes at least one 3 s wait of ``deleteSts``, so the stale view lies
more than the default 2 s back. Pods are left out (deleteSts orphans them; nothing here reads them); the
StatefulSet controller is modelled only as far as it makes the PVCs of a volumeClaimTemplate.

Where the operator reads the *current* StatefulSet is a parameter. Upstream reads it through the manager's
cached client; with a cache, its restarted StatefulSet informer may itself list from the lagging apiserver, and the
search finds a second path to the same symptom that the issue's fix does not close: the StatefulSet cache frozen
at the *old* StatefulSet (10Gi), a fresh RabbitmqCluster (15Gi), desired > current, and ``deleteSts`` deletes the
re-created 15Gi StatefulSet by name (``stale_sts=True``: found in both variants by the default search, seed 0,
its stale-state member, at run 107). By default (``stale_sts=False``)
the operator reads StatefulSets with a quorum GET (controller-runtime's ``ClientDisableCacheFor``), which leaves
the issue's own race alone: the RabbitmqCluster view is the only one that can travel back.

Oracle, the upstream symptom: a StatefulSet is deleted only while the user's RabbitmqCluster (on the apiserver)
asks for more storage than the StatefulSet's volumeClaimTemplate has (a real expansion), and no PVC's request
ever shrinks.
"""

from __future__ import annotations

from collections.abc import Callable

import harness as h
from harness.kube import (
    DELETED,
    MODIFIED,
    AlreadyExists,
    ApiError,
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

NS, NAME = "default", "rmq"
STS = f"{NAME}-server"
REPLICAS = 1


class RetryError(Exception):
    """An error retryWithInterval returns (reconcile returns it, and the key is requeued with backoff)."""


def pvc_name(i: int) -> str:
    return f"persistence-{STS}-{i}"  # rmq.PVCName(i): <volumeClaimTemplate>-<statefulset>-<ordinal>


def storage_of(sts: KubeObject) -> int:
    """persistenceStorageCapacity(sts.Spec.VolumeClaimTemplates), in Gi."""
    return int(sts.spec["volumeClaimTemplates"][0]["storage"])


class Operator:
    """One incarnation of the cluster-operator: RabbitmqCluster and StatefulSet informers, one reconcile loop."""

    def __init__(self, world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool,
                 stale_sts: bool) -> None:
        self.world, self.api, self.fixed, self.stale_sts = world, api, fixed, stale_sts
        self.clusters = Informer(world, api, "RabbitmqCluster", name="operator/informer/RabbitmqCluster",
                                 process=process)
        self.statefulsets = Informer(world, api, "StatefulSet", name="operator/informer/StatefulSet",
                                     process=process)  # Owns(&appsv1.StatefulSet{})
        self.controller: Controller[str] = Controller(world, "operator/reconcile", self.reconcile, process=process,
                                                      error_types=(ApiError, RetryError))
        self.clusters.add_event_handler(lambda c: self.controller.enqueue(c.key),
                                        lambda _o, c: self.controller.enqueue(c.key))

        def owner(_sts: object) -> None:  # Owns(&appsv1.StatefulSet{}): the owner's key
            self.controller.enqueue(f"{NS}/{NAME}")

        self.statefulsets.add_event_handler(owner, lambda _o, s: owner(s), owner)
        self.clusters.start()
        self.statefulsets.start()
        self.controller.start()

    async def current_sts(self) -> KubeObject | None:
        """r.statefulSet(ctx, rmq): a Get through the manager's client.

        Upstream's client reads the cache (``stale_sts=True``); ``stale_sts=False`` is the client with the cache
        disabled for StatefulSets (controller-runtime's ``ClientDisableCacheFor``): a quorum GET."""
        if self.stale_sts:
            return self.statefulsets.lister.try_get(NS, STS)
        try:
            return await self.api.get("StatefulSet", NS, STS)
        except NotFound:
            return None

    async def reconcile(self, key: str) -> None:
        cluster = self.clusters.lister.try_get(NS, key.split("/")[1])
        if cluster is None or cluster.deletion_timestamp is not None:
            return
        desired = int(cluster.spec["persistence"]["storage"])
        desired_sts = KubeObject("StatefulSet", NS, STS, owner_references=[controller_ref(cluster)],
                                 spec={"replicas": REPLICAS, "volumeClaimTemplates": [{"storage": desired}]})
        # reconcilePVC
        if await self.needs_pvc_resize(desired_sts):
            await self.expand_pvc(desired_sts)
        # controllerutil.CreateOrUpdate: the volumeClaimTemplates are immutable, so an existing one is kept
        if await self.current_sts() is None:
            try:
                await self.api.create(desired_sts)
            except AlreadyExists:
                pass

    async def needs_pvc_resize(self, desired_sts: KubeObject) -> bool:
        current = await self.current_sts()
        if current is None:
            return False
        cur, want = storage_of(current), storage_of(desired_sts)
        if self.fixed:  # the fix: a PVC only grows
            return want > cur
        return cur != want  # currentCapacity.Cmp(desiredCapacity) != 0

    async def expand_pvc(self, desired_sts: KubeObject) -> None:
        current = await self.current_sts()
        if current is None:
            return
        want = storage_of(desired_sts)
        self.world.note(f"updating storage capacity from {storage_of(current)}Gi to {want}Gi", key=f"{NS}/{NAME}")
        await self.delete_sts()
        await self.update_pvc(current.spec["replicas"], want)

    async def delete_sts(self) -> None:
        current = await self.current_sts()
        if current is None:
            return
        try:
            await self.api.delete("StatefulSet", NS, current.name, propagation="Orphan")
        except NotFound:
            pass
        # retryWithInterval(logger, "delete statefulSet", 10, 3*time.Second, ...): until the read shows it gone
        for _ in range(10):
            if await self.current_sts() is None:
                return
            await self.world.sleep(3.0, "deleteSts: wait until the cache no longer shows the StatefulSet")
        raise RetryError("failed to delete statefulSet after 10 retries")  # returned: the key is requeued

    async def update_pvc(self, replicas: int, want: int) -> None:
        for i in range(replicas):
            pvc = await self.api.get("PersistentVolumeClaim", NS, pvc_name(i))
            pvc.spec["storage"] = want
            await self.api.update(pvc)


def statefulset_controller(world: h.World, api: APIServer) -> None:
    """kube-controller-manager's StatefulSet controller, as far as PVCs go: it creates missing claims from the
    template and never resizes an existing one."""
    sets = Informer(world, api, "StatefulSet", name="sts-controller/informer/StatefulSet")

    async def sync(key: str) -> None:
        sts = sets.lister.try_get(*key.split("/"))
        if sts is None:
            return
        for i in range(sts.spec["replicas"]):
            try:
                await api.create(KubeObject("PersistentVolumeClaim", NS, pvc_name(i),
                                            spec={"storage": storage_of(sts)}))
            except AlreadyExists:
                pass

    controller: Controller[str] = Controller(world, "sts-controller", sync)
    sets.add_event_handler(lambda s: controller.enqueue(s.key), lambda _o, s: controller.enqueue(s.key))
    sets.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, stale_sts: bool = False) -> None:
    """Create ``rmq`` with 10Gi, wait for its PVC, resize it to 15Gi; the StatefulSet must be deleted only for a
    real expansion, and no PVC may be asked to shrink. ``stale_sts``: the operator reads the current StatefulSet
    from its cache (upstream) instead of a quorum GET: a sibling path the issue's fix leaves open."""
    world.share_memory("operator")
    world.share_memory("sts-controller")
    api = APIServer(world, stale_reads=True, stale_window=10.0)  # an HA replica stuck before the resize (see above)
    ControllerProcess(world, "operator", lambda p: Operator(world, api, p, fixed=fixed, stale_sts=stale_sts),
                      crash_faults=True).start()
    statefulset_controller(world, api)
    # the orphan finalizer of deleteSts's DeletePropagationOrphan is the garbage collector's to remove
    GarbageCollector(world, api, ["RabbitmqCluster", "StatefulSet", "PersistentVolumeClaim"]).start()
    wrong: list[str] = []

    def pvc_storage() -> list[int]:
        return [int(p.spec["storage"]) for p in api.peek_all("PersistentVolumeClaim")]

    judged: set[str] = set()  # StatefulSet UIDs whose deletion was already judged

    def on_statefulset(ev: WatchEvent) -> None:
        sts = ev.object
        if sts.uid in judged or (ev.type != DELETED and sts.deletion_timestamp is None):
            return
        judged.add(sts.uid)  # judged at its deletion mark (deleteSts orphans: the GC deletes it later)
        live = api.peek("RabbitmqCluster", NS, NAME)
        asked = int(live.spec["persistence"]["storage"]) if live is not None else None
        if asked is None or asked <= storage_of(sts):
            wrong.append(f"StatefulSet {sts.key} ({sts.uid}, volumeClaimTemplate {storage_of(sts)}Gi) deleted at "
                         f"t={world.now:.3f} while the user asks for {asked}Gi: no larger volume was asked for")

    last_request: dict[str, int] = {}  # the test's own record of each PVC's last request, from the watch

    def on_pvc(ev: WatchEvent) -> None:
        now, before = int(ev.object.spec["storage"]), last_request.get(ev.object.key)
        if ev.type == MODIFIED and before is not None and now < before:
            wrong.append(f"PVC {ev.object.key} asked to shrink from {before}Gi to {now}Gi at t={world.now:.3f}")
        last_request[ev.object.key] = now

    api.watch("StatefulSet", on_statefulset)
    api.watch("PersistentVolumeClaim", on_pvc)
    world.invariant(lambda: not wrong or wrong[0],
                    "the StatefulSet is deleted only for a larger volume, and no PVC is asked to shrink")

    async def until(done: Callable[[], bool], what: str) -> None:  # kubectl wait, polling, bounded
        with world.move_on_after(60):
            while not done():
                await world.sleep(0.1, f"user waits until {what}")

    def pvcs_have(gi: int) -> bool:
        have = pvc_storage()
        return len(have) == REPLICAS and all(s == gi for s in have)

    await api.create(KubeObject("RabbitmqCluster", NS, NAME, spec={"persistence": {"storage": 10}}))
    await until(lambda: pvcs_have(10), "the PVCs have 10Gi")
    await api.patch("RabbitmqCluster", NS, NAME, {"spec": {"persistence": {"storage": 15}}})
    await until(lambda: pvcs_have(15) and (s := api.peek("StatefulSet", NS, STS)) is not None
                and storage_of(s) == 15, "the PVCs have 15Gi and the StatefulSet is back")
    await world.sleep(10.0, "user watches the resized cluster")
