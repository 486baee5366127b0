"""An in-memory kube-apiserver with etcd's ordering and the registry's write rules.

Semantics follow ``k8s.io/apiserver/pkg/registry/generic/registry/store.go``
(create, update, graceful delete, finalizers), ``storage/etcd3/store.go`` (one
global revision; a no-op update writes nothing) and
``apimachinery/pkg/api/errors`` (messages): the guarantees the races depend on
(ordering, resourceVersion checks, preconditions, finalizers, graceful deletion).

Every request is **one yield point taken before it has any effect**
(``await world.step("update_status Queue default/q1", key=..., rv=...)``), so an
actor can be preempted between the read it based a write on and the write
itself. The commit is then atomic: no other actor runs while the object is
checked, written and its watch events are queued.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.sim import World

from ._errors import AlreadyExists, ApiError, Conflict, Gone, Invalid, NotFound, ServerTimeout
from ._objects import BUILTIN_KINDS, KubeObject, OwnerReference, copy_json, object_ref
from ._process import checkpoint

#: Finalizers the apiserver adds for ``propagationPolicy`` (``metav1.FinalizerDeleteDependents`` and
#: ``metav1.FinalizerOrphanDependents``); the garbage collector removes them.
FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"

#: ``names.SimpleNameGenerator``: ``utilrand``'s alphabet (no vowels, no confusable digits), 5 characters after a
#: prefix of at most 63 - 5 characters
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SPACE = len(_NAME_ALPHABET) ** 5
_MAX_GENERATED_PREFIX = 58

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event. ``object`` is the committed object: never mutate it, copy it."""

    type: str
    object: KubeObject

    @property
    def resource_version(self) -> int:
        return self.object.resource_version


Sink = Callable[[WatchEvent], None]


#: A request's nominal latency, charged once an instant is busy (below). One millisecond: the order of a
#: single-object request to a kube-apiserver in-cluster (etcd's own guidance puts a write's commit at a few ms
#: on good disks; the apiserver's SLO bounds the 99th percentile at 1 s, sig-scalability's api_call_latency).
#: Charged only in loops, so every run without one keeps its zero-latency schedule and its trace.
REQUEST_LATENCY = 0.001
#: Steps at one instant after which requests take :data:`REQUEST_LATENCY`: a twentieth of the livelock limit
#: (``Limits.max_steps_per_instant``), so a loop of requests moves the clock long before it is called a livelock.
BUSY_INSTANT = 1_000


