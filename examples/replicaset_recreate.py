"""kubernetes/kubernetes#69376: a ReplicaSet deleted and re-created with the same name gets no pods.

Upstream (fix PR #82572, "Fix RS expectations for recreate case"; the modelled code is
``pkg/controller/replicaset/replica_set.go`` and ``pkg/controller/controller_utils.go``):

* The ReplicaSet controller keys its work queue *and* its ``ControllerExpectations`` by
  ``namespace/name``. ``syncReplicaSet`` reads the ReplicaSet from the lister; only when the
  lister says NotFound does it delete the expectations of that key.
* ``manageReplicas`` calls ``ExpectCreations(key, diff)`` before creating pods; ``addPod``
  lowers the count (``CreationObserved``) only when the pod's controllerRef resolves, through
  the lister, to a ReplicaSet *with the same UID* (``resolveControllerRef``).
* The issue's flow: the client creates the ReplicaSet, the controller starts creating pods,
  the client deletes it and re-creates it under the same name. The DELETE and the ADD of the
  new one coalesce in the work queue (one key), so the sync sees the new ReplicaSet and never
  takes the NotFound branch. The old pods' ADD events no longer resolve to a ReplicaSet with
  their owner's UID, so nothing lowers the old count: the new ReplicaSet inherits unsatisfied
  expectations and creates nothing until ``ExpectationsTimeout`` (5 minutes) expires them.
* The fix (``fixed=True``): ``deleteRS`` deletes the key's expectations itself, and
  ``updateRS`` treats an update whose UID changed (a delete and a create seen as one update,
  after a relist) as a delete of the old object.

Nothing here places the timing: the user deletes and re-creates at once, and the search
chooses how late each informer event and each API response comes inside its window, and
where a watch drops. Oracle: the re-created ReplicaSet has all its pods within 60 virtual
seconds (upstream waited the 5-minute expectations timeout).
"""

from __future__ import annotations

import harness as h
from harness.kube import (
    ApiError,
    APIServer,
    Controller,
    ControllerExpectations,
    DeletedFinalStateUnknown,
    Informer,
    KubeObject,
    controller_ref,
)

NAMESPACE, NAME, REPLICAS = "default", "web", 2
#: the oracle's bound, well under upstream's 5-minute ``ExpectationsTimeout``
PODS_WITHIN = 60.0


def replica_set(replicas: int = REPLICAS) -> KubeObject:
    return KubeObject("ReplicaSet", NAMESPACE, NAME, labels={"app": NAME}, spec={"replicas": replicas})


