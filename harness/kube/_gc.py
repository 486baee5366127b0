"""The garbage collector: cascading deletion through ownerReferences.

Modelled on ``kubernetes/pkg/controller/garbagecollector/garbagecollector.go``:
the GC keeps its **own graph**, fed by its own informers (so it lags like any
controller), and work queues ``attemptToDelete``/``attemptToOrphan`` served by
``workers`` actors (upstream ``--concurrent-gc-syncs``, default 20; here 2 by
default, which is enough for both orders of two dependents to be explorable;
raise it to make every order of more dependents reachable).

* Background: the apiserver removes the owner at once (its DELETED comes
  first); the GC sees it, and for each dependent checks its owners with a live
  GET (``isDangling``) and sends one DELETE with a uid precondition. Workers
  take dependents concurrently, so the order of the dependents' DELETEs is a
  scheduling decision.
* Foreground: the owner carries ``foregroundDeletion``; the GC deletes its
  dependents and removes the finalizer (the owner's DELETED comes last) once no
  ``blockOwnerDeletion`` dependent is left in its graph.
* Orphan: the GC strips the ownerReference from each dependent (a patch with no
  RV), then removes the ``orphan`` finalizer.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.sim import World

from ._apiserver import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, APIServer
from ._controller import Controller, Result
from ._errors import ApiError, Conflict, NotFound
from ._informer import DeletedFinalStateUnknown, Informer
from ._objects import KubeObject
from ._process import ControllerProcess

_DELETE = "attemptToDelete"
_ORPHAN = "attemptToOrphan"


class GarbageCollector:
    """``GarbageCollector`` over the listed ``kinds`` (owners and dependents alike)."""

    def __init__(
        self,
        world: World,
        api: APIServer,
        kinds: Sequence[str],
        *,
        workers: int = 2,
        name: str = "garbagecollector",
        process: ControllerProcess | None = None,
    ) -> None:
        self._world = world
        self._api = api
        self.name = name
        if "/" not in name:
            world.share_memory(name)  # its informers, graph and workers are one process of their own
        self._nodes: dict[str, KubeObject] = {}  # uid -> latest object seen (insertion ordered)
        self.informers = [
            Informer(world, api, kind, name=f"{name}/informer/{kind}", process=process) for kind in kinds
        ]
        for inf in self.informers:
            inf.add_event_handler(self._on_upsert, lambda _old, new: self._on_upsert(new), self._on_delete)
        # attemptToDeleteItem's errors (a 409, a timeout, a throttled request) are requeued
        # rate-limited, as garbagecollector.go's processAttemptToDeleteWorker does
        self.controller: Controller[tuple[str, str]] = Controller(
            world, name, self._attempt, workers=workers, error_types=(ApiError,), process=process
        )
        self.deletes = 0

    def start(self) -> None:
        """Start the collector's informers (its dependency graph) and its attempt-to-delete workers."""
        for inf in self.informers:
            inf.start()
        self.controller.start()

    # --------------------------------------------------------------- graph
    def _dependents(self, uid: str, blocking_only: bool = False) -> list[KubeObject]:
        return [
            n
            for n in self._nodes.values()
            if any(r.uid == uid and (r.block_owner_deletion or not blocking_only) for r in n.owner_references)
        ]

    def _on_upsert(self, obj: KubeObject) -> None:
        self._nodes[obj.uid] = obj
        if obj.deletion_timestamp is not None:
            if FOREGROUND_FINALIZER in obj.finalizers:
                self.controller.enqueue((_DELETE, obj.uid))
            if ORPHAN_FINALIZER in obj.finalizers:
                self.controller.enqueue((_ORPHAN, obj.uid))
        if any(r.uid not in self._nodes for r in obj.owner_references):
            self.controller.enqueue((_DELETE, obj.uid))  # the owner may be gone: check it live

    def _on_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        gone = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._nodes.pop(gone.uid, None)
        for dep in self._dependents(gone.uid):
            self.controller.enqueue((_DELETE, dep.uid))
        for ref in gone.owner_references:
            owner = self._nodes.get(ref.uid)
            if owner is not None and owner.deletion_timestamp is not None:
                self.controller.enqueue((_DELETE, ref.uid))

    # ------------------------------------------------------------- workers
    async def _attempt(self, item: tuple[str, str]) -> Result | None:
        verb, uid = item
        node = self._nodes.get(uid)
        if node is None:
            return None
        if verb == _ORPHAN:
            await self._orphan(node)
            return None
        if node.deletion_timestamp is not None and FOREGROUND_FINALIZER in node.finalizers:
            await self._foreground(node)
            return None
        if not node.owner_references:
            return None
        solid = False
        for ref in node.owner_references:
            try:
                owner = await self._api.get(ref.kind, node.namespace, ref.name)
            except NotFound:
                continue  # dangling
            if owner.uid != ref.uid:
                continue  # dangling: the name now belongs to a new object
            if owner.deletion_timestamp is not None and FOREGROUND_FINALIZER in owner.finalizers:
                continue  # waiting for dependents' deletion
            solid = True
        if solid or node.deletion_timestamp is not None:
            return None
        world = self._api._world
        if world.noting:
            owners = ", ".join(f"{r.kind} {node.namespace + '/' if node.namespace else ''}{r.name} ({r.uid})"
                               for r in node.owner_references)
            world.note(f"garbage collector deletes {node.ref}: its owner {owners} is gone", kind="gc",
                       keys=(node.ref, *(f"{r.kind} {node.namespace + '/' if node.namespace else ''}{r.name}"
                                         for r in node.owner_references)), uid=node.uid)
        try:
            await self._api.delete(node.kind, node.namespace, node.name, uid=node.uid, propagation="Background")
            self.deletes += 1
        except (NotFound, Conflict):
            pass  # already gone, or the name was reused: not ours to delete
        return None

    async def _foreground(self, owner: KubeObject) -> None:
        blocking = self._dependents(owner.uid, blocking_only=True)
        for dep in self._dependents(owner.uid):
            if dep.deletion_timestamp is None:
                self.controller.enqueue((_DELETE, dep.uid))
        if blocking:
            return
        await self._remove_finalizer(owner, FOREGROUND_FINALIZER)

    async def _orphan(self, owner: KubeObject) -> None:
        for dep in self._dependents(owner.uid):
            refs = [r for r in dep.owner_references if r.uid != owner.uid]
            try:
                await self._api.patch(dep.kind, dep.namespace, dep.name, {"metadata": {"ownerReferences": refs}})
            except NotFound:
                pass
        await self._remove_finalizer(owner, ORPHAN_FINALIZER)

    async def _remove_finalizer(self, owner: KubeObject, finalizer: str) -> None:
        try:
            fresh = await self._api.get(owner.kind, owner.namespace, owner.name)
        except NotFound:
            return
        if fresh.uid != owner.uid or finalizer not in fresh.finalizers:
            return
        rest = [f for f in fresh.finalizers if f != finalizer]
        # RV-checked: a Conflict is retried through the rate-limited queue
        await self._api.patch(
            owner.kind,
            owner.namespace,
            owner.name,
            {"metadata": {"finalizers": rest}},
            resource_version=fresh.resource_version,
        )
