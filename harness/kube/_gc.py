"""The garbage collector: cascading deletion through ownerReferences.

Modelled on ``kubernetes/pkg/controller/garbagecollector/garbagecollector.go``
and ``graph_builder.go``: the GC keeps its **own graph**, fed by its own
informers (so it lags like any controller), and work queues
``attemptToDelete``/``attemptToOrphan`` served by ``workers`` actors (upstream
``--concurrent-gc-syncs``, default 20; here 2 by default, which is enough for
both orders of two dependents to be explorable; raise it to make every order of
more dependents reachable).

``attemptToDeleteItem``, step by step:

* an object being deleted (and not deleting its dependents) is left alone: its
  deletion is a one-way trip, its dependents are handled when it is gone;
* a live GET of the object itself; gone (or its name now holds another uid):
  it leaves the graph (``enqueueVirtualDeleteEvent``) and its dependents are
  attempted;
* each owner reference is classified with a live GET of the owner (skipped for
  owners the ``absentOwnerCache`` knows are gone): *dangling* (absent, or the
  name holds another uid), *waiting* (being deleted in foreground) or *solid*;
* with a solid owner the object stays, and its dangling and waiting
  references are patched out (else a foreground owner would wait for it for
  ever); with only waiting owners, an object that has dependents of its own is
  deleted **in foreground** (so a cascade goes level by level: Pod, then
  ReplicaSet, then Deployment); otherwise it is deleted with the policy its
  own ``orphan``/``foregroundDeletion`` finalizer asks for, else background.
  Deletes carry ``Preconditions{UID, ResourceVersion}`` of the object as read;
  on a 409 whose live object kept its ownerReferences they are sent again with
  the UID alone (``operations.go`` ``deleteObject``).

Foreground: the owner carries ``foregroundDeletion``; its dependents are
attempted, and the finalizer is removed (the owner's DELETED comes last) once
no ``blockOwnerDeletion`` dependent is left in the graph.

Orphan: the ``orphan`` finalizer makes the GC remove the owner's reference from
each dependent, then the finalizer. Removing references (orphaning, dangling or
waiting ones) is the JSON merge patch upstream falls back to for custom
resources (``deleteOwnerRefJSONMergePatch``): the dependent's references as the
GC's cache has them, minus those owners, with the cached resourceVersion as a
precondition, so a reference added meanwhile is never lost: the patch gets 409
and is retried through the rate-limited queue. (Built-in kinds take a strategic
merge patch that deletes the entries by uid with no resourceVersion; here every
kind takes the precondition path, which can only add a retry.)

Not modelled: the cycle breaker that unblocks a dependent's references when it
and its owner both wait for their dependents, virtual nodes for owners never
observed (the dependent is attempted directly, and its owner GET decides), the
``absentOwnerCache`` size bound (500 entries upstream).
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.sim import World

from ._apiserver import APIServer
from ._controller import Controller, Result
from ._errors import ApiError, Conflict, NotFound
from ._informer import Informer
from ._lister import DeletedFinalStateUnknown
from ._objects import KubeObject, OwnerReference
from ._process import ControllerProcess
from ._registry import FOREGROUND_FINALIZER, ORPHAN_FINALIZER

_DELETE = "attemptToDelete"
_ORPHAN = "attemptToOrphan"


def _deleting_dependents(obj: KubeObject) -> bool:
    """``node.isDeletingDependents()``: being deleted with ``foregroundDeletion``."""
    return obj.deletion_timestamp is not None and FOREGROUND_FINALIZER in obj.finalizers


def _orphaning(obj: KubeObject) -> bool:
    return obj.deletion_timestamp is not None and ORPHAN_FINALIZER in obj.finalizers


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
            # its informers, graph and workers are one process of their own, and every access to its graph,
            # caches and queues is recorded by key
            world.share_memory(name, recorded=True)
        self._nodes: dict[str, KubeObject] = {}  # uid -> latest object seen (insertion ordered)
        self._absent: dict[str, None] = {}  # absentOwnerCache: owner uids known to be gone
        self._process = process
        self._started = False
        self.informers: list[Informer] = []
        #: footprint resources: a node of the graph by uid, the graph's set of nodes, the absentOwnerCache
        self._graph = f"{name} graph: "
        self._absent_res = f"{name} absentOwnerCache: "
        for kind in kinds:
            self.collect_kind(kind)
        # attemptToDeleteItem's errors (a 409, a timeout, a throttled request) are requeued
        # rate-limited, as garbagecollector.go's processAttemptToDeleteWorker does
        self.controller: Controller[tuple[str, str]] = Controller(
            world, name, self._attempt, workers=workers, error_types=(ApiError,), process=process
        )
        self.deletes = 0

    def start(self) -> None:
        """Start the collector's informers (its dependency graph) and its attempt-to-delete workers."""
        self._started = True
        for inf in self.informers:
            inf.start()
        self.controller.start()

    def collect_kind(self, kind: str) -> None:
        """Take ``kind`` into the graph (an informer of its own; started at once if the collector runs): a kind
        served only from now on, as a CustomResourceDefinition's (``garbagecollector.go`` ``Sync`` re-reads
        discovery). A kind already collected is left as it is."""
        if any(inf.kind == kind for inf in self.informers):
            return
        inf = Informer(self._world, self._api, kind, name=f"{self.name}/informer/{kind}", process=self._process)
        inf.add_event_handler(self._on_upsert, lambda _old, new: self._on_upsert(new), self._on_delete)
        self.informers.append(inf)
        if self._started:
            inf.start()

    # --------------------------------------------------------------- graph
    def _node(self, uid: str) -> KubeObject | None:
        """A read of the graph's node ``uid`` (a footprint entry when one is recorded)."""
        node = self._nodes.get(uid)
        if self._world._fp is not None:
            self._world.touch(self._graph + uid, said=f"{self.name} graph: " + (
                f"{node.ref} rv={node.resource_version}" if node is not None else f"{uid} absent"))
        return node

    def _set_node(self, uid: str, obj: KubeObject | None, edges: bool) -> None:
        """The footprint of a write of the graph's node ``uid`` (``obj`` None: removed).

        ``edges``: the node joined or left the graph or its ownerReferences
        changed, which is all a scan for dependents (:meth:`_dependents`) reads
        of the graph as a whole; any other change of a node is a write of that
        node alone.
        """
        world = self._world
        world.touch(self._graph + uid, write=True, said=f"{self.name} graph: " + (
            f"{obj.ref} rv={obj.resource_version}" if obj is not None else f"{uid} removed"))
        if edges:
            world.touch(self._graph + "*", write=True)

    def _dependents(self, uid: str, blocking_only: bool = False) -> list[KubeObject]:
        if self._world._fp is not None:  # a scan of every node
            self._world.touch(self._graph + "*", said=f"{self.name} graph: the dependents of {uid}")
        return [
            n
            for n in self._nodes.values()
            if any(r.uid == uid and (r.block_owner_deletion or not blocking_only) for r in n.owner_references)
        ]

    def _on_upsert(self, obj: KubeObject) -> None:
        """``processGraphChanges`` for an add or update."""
        old = self._node(obj.uid)
        self._nodes[obj.uid] = obj
        if self._world._fp is not None:
            self._set_node(obj.uid, obj, old is None or old.owner_references != obj.owner_references)
        if old is not None:
            # addUnblockedOwnersToDeleteQueue: a blocking reference removed (or unblocked) may free an owner
            # that waits for its dependents
            now_blocking = {r.uid for r in obj.owner_references if r.block_owner_deletion}
            for ref in old.owner_references:
                if ref.block_owner_deletion and ref.uid not in now_blocking and self._node(ref.uid) is not None:
                    self.controller.enqueue((_DELETE, ref.uid))
        # processTransitions
        if _orphaning(obj) and (old is None or not _orphaning(old)):
            self.controller.enqueue((_ORPHAN, obj.uid))
        elif _deleting_dependents(obj) and (old is None or not _deleting_dependents(old)):
            for dep in self._dependents(obj.uid):
                self.controller.enqueue((_DELETE, dep.uid))
            self.controller.enqueue((_DELETE, obj.uid))
        known: set[str] = set() if old is None else {r.uid for r in old.owner_references}
        if any(r.uid not in known and self._node(r.uid) is None for r in obj.owner_references):
            # addDependentToOwners: a new reference to an owner the graph has not seen (upstream adds a virtual
            # node for it and attempts that); here the dependent is attempted, and its owner GET decides
            self.controller.enqueue((_DELETE, obj.uid))

    def _on_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        gone = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._forget(gone.uid)

    def _forget(self, uid: str) -> None:
        """``processGraphChanges`` for a delete (observed, or virtual: a live GET found the object gone)."""
        node = self._node(uid)
        if node is None:
            return  # already out of the graph ("this shouldn't happen", upstream logs)
        del self._nodes[uid]
        if self._world._fp is not None:
            self._set_node(uid, None, True)
        dependents = self._dependents(uid)
        if dependents:
            self._absent[uid] = None
            if self._world._fp is not None:
                self._world.touch(self._absent_res + uid, write=True, said=f"{node.ref} ({uid}) is gone")
        for dep in dependents:
            self.controller.enqueue((_DELETE, dep.uid))
        for ref in node.owner_references:
            owner = self._node(ref.uid)
            if owner is not None and _deleting_dependents(owner):
                self.controller.enqueue((_DELETE, ref.uid))  # it may be its owner's last dependent

    # ------------------------------------------------------------- workers
    async def _attempt(self, item: tuple[str, str]) -> Result | None:
        verb, uid = item
        node = self._node(uid)
        if node is None:
            return None
        if verb == _ORPHAN:
            await self._orphan(node)
        else:
            await self._attempt_to_delete(node)
        return None

    async def _attempt_to_delete(self, node: KubeObject) -> None:
        """``attemptToDeleteItem`` (see the module docstring)."""
        if node.deletion_timestamp is not None and not _deleting_dependents(node):
            return
        try:
            latest = await self._api.get(node.kind, node.namespace, node.name)
        except NotFound:
            self._forget(node.uid)
            return
        if latest.uid != node.uid:
            self._forget(node.uid)
            return
        if _deleting_dependents(node):
            await self._process_deleting_dependents(node)
            return
        if not latest.owner_references:
            return
        solid: list[OwnerReference] = []
        dangling: list[OwnerReference] = []
        waiting: list[OwnerReference] = []
        for ref in latest.owner_references:
            owner = await self._owner(node, ref)
            if owner is None:
                dangling.append(ref)
            elif _deleting_dependents(owner):
                waiting.append(ref)
            else:
                solid.append(ref)
        if solid:
            if dangling or waiting:
                self._note(node, f"garbage collector removes the ownerReference(s) to {self._refs(node, *dangling, *waiting)} "
                                 f"from {node.ref}: {'gone' if dangling else 'deleting its dependents'}, while "
                                 f"{self._refs(node, *solid)} still owns it", dangling + waiting)
                await self._remove_owner_references(node, {r.uid for r in (*dangling, *waiting)})
            return
        if waiting and self._dependents(node.uid):
            self._note(node, f"garbage collector deletes {node.ref} in foreground: its owner "
                             f"{self._refs(node, *waiting)} is deleting its dependents, and it has dependents of its own",
                       waiting)
            await self._delete(node, latest, "Foreground")
            return
        policy = ("Orphan" if ORPHAN_FINALIZER in latest.finalizers
                  else "Foreground" if FOREGROUND_FINALIZER in latest.finalizers else "Background")
        self._note(node, f"garbage collector deletes {node.ref}: its owner {self._refs(node, *dangling)} is gone"
                   if not waiting else f"garbage collector deletes {node.ref}: its owner {self._refs(node, *waiting)} "
                   "is deleting its dependents", dangling + waiting)
        await self._delete(node, latest, policy)

    async def _owner(self, node: KubeObject, ref: OwnerReference) -> KubeObject | None:
        """``isDangling``: the owner as a live GET shows it, or None when it is gone (recorded as absent)."""
        world = self._world
        if world._fp is not None:
            world.touch(self._absent_res + ref.uid, said=f"{ref.kind} {ref.name} ({ref.uid}) " + (
                "known to be gone" if ref.uid in self._absent else "not known to be gone"))
        if ref.uid in self._absent:
            return None
        try:
            owner = await self._api.get(ref.kind, node.namespace, ref.name)
        except NotFound:
            self._absent[ref.uid] = None
            if world._fp is not None:
                world.touch(self._absent_res + ref.uid, write=True, said=f"{ref.kind} {ref.name} ({ref.uid}) is gone")
            return None
        if owner.uid != ref.uid:
            self._absent[ref.uid] = None  # the name now belongs to a new object
            if world._fp is not None:
                world.touch(self._absent_res + ref.uid, write=True, said=f"{ref.kind} {ref.name} is now {owner.uid}")
            return None
        return owner

    async def _delete(self, node: KubeObject, latest: KubeObject, policy: str) -> None:
        """``deleteObject``: UID and ResourceVersion preconditions; without the latter if only the RV moved."""
        api = self._api
        try:
            try:
                await api.delete(node.kind, node.namespace, node.name, uid=node.uid,
                                 resource_version=latest.resource_version, propagation=policy)
            except Conflict:
                live = await api.get(node.kind, node.namespace, node.name)
                if live.uid != node.uid or live.owner_references != latest.owner_references:
                    raise  # adopted or replaced meanwhile: attempt it again from the start
                await api.delete(node.kind, node.namespace, node.name, uid=node.uid, propagation=policy)
        except NotFound:
            self._forget(node.uid)
            return
        self.deletes += 1

    async def _process_deleting_dependents(self, owner: KubeObject) -> None:
        """``processDeletingDependentsItem``: remove ``foregroundDeletion`` once no blocking dependent is left."""
        blocking = self._dependents(owner.uid, blocking_only=True)
        if not blocking:
            await self._remove_finalizer(owner, FOREGROUND_FINALIZER)
            return
        for dep in blocking:
            if not _deleting_dependents(dep):
                self.controller.enqueue((_DELETE, dep.uid))

    async def _orphan(self, owner: KubeObject) -> None:
        """``attemptToOrphanWorker``: drop the owner's reference from every dependent, then ``orphan``."""
        failed: ApiError | None = None
        for dep in self._dependents(owner.uid):
            try:
                await self._remove_owner_references(dep, {owner.uid})
            except NotFound:
                pass
            except ApiError as err:
                failed = failed or err
        if failed is not None:
            raise failed  # the owner is requeued rate-limited, as orphanDependents' aggregate error does
        await self._remove_finalizer(owner, ORPHAN_FINALIZER)

    async def _remove_owner_references(self, dependent: KubeObject, owners: set[str]) -> None:
        """``deleteOwnerRefJSONMergePatch``: the cached references minus ``owners``, RV-checked against the cache."""
        cached = self._node(dependent.uid) or dependent
        refs = [r for r in cached.owner_references if r.uid not in owners]
        await self._api.patch(cached.kind, cached.namespace, cached.name, {"metadata": {"ownerReferences": refs}},
                              resource_version=cached.resource_version)

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

    # --------------------------------------------------------------- notes
    @staticmethod
    def _refs(node: KubeObject, *refs: OwnerReference) -> str:
        where = node.namespace + "/" if node.namespace else ""
        return ", ".join(f"{r.kind} {where}{r.name} ({r.uid})" for r in refs)

    def _note(self, node: KubeObject, text: str, refs: Sequence[OwnerReference]) -> None:
        world = self._world
        if world.noting:
            where = node.namespace + "/" if node.namespace else ""
            world.note(text, kind="gc", keys=(node.ref, *(f"{r.kind} {where}{r.name}" for r in refs)), uid=node.uid)