class APIServer:
    """The cluster's single source of truth.

    Fault points (each a ``world.fault`` of its kind; the flag here is the
    default when a search does not name the kinds itself):

    ``transient_error`` (``transient_errors=True``)
        the request fails with :class:`ServerTimeout` before it has any effect.
    ``ambiguous_write`` (``ambiguous_writes=True``)
        the write commits, then its response is lost: the caller gets
        :class:`ServerTimeout` for a write that happened.
    ``stale_read`` (``stale_reads=True``)
        a ``list(..., resource_version="0")`` or an informer's first LIST (a
        relist is served not older than what the informer saw) is served by
        a watch cache that lags by up to ``stale_window`` seconds: each older
        revision of the kind within the window is a fault point of its own
        (:meth:`stale_revision`), and an informer's view stays at the revision
        it listed until the lagging cache catches up.

    Time: a write's response may come up to ``response_window`` seconds
    (default 1 s) after its commit; watch events of the commit may be
    delivered before it. The server keeps its revision history (a watch cache
    with compaction: :meth:`compact`), so a LIST can be served at an older
    revision and a watch from a compacted revision gets 410 Gone.

    Work takes time: an instant that is :data:`BUSY_INSTANT` steps long is a
    loop (a controller re-creating what another deletes, while a view waits to
    catch up); from there each request takes ``request_latency`` seconds
    (default :data:`REQUEST_LATENCY`), so the loop moves the clock and heals as
    it would on a cluster, instead of starving the timer that ends it.

    Counters: :attr:`calls` maps ``(verb, kind)`` and :attr:`errors` maps
    ``(verb, kind, code)`` to counts, for oracles such as "no 409s".
    """

    def __init__(
        self,
        world: World,
        *,
        transient_errors: bool = False,
        ambiguous_writes: bool = False,
        stale_reads: bool = False,
        response_window: float = 1.0,
        stale_window: float = 2.0,
        default_pod_grace: int = 30,
        request_latency: float = REQUEST_LATENCY,
    ) -> None:
        self._world = world
        #: seconds a request takes once an instant is busy (see :data:`BUSY_INSTANT`)
        self.request_latency = request_latency
        #: whether requests (and an informer's re-watch or relist) fail with a timeout by default
        self.transient_errors = transient_errors
        self._ambiguous = ambiguous_writes
        self._stale = stale_reads
        #: seconds a write's response may lag its commit (a strategy's choice within this window)
        self.response_window = response_window
        #: seconds a watch cache may lag behind etcd when it serves a stale LIST
        self.stale_window = stale_window
        #: every committed event with its revision time, oldest first (the watch cache's history)
        self._log: builtins.list[tuple[float, WatchEvent]] = []  # builtins: the class has a list() method
        #: revisions at or below this one are compacted: a watch from them gets 410 Gone
        self.compacted_rv = 0
        self._default_grace = default_pod_grace
        self._store: dict[str, dict[str, KubeObject]] = {}
        self._watchers: dict[str, builtins.list[Sink]] = {}
        self._rv = 0
        self._uids = 0
        self._generated = 0  # generateName's sequence
        self._awaiting_kubelet: dict[str, bool] = {}  # pod uid -> graceful delete waits for the kubelet
        self.calls: dict[tuple[str, str], int] = {}
        self.errors: dict[tuple[str, str, int], int] = {}
        # Reports find the run's apiservers here to snapshot objects per step (harness.report).
        world.state.setdefault("_kube_apiservers", []).append(self)

    # ------------------------------------------------------------ counters
    @property
    def resource_version(self) -> int:
        """The current global revision (the last one any write produced)."""
        return self._rv

    def count(self, verb: str | None = None, kind: str | None = None) -> int:
        """Requests made so far (each request counts once, failed or not)."""
        return sum(n for (v, k), n in self.calls.items() if verb in (None, v) and kind in (None, k))

    def error_count(self, code: int | None = None, verb: str | None = None, kind: str | None = None) -> int:
        """Failed requests so far, filtered by HTTP code, verb and kind."""
        return sum(
            n for (v, k, c), n in self.errors.items() if verb in (None, v) and kind in (None, k) and code in (None, c)
        )

    # -------------------------------------------------------------- helpers
    async def _enter(self, verb: str, kind: str, namespace: str, name: str, rv: int = 0) -> None:
        ref = object_ref(kind, namespace, name)
        label = f"{verb} {ref}"
        world = self._world
        # Work takes time: at an instant already BUSY_INSTANT steps long (a loop of requests and deliveries),
        # each request takes its nominal latency, as on a cluster, so a loop that heals there heals here.
        busy = world.steps_at_instant >= BUSY_INSTANT
        await world.step(label, key=ref, rv=rv or None, delay=self.request_latency if busy else 0.0)
        checkpoint(self._world, label)
        self._world.touch(("list", kind) if name == "*" else (kind, namespace, name))
        if name != "*":
            self._world.observed(ref)
        k = (verb, kind)
        self.calls[k] = self.calls.get(k, 0) + 1
        if self._world.fault("transient_error", f"{label} fails (timeout, no effect)", key=ref, default=self.transient_errors):
            raise self._error(verb, kind, ServerTimeout.of(verb, kind), ref)

    def _error(self, verb: str, kind: str, err: ApiError, ref: str | None = None) -> ApiError:
        k = (verb, kind, err.code)
        self.errors[k] = self.errors.get(k, 0) + 1
        world = self._world
        if world.noting:
            world.note(f"{verb} {ref or kind} -> {err.code} {type(err).__name__}: {err}", kind="write" if verb not in (
                "get", "list") else "read", key=ref, verb=verb, code=err.code, outcome=type(err).__name__)
        return err

    def _get(self, verb: str, kind: str, namespace: str, name: str) -> KubeObject:
        obj = self._store.get(kind, {}).get(f"{namespace}/{name}" if namespace else name)
        if obj is None:
            raise self._error(verb, kind, NotFound.of(kind, name), object_ref(kind, namespace, name))
        return obj

    def _emit(self, kind: str, event: WatchEvent) -> None:
        self._log.append((self._world.now, event))
        for sink in self._watchers.get(kind, ()):
            sink(event)

    def _commit(self, obj: KubeObject, event_type: str) -> KubeObject:
        """Store ``obj`` (owned by the server from now on) under a new revision and fan it out."""
        self._rv += 1
        obj.resource_version = self._rv
        self._touch_write(obj)
        if self._world.noting:
            what = "created" if event_type == ADDED else (
                "marked for deletion" if obj.deletion_timestamp is not None else "updated")
            self._world.note(f"{obj.ref} {what}, committed rv={obj.resource_version}", kind="write", key=obj.ref,
                             event=event_type, rv=obj.resource_version, uid=obj.uid,
                             deleting=obj.deletion_timestamp is not None, finalizers=list(obj.finalizers))
        self._store.setdefault(obj.kind, {})[obj.key] = obj
        self._emit(obj.kind, WatchEvent(event_type, obj))
        return obj

    def _remove(self, obj: KubeObject) -> KubeObject:
        """Remove the object; its DELETED event carries the deletion revision, as etcd3 watch does."""
        self._rv += 1
        obj.resource_version = self._rv
        self._touch_write(obj)
        if self._world.noting:
            self._world.note(f"{obj.ref} deleted, committed rv={obj.resource_version}", kind="write", key=obj.ref,
                             event=DELETED, rv=obj.resource_version, uid=obj.uid)
        del self._store[obj.kind][obj.key]
        self._awaiting_kubelet.pop(obj.uid, None)
        self._emit(obj.kind, WatchEvent(DELETED, obj))
        return obj

    def _touch_write(self, obj: KubeObject) -> None:
        """Footprint of a commit: the object, its kind's lists, and the one revision counter every write moves."""
        world = self._world
        world.touch((obj.kind, obj.namespace, obj.name), ("list", obj.kind), _REVISION, write=True)
        world.observed(obj.ref, write=True)

    def _write(self, cur: KubeObject, new: KubeObject) -> KubeObject:
        """Commit an update; a no-op writes nothing; a finished deletion removes the object."""
        if new == cur:
            return cur
        if new.deletion_timestamp is not None and not new.finalizers and not self._awaiting_kubelet.get(new.uid):
            # registry/store.go Update: shouldDeleteDuringUpdate -> the object goes away (DELETED only)
            return self._remove(new)
        return self._commit(new, MODIFIED)

    def _check_update(self, verb: str, obj: KubeObject, cur: KubeObject) -> None:
        if obj.uid and obj.uid != cur.uid:
            # DefaultUpdatedObjectInfo.Preconditions: the body's uid is a precondition
            raise self._error(verb, obj.kind, Conflict.precondition(obj.kind, obj.name, "UID", obj.uid, cur.uid), obj.ref)
        if obj.resource_version == 0:
            if obj.kind not in BUILTIN_KINDS:
                raise self._error(
                    verb,
                    obj.kind,
                    Invalid(
                        f'{obj.kind}.{obj.kind.lower()} "{obj.name}" is invalid: metadata.resourceVersion: '
                        "Invalid value: 0x0: must be specified for an update"
                    ),
                )
        elif obj.resource_version != cur.resource_version:
            raise self._error(verb, obj.kind, Conflict.modified(obj.kind, obj.name), obj.ref)

    # ---------------------------------------------------------------- reads
    async def get(self, kind: str, namespace: str, name: str) -> KubeObject:
        """GET one object (a quorum read: always the latest committed state)."""
        await self._enter("get", kind, namespace, name)
        return self._get("get", kind, namespace, name).deepcopy()

    async def list(
        self,
        kind: str,
        namespace: str | None = None,
        selector: dict[str, str] | None = None,
        *,
        resource_version: str = "",
    ) -> builtins.list[KubeObject]:
        """LIST objects of a kind, in creation order, optionally by namespace and label selector.

        ``resource_version="0"`` lets the server answer from its watch cache,
        which may lag (the ``stale_read`` fault); the default is a quorum read.
        """
        await self._enter("list", kind, namespace or "", "*")
        if resource_version == "0":
            stale = self.stale_revision(kind, f"list {kind} served by a lagging watch cache")
            if stale is not None:
                if self._world.noting:
                    self._world.note(f"LIST {kind} served by a lagging watch cache at rv={stale[0]} (the revision "
                                     f"of {stale[1]}; the apiserver is at rv={self._rv})", kind="list", rv=stale[0],
                                     stale=True)
                return [
                    o.deepcopy()
                    for o in self.snapshot_at(kind, stale[0])
                    if (namespace is None or o.namespace == namespace) and o.matches(selector)
                ]
        return [o.deepcopy() for o in self._select(kind, namespace, selector)]

    def _select(
        self, kind: str, namespace: str | None, selector: dict[str, str] | None
    ) -> builtins.list[KubeObject]:
        return [
            o
            for o in self._store.get(kind, {}).values()
            if (namespace is None or o.namespace == namespace) and o.matches(selector)
        ]

    def peek(self, kind: str, namespace: str, name: str) -> KubeObject | None:
        """The stored object, copied, without a request or a yield point: for oracles only."""
        self._world.observed(object_ref(kind, namespace, name))
        obj = self._store.get(kind, {}).get(f"{namespace}/{name}" if namespace else name)
        return None if obj is None else obj.deepcopy()

    def peek_all(self, kind: str) -> builtins.list[KubeObject]:
        """Every stored object of a kind, copied, without a yield point: for oracles only."""
        objects = [o.deepcopy() for o in self._store.get(kind, {}).values()]
        if self._world.noting:  # the whole kind: a delete is what such a read misses
            self._world.observed(f"{kind} *", *(o.ref for o in objects))
        return objects

    # --------------------------------------------------------------- writes
    def _generate_name(self, kind: str, namespace: str, prefix: str) -> str:
        """``prefix[:58]`` + 5 characters of ``bcdfghjklmnpqrstvwxz2456789``, from a sequence, never a taken name."""
        taken = self._store.get(kind, {})
        while True:
            self._generated += 1
            n = (self._generated * 7_368_787) % _NAME_SPACE  # a fixed permutation of the suffixes: no global random
            suffix = ""
            for _ in range(5):
                n, digit = divmod(n, len(_NAME_ALPHABET))
                suffix += _NAME_ALPHABET[digit]
            name = prefix[:_MAX_GENERATED_PREFIX] + suffix
            if (f"{namespace}/{name}" if namespace else name) not in taken:
                return name

    async def _create(self, obj: KubeObject) -> KubeObject:
        """POST: assigns uid (``uid-0001``...), resourceVersion and creationTimestamp."""
        await self._enter("create", obj.kind, obj.namespace, obj.name)
        if obj.resource_version:
            raise self._error(
                "create", obj.kind, Invalid("resourceVersion should not be set on objects to be created")
            )
        if obj.key in self._store.get(obj.kind, {}):
            # also while the old object is terminating: the name is still taken
            raise self._error("create", obj.kind, AlreadyExists.of(obj.kind, obj.name), obj.ref)
        new = obj.deepcopy()
        self._uids += 1
        new.uid = f"uid-{self._uids:04d}"
        new.generation = 1
        new.creation_timestamp = self._world.now
        new.deletion_timestamp = None
        new.deletion_grace_period_seconds = None
        return self._commit(new, ADDED).deepcopy()

    async def _update(self, obj: KubeObject) -> KubeObject:
        """PUT: writes metadata and spec (status is kept: it is a subresource), RV-checked."""
        await self._enter("update", obj.kind, obj.namespace, obj.name, obj.resource_version)
        cur = self._get("update", obj.kind, obj.namespace, obj.name)
        self._check_update("update", obj, cur)
        new = cur.deepcopy()
        new.labels = dict(obj.labels)
        new.annotations = dict(obj.annotations)
        new.owner_references = list(obj.owner_references)
        new.finalizers = list(obj.finalizers)
        if obj.spec != cur.spec:
            new.spec = copy_json(obj.spec)
            new.generation = cur.generation + 1
        return self._write(cur, new).deepcopy()

    async def _update_status(self, obj: KubeObject) -> KubeObject:
        """PUT .../status: writes only ``status``, yet is RV-checked and bumps the object's RV."""
        await self._enter("update_status", obj.kind, obj.namespace, obj.name, obj.resource_version)
        cur = self._get("update_status", obj.kind, obj.namespace, obj.name)
        self._check_update("update_status", obj, cur)
        new = cur.deepcopy()
        new.status = copy_json(obj.status)
        return self._write(cur, new).deepcopy()

    async def _patch(
        self,
        kind: str,
        namespace: str,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str = "",
        resource_version: int = 0,
    ) -> KubeObject:
        """A JSON merge patch (RFC 7386) of ``{"metadata": ..., "spec": ..., "status": ...}``.

        No RV precondition unless ``resource_version`` is given (then 409 on a
        mismatch). Lists are replaced whole, as merge patches do; ``None``
        deletes a key. ``subresource="status"`` applies only the status part.
        ``metadata`` accepts ``labels``, ``annotations``, ``finalizers`` and
        ``ownerReferences`` (a list of :class:`OwnerReference`).
        """
        verb = "patch_status" if subresource == "status" else "patch"
        await self._enter(verb, kind, namespace, name, resource_version)
        cur = self._get(verb, kind, namespace, name)
        if resource_version and resource_version != cur.resource_version:
            raise self._error(verb, kind, Conflict.modified(kind, name), object_ref(kind, namespace, name))
        new = cur.deepcopy()
        if "status" in patch:
            new.status = merge_patch(new.status, patch["status"])
        if subresource != "status":
            if "spec" in patch:
                new.spec = merge_patch(new.spec, patch["spec"])
                if new.spec != cur.spec:
                    new.generation = cur.generation + 1
            meta = patch.get("metadata") or {}
            if "labels" in meta:
                new.labels = merge_patch(new.labels, meta["labels"])
            if "annotations" in meta:
                new.annotations = merge_patch(new.annotations, meta["annotations"])
            if "finalizers" in meta:
                new.finalizers = list(meta["finalizers"] or [])
            if "ownerReferences" in meta:
                refs = meta["ownerReferences"] or []
                if not all(isinstance(r, OwnerReference) for r in refs):
                    raise self._error(verb, kind, Invalid("metadata.ownerReferences must be OwnerReference values"))
                new.owner_references = list(refs)
        return self._write(cur, new).deepcopy()

    async def _apply_status(
        self, kind: str, namespace: str, name: str, status: dict[str, Any], *, field_manager: str = "", force: bool = True
    ) -> KubeObject:
        """Server-side apply of ``.status`` (``ApplyStatus``): never RV-checked.

        Maps are merged and every other value (lists included: atomic lists) is
        replaced. Field-ownership conflicts between managers are not modelled:
        every apply behaves as ``force=True`` (kueue and kruise force).
        """
        await self._enter("apply_status", kind, namespace, name)
        cur = self._get("apply_status", kind, namespace, name)
        new = cur.deepcopy()
        new.status = _apply(new.status, status)
        return self._write(cur, new).deepcopy()

    async def _delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        resource_version: int | None = None,
        propagation: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> KubeObject:
        """DELETE by name, with optional ``Preconditions{UID, ResourceVersion}``.

        Without preconditions this deletes **whatever object now has the
        name**, a re-created one included. Graceful deletion
        (``registry/store.go`` ``Delete`` / ``BeforeDelete``): the object gets a
        deletionTimestamp (MODIFIED) and stays while it has finalizers, or, for
        a Pod bound to a node with a grace period > 0, until the kubelet
        confirms (:meth:`confirm_delete`, or the grace period expires). A Pod
        without ``spec.nodeName`` and an object without finalizers go at once.
        ``propagation`` is ``"Background"`` (default), ``"Foreground"`` (adds
        the ``foregroundDeletion`` finalizer) or ``"Orphan"`` (adds ``orphan``).

        Returns the object as deleted or as now terminating (client-go returns
        only an error; the object helps tests).
        """
        await self._enter("delete", kind, namespace, name, resource_version or 0)
        cur = self._get("delete", kind, namespace, name)
        if uid is not None and uid != cur.uid:
            raise self._error("delete", kind, Conflict.precondition(kind, name, "UID", uid, cur.uid), cur.ref)
        if resource_version is not None and resource_version != cur.resource_version:
            raise self._error(
                "delete",
                kind,
                Conflict.precondition(kind, name, "ResourceVersion", resource_version, cur.resource_version),
                cur.ref,
            )
        if propagation not in (None, "Background", "Foreground", "Orphan"):
            raise self._error("delete", kind, Invalid(f"unsupported propagationPolicy {propagation!r}"))
        if cur.deletion_timestamp is not None:
            if kind == "Pod" and grace_period_seconds == 0 and self._awaiting_kubelet.get(cur.uid):
                return self._finish_pod(cur).deepcopy()
            return cur.deepcopy()
        finalizers = list(cur.finalizers)
        if propagation == "Foreground" and FOREGROUND_FINALIZER not in finalizers:
            finalizers.append(FOREGROUND_FINALIZER)
        if propagation == "Orphan" and ORPHAN_FINALIZER not in finalizers:
            finalizers.append(ORPHAN_FINALIZER)
        grace = 0
        if kind == "Pod" and cur.spec.get("nodeName"):
            default = int(cur.spec.get("terminationGracePeriodSeconds", self._default_grace))
            grace = default if grace_period_seconds is None else grace_period_seconds
        new = cur.deepcopy()
        new.finalizers = finalizers
        new.deletion_timestamp = self._world.now + grace
        new.deletion_grace_period_seconds = grace
        if not finalizers and grace == 0:
            return self._remove(new).deepcopy()
        if grace > 0:
            self._awaiting_kubelet[cur.uid] = True
            pod_uid = cur.uid
            self._world.call_later(
                grace,
                lambda: self._kubelet_expired(namespace, name, pod_uid),
                label=f"kubelet: grace period of Pod {namespace}/{name} expired",
                actor="kubelet",
                key=object_ref(kind, namespace, name),
            )
        return self._commit(new, MODIFIED).deepcopy()

    async def confirm_delete(self, namespace: str, name: str, uid: str | None = None) -> KubeObject:
        """The kubelet's final DELETE of a terminating Pod (grace period 0, uid precondition)."""
        return await self.delete("Pod", namespace, name, uid=uid, grace_period_seconds=0)

    # ------------------------------------------------- write responses
    # A write commits at its request step; its caller resumes at a later step, the
    # response, so watch deliveries of the committed object may come in between
    # (why controllers call ExpectCreations *before* Create). The response keeps
    # the request's place in the canonical order; a strategy may let it wait up to
    # ``response_window`` seconds, inject a crash before the caller handles it,
    # or lose it (an ambiguous write: committed, yet the caller sees a timeout).
    async def _respond(self, verb: str, kind: str, ref: str, out: KubeObject) -> KubeObject:
        label = f"response {verb} {ref}"
        await self._world.step(label, key=ref, rv=out.resource_version, window=self.response_window, follows=True)
        checkpoint(self._world, label)
        if self._world.fault(
            "ambiguous_write", f"{verb} {ref} commits, but its response is lost (timeout)", key=ref,
            default=self._ambiguous,
        ):
            if self._world.noting:
                self._world.note(f"{verb} {ref} committed rv={out.resource_version}, but its response is lost: the "
                                 "caller sees a timeout", kind="write", key=ref, verb=verb, outcome="ambiguous",
                                 rv=out.resource_version)
            raise self._error(verb, kind, ServerTimeout.of(verb, kind), ref)
        return out

    async def create(self, obj: KubeObject, *, generate_name: str = "") -> KubeObject:
        """POST: assigns uid (``uid-0001``...), resourceVersion and creationTimestamp.

        ``generate_name``: ``metadata.generateName``. With an empty ``obj.name`` the apiserver names
        the object: the prefix (cut to 58 characters) and 5 characters of ``utilrand``'s alphabet, as
        ``names.SimpleNameGenerator``. Here the suffix is the next of this apiserver's own sequence, so
        a run names its objects the same way every time, and a name already taken is skipped (as the
        apiserver's retry of generated names does). Read the name from the returned object.
        """
        if generate_name and not obj.name:
            obj = obj.deepcopy()
            obj.name = self._generate_name(obj.kind, obj.namespace, generate_name)
        out = await self._create(obj)
        return await self._respond("create", obj.kind, object_ref(obj.kind, obj.namespace, obj.name), out)

    async def update(self, obj: KubeObject) -> KubeObject:
        """PUT: writes metadata and spec (status is kept: it is a subresource), RV-checked."""
        out = await self._update(obj)
        return await self._respond("update", obj.kind, object_ref(obj.kind, obj.namespace, obj.name), out)

    async def update_status(self, obj: KubeObject) -> KubeObject:
        """PUT .../status: writes only ``status``, yet is RV-checked and bumps the object's RV."""
        out = await self._update_status(obj)
        return await self._respond("update_status", obj.kind, object_ref(obj.kind, obj.namespace, obj.name), out)

    async def patch(
        self,
        kind: str,
        namespace: str,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str = "",
        resource_version: int = 0,
    ) -> KubeObject:
        """A JSON merge patch; see :meth:`_patch`."""
        out = await self._patch(kind, namespace, name, patch, subresource=subresource, resource_version=resource_version)
        verb = "patch_status" if subresource == "status" else "patch"
        return await self._respond(verb, kind, object_ref(kind, namespace, name), out)

    async def apply_status(
        self, kind: str, namespace: str, name: str, status: dict[str, Any], *, field_manager: str = "", force: bool = True
    ) -> KubeObject:
        """Server-side apply of ``.status``; see :meth:`_apply_status`."""
        out = await self._apply_status(kind, namespace, name, status, field_manager=field_manager, force=force)
        return await self._respond("apply_status", kind, object_ref(kind, namespace, name), out)

    async def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        resource_version: int | None = None,
        propagation: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> KubeObject:
        """DELETE by name, with optional ``Preconditions{UID, ResourceVersion}``; see :meth:`_delete`."""
        out = await self._delete(
            kind, namespace, name, uid=uid, resource_version=resource_version, propagation=propagation,
            grace_period_seconds=grace_period_seconds,
        )
        return await self._respond("delete", kind, object_ref(kind, namespace, name), out)

    def _kubelet_expired(self, namespace: str, name: str, uid: str) -> None:
        cur = self._store.get("Pod", {}).get(f"{namespace}/{name}")
        if cur is not None and cur.uid == uid and self._awaiting_kubelet.get(uid):
            self._finish_pod(cur)

    def _finish_pod(self, cur: KubeObject) -> KubeObject:
        self._awaiting_kubelet.pop(cur.uid, None)
        new = cur.deepcopy()
        new.deletion_grace_period_seconds = 0
        if not new.finalizers:
            return self._remove(new)
        return self._commit(new, MODIFIED)

    # ---------------------------------------------------------------- watch
    def watch(self, kind: str, sink: Sink) -> Callable[[], None]:
        """Register ``sink`` for every later event of ``kind``; returns a function that stops it.

        Sinks are called synchronously at commit, in revision order; informers
        queue the event and deliver it later as their own scheduled step.
        """
        self._world.touch(("list", kind))
        sinks = self._watchers.setdefault(kind, [])
        sinks.append(sink)

        def stop() -> None:
            if sink in sinks:
                sinks.remove(sink)

        return stop

    def snapshot(self, kind: str) -> tuple[builtins.list[KubeObject], int]:
        """The committed objects of a kind and the revision they are current at (a LIST for informers)."""
        self._world.touch(("list", kind))
        return list(self._store.get(kind, {}).values()), self._rv

    # ------------------------------------------------------- watch cache history
    def revision_at(self, t: float) -> int:
        """The revision that was current at virtual time ``t`` (never below the compaction point)."""
        rv = self.compacted_rv
        for when, ev in self._log:
            if when > t:
                break
            rv = max(rv, ev.object.resource_version)
        return rv

    def snapshot_at(self, kind: str, rv: int) -> builtins.list[KubeObject]:
        """The objects of ``kind`` as they were at revision ``rv`` (a LIST served by a lagging watch cache)."""
        self._world.touch(("list", kind), _REVISION)
        state: dict[str, KubeObject] = {}
        for _when, ev in self._log:
            if ev.object.resource_version > rv:
                break
            if ev.object.kind != kind:
                continue
            if ev.type == DELETED:
                state.pop(ev.object.key, None)
            else:
                state[ev.object.key] = ev.object
        return list(state.values())

    def events_since(self, kind: str, rv: int) -> builtins.list[WatchEvent]:
        """Watch events of ``kind`` after revision ``rv``; raises :class:`Gone` (410) if ``rv`` is compacted."""
        self._world.touch(("list", kind), _REVISION)
        if rv < self.compacted_rv:
            raise Gone.of(kind, rv, self.compacted_rv)
        return [ev for _when, ev in self._log if ev.object.kind == kind and ev.object.resource_version > rv]

    def compact(self) -> int:
        """Compact the history up to the current revision (etcd compaction): older watches get 410 Gone."""
        self._world.touch(_REVISION, write=True)
        self.compacted_rv = self._rv
        return self._rv

    def stale_revisions(self, kind: str, not_older_than: int = 0) -> builtins.list[tuple[int, str, float]]:
        """The older revisions a watch cache lagging up to ``stale_window`` may serve a LIST of ``kind`` at.

        Each is ``(rv, name, until)``: the revision, the event that made it
        (kind, object, event, occurrence: "MODIFIED default/rmq #2 (deleting)";
        a plan names a revision by its event, never by its number, because
        numbers shift when another plan entry is removed), and the instant the
        lagging cache must have moved past it (the next event of ``kind`` plus
        the window: a replica lags at most ``stale_window`` seconds). Only
        revisions at which the objects of ``kind`` differ from the present
        are listed, oldest first: the state current ``stale_window`` seconds
        ago, then the state after each later event of the kind but the last;
        none older than ``not_older_than`` (a LIST at a resourceVersion is
        served "not older than" it) or than the compaction.
        """
        now = self._world.now
        since = now - self.stale_window
        seen: dict[tuple[str, str], int] = {}
        base: tuple[int, str] | None = None
        later: builtins.list[tuple[int, str, float]] = []  # (rv, name, commit time)
        for when, ev in self._log:
            obj = ev.object
            if obj.kind != kind:
                continue
            n = seen[(obj.key, ev.type)] = seen.get((obj.key, ev.type), 0) + 1
            name = f"{ev.type} {obj.key}" + (f" #{n}" if n > 1 else "") + (
                " (deleting)" if ev.type != DELETED and obj.deletion_timestamp is not None else "")
            if when <= since:
                base = (obj.resource_version, name)
            else:
                later.append((obj.resource_version, name, when))
        if not later:
            return []  # nothing of this kind changed within the window: a lagging cache serves the present
        first = (max(self.revision_at(since), base[0]) if base else self.revision_at(since),
                 base[1] if base else f"no {kind} yet")
        states = [first, *((rv, name) for rv, name, _ in later[:-1])]
        floor = max(self.compacted_rv, not_older_than)
        return [(rv, name, later[i][2] + self.stale_window) for i, (rv, name) in enumerate(states) if rv >= floor]

    def stale_revision(self, kind: str, label: str, not_older_than: int = 0) -> tuple[int, str, float] | None:
        """The ``stale_read`` fault points of one LIST: the older revision a lagging watch cache serves, or None.

        One fault point per revision of :meth:`stale_revisions` ("<label> at the
        revision of MODIFIED default/rmq (deleting)"): which revision a lagging
        replica serves is the search's choice, as Sieve's time-travel plans
        choose it (Sun et al., OSDI 2022), never a constant lag. Returns
        ``(rv, name, until)``; ``until`` is when the lagging cache has caught up.
        """
        if not self._world.fault_enabled("stale_read", self._stale):
            return None
        for rv, name, until in self.stale_revisions(kind, not_older_than):
            if self._world.fault("stale_read", f"{label} at the revision of {name}", key=kind, default=self._stale):
                return rv, name, until
        return None


#: the footprint resource of the revision counter (and the history it indexes), shared by every kind
_REVISION = ("revision",)


def merge_patch(target: dict[str, Any], patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns a new value and leaves ``target`` alone."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    out: dict[str, Any] = copy_json(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k, {}), v)
        else:
            out[k] = copy_json(v)
    return out


def _apply(target: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = copy_json(target)
    for k, v in applied.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _apply(out[k], v)
        else:
            out[k] = copy_json(v)
    return out


def apiservers_of(world: World) -> list[APIServer]:
    """The apiservers a run built, in creation order: a public handle for oracles and after-run checks.

    Keep the run's ``world`` (a scenario may store it) and call this once the
    run has ended to read the final objects with ``peek``/``peek_all``.
    """
    return list(world.state.get("_kube_apiservers", []))