def unwrap(obj: KubeObject | DeletedFinalStateUnknown) -> KubeObject:
    """A delete handler's argument may be a tombstone (a delete seen only through a relist)."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class ReplicaSetController:
    """``NewBaseController``: a ReplicaSet informer, a Pod informer, one queue of ``ns/name`` keys."""

    def __init__(self, world: h.World, api: APIServer, *, fixed: bool) -> None:
        self.api = api
        self.fixed = fixed
        self.expectations = ControllerExpectations(world)
        self.replica_sets = Informer(world, api, "ReplicaSet", watch_drops=True)
        self.pods = Informer(world, api, "Pod")
        self.controller: Controller[str] = Controller(world, "replicaset-controller", self.sync_replica_set)
        self.replica_sets.add_event_handler(self.add_rs, self.update_rs, self.delete_rs)
        self.pods.add_event_handler(self.add_pod, None, self.delete_pod)  # no pod updates here
        self.created = 0  # pod names: upstream uses generateName
        world.expose("replicaset-controller expectations", self.show_expectations)

    async def run(self) -> None:
        """``Run``: start the informers, wait for their caches, then start the workers."""
        self.replica_sets.start()
        self.pods.start()
        await self.replica_sets.wait_for_cache_sync()
        await self.pods.wait_for_cache_sync()
        self.controller.start()

    def show_expectations(self) -> dict[str, object]:
        got = self.expectations.get_expectations(f"{NAMESPACE}/{NAME}")
        return {} if got is None else {f"{NAMESPACE}/{NAME}": {"add": got[0], "del": got[1]}}

    # ------------------------------------------------------------------ event handlers
    def add_rs(self, rs: KubeObject) -> None:
        self.controller.enqueue(rs.key)

    def update_rs(self, old: KubeObject, cur: KubeObject) -> None:
        if self.fixed and old.uid != cur.uid:  # PR #82572: a re-create seen as one update
            self.delete_rs(DeletedFinalStateUnknown(old.key, old))
        self.controller.enqueue(cur.key)

    def delete_rs(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        rs = unwrap(obj)
        if self.fixed:  # PR #82572: start clean if a new one comes with the same name
            self.expectations.delete_expectations(rs.key)
        self.controller.enqueue(rs.key)

    def resolve_controller_ref(self, pod: KubeObject) -> KubeObject | None:
        """Look the owner up by name, then check the UID (a same-name successor is not the owner)."""
        ref = pod.controller_owner()
        if ref is None or ref.kind != "ReplicaSet":
            return None
        rs = self.replica_sets.lister.try_get(pod.namespace, ref.name)
        return rs if rs is not None and rs.uid == ref.uid else None

    def add_pod(self, pod: KubeObject) -> None:
        rs = self.resolve_controller_ref(pod)
        if rs is not None:
            self.expectations.creation_observed(rs.key)
            self.controller.enqueue(rs.key)

    def delete_pod(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        rs = self.resolve_controller_ref(unwrap(obj))
        if rs is not None:
            self.expectations.deletion_observed(rs.key)
            self.controller.enqueue(rs.key)

    # ------------------------------------------------------------------ reconcile
    async def sync_replica_set(self, key: str) -> None:
        namespace, name = key.split("/")
        rs = self.replica_sets.lister.try_get(namespace, name)
        if rs is None:
            self.expectations.delete_expectations(key)  # the only cleanup before the fix
            return
        if not self.expectations.satisfied_expectations(key):
            return  # still waiting for the informer to show our own creates
        owned = [p for p in self.pods.lister.list(namespace) if p.deletion_timestamp is None
                 and (ref := p.controller_owner()) is not None and ref.uid == rs.uid]
        diff = rs.spec["replicas"] - len(owned)
        if diff <= 0:
            return
        self.expectations.expect_creations(key, diff)
        for done in range(diff):
            self.created += 1
            pod = KubeObject("Pod", namespace, f"{name}-{self.created}", labels=dict(rs.labels),
                             owner_references=[controller_ref(rs)])
            try:
                await self.api.create(pod)
            except ApiError:
                for _ in range(diff - done):  # slowStartBatch: the failed and the skipped are not expected
                    self.expectations.creation_observed(key)
                raise  # the worker requeues the key rate-limited


def pods_of(api: APIServer, rs: KubeObject) -> list[KubeObject]:
    return [p for p in api.peek_all("Pod") if (ref := p.controller_owner()) is not None and ref.uid == rs.uid]


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create ``default/web``; once its pods show, delete it and create it again; the new one needs pods."""
    api = APIServer(world)
    rsc = ReplicaSetController(world, api, fixed=fixed)
    await rsc.run()
    # The user (an e2e test) watches pods with its own informer, which lags independently of the controller's.
    ready, user_pods = world.Event(), Informer(world, api, "Pod", name="user/informer/Pod")
    user_pods.add_event_handler(lambda _pod: ready.set() if len(user_pods.lister) >= REPLICAS else None)
    user_pods.start()
    await api.create(replica_set())
    await ready.wait(f"user waits until {REPLICAS} pods of {NAMESPACE}/{NAME} show")
    await api.delete("ReplicaSet", NAMESPACE, NAME)
    new = await api.create(replica_set())

    def new_has_its_pods() -> bool | str:
        have = len(pods_of(api, new))
        if have >= REPLICAS:
            return True
        pending = rsc.expectations.get_expectations(new.key)
        return (f"ReplicaSet {new.key} ({new.uid}) has {have} of {REPLICAS} pods; the controller "
                f"still expects (add, del) = {pending} for {new.key} and skips manageReplicas")

    world.eventually(new_has_its_pods, within=PODS_WITHIN,
                     name=f"the re-created ReplicaSet {new.key} has its {REPLICAS} pods within {PODS_WITHIN:g} s")
