"""The registry's write rules: commits under one global revision, preconditions, finalizers, graceful deletion.

:class:`Registry` is the apiserver's machinery below its public verbs
(``registry/generic/registry/store.go``, ``storage/etcd3/store.go``): the
request's yield point and fault (:meth:`Registry._enter`), the atomic commit
of a revision and its watch fan-out, the checks an update must pass, the
write paths of create, update, patch, apply and delete, and the write's
response point. :class:`~harness.kube.APIServer` is this plus its public
surface: reads, verbs, the watch cache's history and the counters.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ._errors import AlreadyExists, ApiError, Conflict, Invalid, NotFound, ServerTimeout
from ._lifecycle import lifecycle_refusal, new_namespace, prepare_namespace
from ._merge import _apply, merge_patch
from ._objects import BUILTIN_KINDS, KubeObject, OwnerReference, copy_json, object_ref, step_ref
from ._process import checkpoint
from ._revisions import (
    _REVISION,
    ADDED,
    DELETED,
    MODIFIED,
    Sink,
    WatchEvent,
    changed_fields,
    revision_name,
    spec_digest,
)

if TYPE_CHECKING:
    from harness.sim import Event, World

#: Finalizers the apiserver adds for ``propagationPolicy`` (``metav1.FinalizerDeleteDependents`` and
#: ``metav1.FinalizerOrphanDependents``); the garbage collector removes them.
FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"

#: ``names.SimpleNameGenerator``: ``utilrand``'s alphabet (no vowels, no confusable digits), 5 characters after a
#: prefix of at most 63 - 5 characters
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SPACE = len(_NAME_ALPHABET) ** 5
_MAX_GENERATED_PREFIX = 58

#: A request's nominal latency, charged once an instant is busy (below). One millisecond: the order of a
#: single-object request to a kube-apiserver in-cluster (etcd's own guidance puts a write's commit at a few ms
#: on good disks; the apiserver's SLO bounds the 99th percentile at 1 s, sig-scalability's api_call_latency).
#: Charged only in loops, so every run without one keeps its zero-latency schedule and its trace.
REQUEST_LATENCY = 0.001
#: Steps at one instant after which requests take :data:`REQUEST_LATENCY`: a twentieth of the livelock limit
#: (``Limits.max_steps_per_instant``), so a loop of requests moves the clock long before it is called a livelock.
BUSY_INSTANT = 1_000


def rewritten(cur: KubeObject, obj: KubeObject, *, status_only: bool, keep_status: bool) -> KubeObject:
    """What an update of ``cur`` to ``obj`` commits: the status alone (the status subresource), or the metadata
    a client may set and the spec (a new generation when the spec changed), the status kept unless asked.

    One rule for the write and for a dry run of it (``_http/_dryrun.py``), so the two never answer differently.
    """
    new = cur.deepcopy()
    if status_only:
        new.status = copy_json(obj.status)
        return new
    new.labels, new.annotations = dict(obj.labels), dict(obj.annotations)
    new.owner_references, new.finalizers = list(obj.owner_references), list(obj.finalizers)
    new.extra = copy_json(obj.extra)
    if not keep_status:
        new.status = copy_json(obj.status)
    if obj.spec != cur.spec:
        new.spec = copy_json(obj.spec)
        new.generation = cur.generation + 1
    return new


class Registry:
    """The write machinery of :class:`~harness.kube.APIServer` (its base class; the state is the apiserver's)."""

    # the state below is the apiserver's (APIServer.__init__ sets and documents it)
    _world: World
    _store: dict[str, dict[str, KubeObject]]
    _log: builtins.list[tuple[float, WatchEvent]]
    _watchers: dict[str, builtins.list[Sink]]
    _fresh_waiters: builtins.list[tuple[int, Event]]
    _noted_counts: dict[tuple[str, str], int]
    _awaiting_kubelet: dict[str, bool]
    _rv: int
    _uids: int
    _generated: int
    _default_grace: int
    _ambiguous: bool
    request_latency: float
    transient_errors: bool
    response_window: float
    calls: dict[tuple[str, str], int]
    errors: dict[tuple[str, str, int], int]

    # ------------------------------------------------------------ bootstrap
    def _bootstrap_namespaces(self, names: Iterable[str]) -> None:
        """Store the Namespaces the cluster has from its start (``_lifecycle.py``), without a request or a step.

        Each takes the next uid and revision, as the bootstrap's creates did before the run began. Their watch
        events carry the time ``-inf``: the cluster made them long before, so no stale window of the run reaches
        back to a revision without them (a lagging cache's LIST never lacks ``default``), yet a watch from
        revision 0 replays them, as etcd's history does.
        """
        for name in names:
            if name in self._store.get("Namespace", {}):
                continue
            ns = new_namespace(name)
            self._uids += 1
            ns.uid = f"uid-{self._uids:04d}"
            ns.generation = 1
            ns.creation_timestamp = self._world.now
            self._rv += 1
            ns.resource_version = self._rv
            self._store.setdefault("Namespace", {})[ns.key] = ns
            self._log.append((-math.inf, WatchEvent(ADDED, ns)))

    def _admit(self, verb: str, operation: str, kind: str, namespace: str, name: str) -> None:
        """The NamespaceLifecycle admission (``_lifecycle.py``): raise its refusal of this write, if any.
        ``operation`` is the admission's (``create``, ``update``, ``delete``); ``verb`` the request's."""
        err = lifecycle_refusal(self._store.get("Namespace", {}), operation, kind, namespace, name)
        if err is not None:
            raise self._error(verb, kind, err, object_ref(kind, namespace, name)) from None

    # -------------------------------------------------------------- helpers
    async def _enter(self, verb: str, kind: str, namespace: str, name: str, rv: int = 0) -> None:
        ref = object_ref(kind, namespace, name)
        said = step_ref(ref)  # (an Event named after a client's clock: not in a label)
        label = f"{verb} {said}"
        world = self._world
        # Work takes time: at an instant already BUSY_INSTANT steps long (a loop of requests and deliveries),
        # each request takes its nominal latency, as on a cluster, so a loop that heals there heals here.
        busy = world.steps_at_instant >= BUSY_INSTANT
        await world.step(label, key=said, rv=rv or None, delay=self.request_latency if busy else 0.0)
        checkpoint(self._world, label)
        # the request's own target, for the reduction; what it decided on is recorded where it is read
        world.touch(f"{kind} *" if name == "*" else ref, decides=False)
        k = (verb, kind)
        self.calls[k] = self.calls.get(k, 0) + 1
        if self._world.fault("transient_error", f"{label} fails (timeout, no effect)", key=said, default=self.transient_errors):
            raise self._error(verb, kind, ServerTimeout.of(verb, kind), ref)

    def _error(self, verb: str, kind: str, err: ApiError, ref: str | None = None) -> ApiError:
        k = (verb, kind, err.code)
        self.errors[k] = self.errors.get(k, 0) + 1
        world = self._world
        if world.noting:
            world.note(f"{verb} {ref or kind} -> {err.code} {type(err).__name__}: {err}", kind="write" if verb not in (
                "get", "list") else "read", key=ref, verb=verb, code=err.code, outcome=type(err).__name__)
            if ref is not None:  # what made it fail: the write it read from (the conflicting update, the delete)
                cur = self._store.get(kind, {}).get(ref.split(" ", 1)[1])
                world.touch(ref, said=f"{verb} -> {err.code} {err.reason}" + (
                    f" (the apiserver has rv={cur.resource_version})" if cur is not None else ""))
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
        for rv, fresh in self._fresh_waiters:
            if rv <= self._rv:
                fresh.set()

    def _revision_noted(self, obj: KubeObject, event_type: str) -> str:
        """The name :meth:`stale_revisions` gives this revision, for the write's note (told runs only: a run is
        told or not from its start, so the counts are those of the whole log)."""
        counts = self._noted_counts
        n = counts[(obj.ref, event_type)] = counts.get((obj.ref, event_type), 0) + 1
        return revision_name(event_type, obj, n)

    def _commit(self, obj: KubeObject, event_type: str) -> KubeObject:
        """Store ``obj`` (owned by the server from now on) under a new revision and fan it out."""
        self._rv += 1
        obj.resource_version = self._rv
        self._touch_write(obj, event_type)
        if self._world.noting:
            what = "created" if event_type == ADDED else (
                "marked for deletion" if obj.deletion_timestamp is not None else "updated")
            self._world.note(f"{obj.ref} {what}, committed rv={obj.resource_version}", kind="write", key=obj.ref,
                             event=event_type, rv=obj.resource_version, uid=obj.uid,
                             deleting=obj.deletion_timestamp is not None, finalizers=list(obj.finalizers),
                             spec=spec_digest(obj), revision=self._revision_noted(obj, event_type))
        self._store.setdefault(obj.kind, {})[obj.key] = obj
        self._emit(obj.kind, WatchEvent(event_type, obj))
        return obj

    def _remove(self, obj: KubeObject) -> KubeObject:
        """Remove the object; its DELETED event carries the deletion revision, as etcd3 watch does."""
        self._rv += 1
        obj.resource_version = self._rv
        self._touch_write(obj, DELETED)
        if self._world.noting:
            self._world.note(f"{obj.ref} deleted, committed rv={obj.resource_version}", kind="write", key=obj.ref,
                             event=DELETED, rv=obj.resource_version, uid=obj.uid,
                             revision=self._revision_noted(obj, DELETED))
        del self._store[obj.kind][obj.key]
        self._awaiting_kubelet.pop(obj.uid, None)
        self._emit(obj.kind, WatchEvent(DELETED, obj))
        return obj

    def _touch_write(self, obj: KubeObject, event_type: str) -> None:
        """Footprint of a commit: the object (at its new revision, with what changed), its kind's lists, and the
        one revision counter every write moves. The kind's list is a deciding write only when the set of names
        changes (a create, a delete): a whole-kind read then reads from the last one."""
        world = self._world
        if world._fp is None:
            return
        ref = obj.ref
        said = f"{ref} rv={obj.resource_version}"
        if world.noting:
            said = f"{ref} {'created' if event_type == ADDED else 'deleted' if event_type == DELETED else 'updated'} " \
                   f"rv={obj.resource_version}" + ("" if event_type != MODIFIED else changed_fields(
                       self._store.get(obj.kind, {}).get(obj.key), obj))
        world.touch(ref, write=True, said=said, version=obj.resource_version)
        world.touch(f"{obj.kind} *", write=True, said=said, decides=event_type != MODIFIED)
        world.touch(_REVISION, write=True, decides=False)

    def _write(self, cur: KubeObject, new: KubeObject) -> KubeObject:
        """Commit an update; a no-op writes nothing; a finished deletion removes the object."""
        if new == cur:
            return cur
        if new.deletion_timestamp is not None and not new.finalizers and not self._awaiting_kubelet.get(new.uid) \
                and not _namespace_finalizers(new):
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

    def _check_no_new_finalizers(self, verb: str, cur: KubeObject, new: KubeObject) -> None:
        """``ValidateNoNewFinalizers``: an object being deleted may lose finalizers, never gain one (422)."""
        if cur.deletion_timestamp is None:
            return
        extra = sorted(set(new.finalizers) - set(cur.finalizers))
        if extra:
            qualified = cur.kind if cur.kind in BUILTIN_KINDS else f"{cur.kind}.{cur.kind.lower()}"
            found = ", ".join(f'"{f}"' for f in extra)
            raise self._error(verb, cur.kind, Invalid(
                f'{qualified} "{cur.name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
                f"added if the object is being deleted, found new finalizers []string{{{found}}}"), cur.ref)

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
        self._admit("create", "create", obj.kind, obj.namespace, obj.name)
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
        if new.kind == "Namespace":
            prepare_namespace(new)  # namespace/strategy.go PrepareForCreate (and the defaulted name label)
        return self._commit(new, ADDED).deepcopy()

    async def _update(self, obj: KubeObject) -> KubeObject:
        """PUT: writes metadata and spec (status is kept: it is a subresource), RV-checked."""
        await self._enter("update", obj.kind, obj.namespace, obj.name, obj.resource_version)
        cur = self._get("update", obj.kind, obj.namespace, obj.name)
        self._admit("update", "update", obj.kind, obj.namespace, obj.name)
        self._check_update("update", obj, cur)
        new = cur.deepcopy()
        new.labels = dict(obj.labels)
        new.annotations = dict(obj.annotations)
        new.owner_references = list(obj.owner_references)
        new.finalizers = list(obj.finalizers)
        new.extra = copy_json(obj.extra)
        if obj.spec != cur.spec:
            new.spec = copy_json(obj.spec)
            new.generation = cur.generation + 1
        self._check_no_new_finalizers("update", cur, new)
        return self._write(cur, new).deepcopy()

    async def _rewrite(
        self, verb: str, kind: str, namespace: str, name: str, build: Callable[[KubeObject], KubeObject],
        *, status_only: bool = False, keep_status: bool = True,
    ) -> KubeObject:
        """An update whose new object is computed from the current one at the commit: PATCH over HTTP.

        ``handlers/patch.go`` hands ``applyPatch`` to the store as a
        ``rest.DefaultUpdatedObjectInfo`` transform, which ``GuaranteedUpdate``
        runs on the object it read: a patch never conflicts unless the patched
        object carries a resourceVersion (or uid) that no longer holds. ``build``
        gets a copy of the current object and returns the patched one (it may
        raise an :class:`ApiError`); the server keeps what it owns (uid,
        timestamps), bumps ``generation`` when ``spec`` changed, and
        ``status_only`` keeps everything but ``status`` (the status subresource);
        otherwise ``status`` is kept, as the main resource's strategy does,
        unless ``keep_status=False`` (a kind without a status subresource).
        """
        ref = object_ref(kind, namespace, name)
        await self._enter(verb, kind, namespace, name)
        cur = self._get(verb, kind, namespace, name)
        self._admit(verb, "update", kind, namespace, name)
        try:
            obj = build(cur.deepcopy())
        except ApiError as err:
            raise self._error(verb, kind, err, ref) from None
        self._check_update(verb, obj, cur)
        new = rewritten(cur, obj, status_only=status_only, keep_status=keep_status)
        out = self._write(cur, new).deepcopy()
        return await self._respond(verb, kind, ref, out)

    async def _update_status(self, obj: KubeObject) -> KubeObject:
        """PUT .../status: writes only ``status``, yet is RV-checked and bumps the object's RV."""
        await self._enter("update_status", obj.kind, obj.namespace, obj.name, obj.resource_version)
        cur = self._get("update_status", obj.kind, obj.namespace, obj.name)
        self._admit("update_status", "update", obj.kind, obj.namespace, obj.name)
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
        self._admit(verb, "update", kind, namespace, name)
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
            self._check_no_new_finalizers(verb, cur, new)
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
        self._admit("apply_status", "update", kind, namespace, name)
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
        ``propagation`` is ``"Background"``, ``"Foreground"`` (the
        ``foregroundDeletion`` finalizer) or ``"Orphan"`` (``orphan``); as
        ``deletionFinalizersForGarbageCollection``, an explicit policy replaces
        whichever of the two the object carries (Background drops both), and
        None keeps the first one it carries. Setting the deletionTimestamp bumps
        ``metadata.generation``. Deleting an object that already waits for its
        finalizers changes only those two finalizers (and removes the object if
        none is left); a Pod in its grace period ignores the options.

        Returns the object as deleted or as now terminating (client-go returns
        only an error; the object helps tests).
        """
        await self._enter("delete", kind, namespace, name, resource_version or 0)
        self._admit("delete", "delete", kind, namespace, name)  # the admission runs before the store's lookup
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
        if cur.deletion_timestamp is not None and self._awaiting_kubelet.get(cur.uid):
            # rest.BeforeDelete: a graceful deletion is pending; only the kubelet's final delete (grace 0)
            # ends it, and "finalizers cannot be updated via DeleteOptions if a deletion is already pending"
            if kind == "Pod" and grace_period_seconds == 0:
                return self._finish_pod(cur).deepcopy()
            return cur.deepcopy()
        finalizers = deletion_finalizers(cur.finalizers, propagation)
        if cur.deletion_timestamp is not None:
            # Deleting again an object that waits for its finalizers: store.go Delete still runs
            # updateForGracefulDeletionAndFinalizers, so an explicit propagationPolicy swaps the GC finalizers
            # (Background drops them: with no finalizer left the object goes); the deletionTimestamp stays.
            new = cur.deepcopy()
            new.finalizers = finalizers
            return self._write(cur, new).deepcopy()
        grace = 0
        if kind == "Pod" and cur.spec.get("nodeName"):
            default = int(cur.spec.get("terminationGracePeriodSeconds", self._default_grace))
            grace = default if grace_period_seconds is None else grace_period_seconds
        new = cur.deepcopy()
        new.finalizers = finalizers
        new.deletion_timestamp = self._world.now + grace
        new.deletion_grace_period_seconds = grace
        if _namespace_finalizers(new):
            # namespace/storage/storage.go Delete: a Namespace with spec.finalizers is marked Terminating and
            # stays until the namespace controller has emptied it and finalized it (spec.finalizers emptied)
            new.status = {**new.status, "phase": "Terminating"}
        elif not finalizers and grace == 0:
            return self._remove(new).deepcopy()
        if new.generation > 0:
            # The deletion mark is a change controllers must hear of even through GenerationChangedPredicate:
            # rest.BeforeDelete (graceful) and store.go markAsDeleting (finalizers) bump a set generation once,
            # when the deletionTimestamp is first set (store_test.go: "Deletion didn't increase Generation").
            new.generation += 1
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

    # ------------------------------------------------- write responses
    # A write commits at its request step; its caller resumes at a later step, the
    # response, so watch deliveries of the committed object may come in between
    # (why controllers call ExpectCreations *before* Create). The response keeps
    # the request's place in the canonical order; a strategy may let it wait up to
    # ``response_window`` seconds, inject a crash before the caller handles it,
    # or lose it (an ambiguous write: committed, yet the caller sees a timeout).
    async def _respond(self, verb: str, kind: str, ref: str, out: KubeObject) -> KubeObject:
        said = step_ref(ref)  # (an Event named after a client's clock: not in a label)
        label = f"response {verb} {said}"
        await self._world.step(label, key=said, rv=out.resource_version, window=self.response_window, follows=True)
        checkpoint(self._world, label)
        if self._world.fault(
            "ambiguous_write", f"{verb} {said} commits, but its response is lost (timeout)", key=said,
            default=self._ambiguous,
        ):
            if self._world.noting:
                self._world.note(f"{verb} {ref} committed rv={out.resource_version}, but its response is lost: the "
                                 "caller sees a timeout", kind="write", key=ref, verb=verb, outcome="ambiguous",
                                 rv=out.resource_version)
            raise self._error(verb, kind, ServerTimeout.of(verb, kind), ref)
        return out

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


def _namespace_finalizers(obj: KubeObject) -> bool:
    """Whether ``obj`` is a Namespace whose ``spec.finalizers`` hold its deletion (every Namespace gets
    ``kubernetes`` there at its create; only the namespace controller's ``/finalize`` removes it)."""
    return obj.kind == "Namespace" and bool(obj.spec.get("finalizers"))


def deletion_finalizers(finalizers: list[str], propagation: str | None) -> list[str]:
    """The finalizers a DELETE with ``propagation`` leaves on an object (``deletionFinalizersForGarbageCollection``).

    ``registry/store.go`` ``shouldOrphanDependents``/``shouldDeleteDependents``:
    an explicit policy decides both garbage-collector finalizers (Orphan: only
    ``orphan``; Foreground: only ``foregroundDeletion``; Background: neither);
    without one, the first of the two the object carries stays (the default
    policy of every kind here is background). Other finalizers keep their
    order; the list is rebuilt only when the set changes.
    """
    gc = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)
    if propagation is None:
        first = next((f for f in finalizers if f in gc), None)
        orphan, foreground = first == ORPHAN_FINALIZER, first == FOREGROUND_FINALIZER
    else:
        orphan, foreground = propagation == "Orphan", propagation == "Foreground"
    new = [f for f in finalizers if f not in gc]
    if orphan:
        new.append(ORPHAN_FINALIZER)
    if foreground:
        new.append(FOREGROUND_FINALIZER)
    return list(finalizers) if set(new) == set(finalizers) else new
