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
import hashlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from harness.sim import Event, World

from ._errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    Gone,
    Invalid,
    NotFound,
    ServerTimeout,
    TooLargeResourceVersion,
)
from ._objects import BUILTIN_KINDS, KubeObject, OwnerReference, copy_json, object_ref
from ._process import checkpoint

#: What makes :meth:`APIServer.transport`'s transports: the HTTP API (``harness/kube/_http/``) installs its own
#: when it is imported (``harness.kube`` imports it), so the apiserver imports nothing of HTTP.
_transport_maker: Callable[..., Any] | None = None

#: Finalizers the apiserver adds for ``propagationPolicy`` (``metav1.FinalizerDeleteDependents`` and
#: ``metav1.FinalizerOrphanDependents``); the garbage collector removes them.
FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN_FINALIZER = "orphan"

#: ``names.SimpleNameGenerator``: ``utilrand``'s alphabet (no vowels, no confusable digits), 5 characters after a
#: prefix of at most 63 - 5 characters
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SPACE = len(_NAME_ALPHABET) ** 5
_MAX_GENERATED_PREFIX = 58

#: ``cacher/watch_cache.go`` ``blockTimeout``: how long a LIST at a resourceVersion the watch cache has not
#: reached waits for it before the 504 "Too large resource version"
BLOCK_TIMEOUT = 3.0

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
    ``stale_read`` (``stale_reads=True``, or the kinds it names: ``stale_reads={"RabbitmqCluster"}``)
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
        stale_reads: bool | Collection[str] = False,
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
        #: the kinds whose LISTs may be stale by default (True: every kind)
        self._stale: bool | frozenset[str] = stale_reads if isinstance(stale_reads, bool) else frozenset(stale_reads)
        #: seconds a write's response may lag its commit (a strategy's choice within this window)
        self.response_window = response_window
        #: seconds a watch cache may lag behind etcd when it serves a stale LIST
        self.stale_window = stale_window
        #: every committed event with its revision time, oldest first (the watch cache's history)
        self._log: builtins.list[tuple[float, WatchEvent]] = []  # builtins: the class has a list() method
        #: (object, event type) -> events so far, counted in told runs for the revision names of write notes
        self._noted_counts: dict[tuple[str, str], int] = {}
        #: revisions at or below this one are compacted: a watch from them gets 410 Gone
        self.compacted_rv = 0
        self._default_grace = default_pod_grace
        self._store: dict[str, dict[str, KubeObject]] = {}
        self._watchers: dict[str, builtins.list[Sink]] = {}
        self._rv = 0
        self._uids = 0
        self._generated = 0  # generateName's sequence
        self._awaiting_kubelet: dict[str, bool] = {}  # pod uid -> graceful delete waits for the kubelet
        #: the revision the last LIST was served at (the list's ``metadata.resourceVersion``)
        self.listed_rv = 0
        self._fresh_waiters: builtins.list[tuple[int, Event]] = []  # (revision, Event) of LISTs waiting for it
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
        # the request's own target, for the reduction; what it decided on is recorded where it is read
        world.touch(f"{kind} *" if name == "*" else ref, decides=False)
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

    # ---------------------------------------------------------------- reads
    async def get(self, kind: str, namespace: str, name: str) -> KubeObject:
        """GET one object (a quorum read: always the latest committed state)."""
        await self._enter("get", kind, namespace, name)
        obj = self._get("get", kind, namespace, name)
        if self._world._fp is not None:
            self._world.touch(obj.ref, said=f"GET {obj.ref}: rv={obj.resource_version}")
        return obj.deepcopy()

    async def list(
        self,
        kind: str,
        namespace: str | None = None,
        selector: dict[str, str] | None = None,
        *,
        resource_version: str = "",
        resource_version_match: str = "",
        at: int | None = None,
    ) -> builtins.list[KubeObject]:
        """LIST objects of a kind, in creation order, optionally by namespace and label selector.

        ``resource_version`` as ``ListOptions``: ``""`` is a quorum read (the
        latest state); ``"0"`` lets the server answer from its watch cache,
        which may lag (the ``stale_read`` fault); a revision ``"N"`` is served
        not older than N (``resource_version_match="NotOlderThan"``, the
        default), or at exactly N (``"Exact"``; 410 :class:`Gone` once
        compacted). A revision the server has not reached waits for it up to
        ``BLOCK_TIMEOUT`` (3 s, as the watch cache does), then fails with
        :class:`TooLargeResourceVersion` (504). ``at=N`` is ``resource_version="N",
        resource_version_match="Exact"`` (a ``continue`` token's snapshot). :attr:`listed_rv`
        is the revision the list was served at (its ``metadata.resourceVersion``).
        """
        if at is not None:
            resource_version, resource_version_match = str(at), "Exact"
        await self._enter("list", kind, namespace or "", "*")
        out = await self._list(kind, namespace, selector, resource_version, resource_version_match)
        if self._world._fp is not None:
            self._touch_listed(kind, namespace, out)
        return out

    async def _list(
        self, kind: str, namespace: str | None, selector: dict[str, str] | None, resource_version: str,
        resource_version_match: str,
    ) -> builtins.list[KubeObject]:
        self.listed_rv = self._rv
        if resource_version not in ("", "0") or resource_version_match:
            return await self._list_at(kind, namespace, selector, resource_version, resource_version_match)
        if resource_version == "0":
            stale = self.stale_revision(kind, f"list {kind} served by a lagging watch cache")
            if stale is not None:
                return self._list_stale(kind, namespace, selector, stale)
        return [o.deepcopy() for o in self._select(kind, namespace, selector)]

    def _list_stale(
        self, kind: str, namespace: str | None, selector: dict[str, str] | None, stale: tuple[int, str, float]
    ) -> builtins.list[KubeObject]:
        self.listed_rv = stale[0]
        if self._world.noting:
            self._world.note(f"LIST {kind} served by a lagging watch cache at rv={stale[0]} (the revision "
                             f"of {stale[1]}; the apiserver is at rv={self._rv})", kind="list", rv=stale[0],
                             stale=True)
        return [
            o.deepcopy()
            for o in self.snapshot_at(kind, stale[0])
            if (namespace is None or o.namespace == namespace) and o.matches(selector)
        ]

    async def _list_at(
        self, kind: str, namespace: str | None, selector: dict[str, str] | None, resource_version: str, match: str
    ) -> builtins.list[KubeObject]:
        """A LIST with ``resourceVersion``/``resourceVersionMatch`` (``cacher/watch_cache.go`` ``waitUntilFreshAndList``)."""
        problem = ""  # apimachinery ValidateListOptions
        if match not in ("", "NotOlderThan", "Exact"):
            problem = f'resourceVersionMatch: Unsupported value: "{match}": supported values: "NotOlderThan", "Exact", ""'
        elif match and not resource_version:
            problem = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
        elif match == "Exact" and resource_version == "0":
            problem = 'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
        elif not resource_version.isdigit():
            problem = f"resourceVersion: Invalid value: {resource_version!r}: must be a revision (digits)"
        if problem:
            raise self._error("list", kind, Invalid(f'ListOptions.meta.k8s.io "" is invalid: {problem}'))
        rv = int(resource_version)
        if rv > self._rv:
            fresh = self._world.Event()
            waiter = (rv, fresh)
            self._fresh_waiters.append(waiter)
            try:
                with self._world.move_on_after(BLOCK_TIMEOUT):
                    await fresh.wait(f"list {kind} waits for the watch cache to reach rv={rv}")
            finally:
                self._fresh_waiters.remove(waiter)
            if rv > self._rv:
                if self._world.noting:
                    self._world.note(f"LIST {kind} at rv={rv}: the watch cache is still at rv={self._rv} after "
                                     f"{BLOCK_TIMEOUT:g} s", kind="list", rv=rv)
                raise self._error("list", kind, TooLargeResourceVersion.of(rv, self._rv))
        if match == "Exact":
            if rv < self.compacted_rv:
                raise self._error("list", kind, Gone.of(kind, rv, self.compacted_rv))
            self.listed_rv = rv
            return [
                o.deepcopy()
                for o in self.snapshot_at(kind, rv)
                if (namespace is None or o.namespace == namespace) and o.matches(selector)
            ]
        if rv > 0:
            stale = self.stale_revision(kind, f"list {kind} served by a lagging watch cache", not_older_than=rv)
        else:
            stale = self.stale_revision(kind, f"list {kind} served by a lagging watch cache")
        if stale is not None:
            return self._list_stale(kind, namespace, selector, stale)
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
        obj = self._store.get(kind, {}).get(f"{namespace}/{name}" if namespace else name)
        if self._world._fp is not None:
            ref = object_ref(kind, namespace, name)
            self._world.touch(ref, said=f"{ref}: " + ("absent" if obj is None else f"rv={obj.resource_version}"))
        return None if obj is None else obj.deepcopy()

    def peek_all(self, kind: str) -> builtins.list[KubeObject]:
        """Every stored object of a kind, copied, without a yield point: for oracles only."""
        objects = [o.deepcopy() for o in self._store.get(kind, {}).values()]
        if self._world._fp is not None:  # the whole kind: a delete is what such a read misses
            self._touch_listed(kind, None, objects)
        return objects

    def _touch_listed(self, kind: str, namespace: str | None, objects: builtins.list[KubeObject]) -> None:
        """The reads of a LIST: each object returned, and the kind's set of names (a delete is what it misses)."""
        world = self._world
        for o in objects:
            world.touch(o.ref, said=f"rv={o.resource_version}")
        names = ", ".join(o.name for o in objects[:6]) + (", ..." if len(objects) > 6 else "")
        where = f" in {namespace}" if namespace else ""
        world.touch(f"{kind} *", said=f"LIST {kind}{where}: {len(objects)}" + (f" ({names})" if objects else ""))

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
        try:
            obj = build(cur.deepcopy())
        except ApiError as err:
            raise self._error(verb, kind, err, ref) from None
        self._check_update(verb, obj, cur)
        new = cur.deepcopy()
        if status_only:
            new.status = copy_json(obj.status)
        else:
            new.labels, new.annotations = dict(obj.labels), dict(obj.annotations)
            new.owner_references, new.finalizers = list(obj.owner_references), list(obj.finalizers)
            new.extra = copy_json(obj.extra)
            if not keep_status:
                new.status = copy_json(obj.status)
            if obj.spec != cur.spec:
                new.spec = copy_json(obj.spec)
                new.generation = cur.generation + 1
        out = self._write(cur, new).deepcopy()
        return await self._respond(verb, kind, ref, out)

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
        if not finalizers and grace == 0:
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

    # ------------------------------------------------------------ HTTP API
    def transport(
        self,
        client: str = "client",
        *,
        max_lag: float | None = None,
        latency: float = 0.0,
        watch_drops: bool = False,
        watch_ends: bool = False,
        compactions: bool = False,
    ) -> Any:
        """An httpx transport speaking the Kubernetes API to this apiserver, for a real client inside the world.

        ``lightkube.AsyncClient(config, transport=api.transport(client="op"))``
        or ``httpx.AsyncClient(transport=..., base_url="http://kube")``: every
        request is this apiserver's own yield point (and a write's response its
        own), and each watch connection is a stream of deliveries named
        ``"<client>/watch/<Kind>"`` with an informer's window (``max_lag``,
        ``latency``) and fault points (``watch_drops``, ``watch_ends``,
        ``compactions``). See ``harness/kube/_http/``, which makes the transport.
        """
        if _transport_maker is None:  # harness.kube imports the HTTP API, which installs it
            raise RuntimeError("no HTTP API is installed: import harness.kube")
        return _transport_maker(self, client, max_lag=max_lag, latency=latency, watch_drops=watch_drops,
                                watch_ends=watch_ends, compactions=compactions)

    # ---------------------------------------------------------------- watch
    def watch(self, kind: str, sink: Sink) -> Callable[[], None]:
        """Register ``sink`` for every later event of ``kind``; returns a function that stops it.

        Sinks are called synchronously at commit, in revision order; informers
        queue the event and deliver it later as their own scheduled step.
        """
        self._world.touch(f"{kind} *", decides=False)
        sinks = self._watchers.setdefault(kind, [])
        sinks.append(sink)

        def stop() -> None:
            if sink in sinks:
                sinks.remove(sink)

        return stop

    def snapshot(self, kind: str) -> tuple[builtins.list[KubeObject], int]:
        """The committed objects of a kind and the revision they are current at (a LIST for informers)."""
        self._world.touch(f"{kind} *", decides=False)
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
        self._world.touch(f"{kind} *", _REVISION, decides=False)
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
        self._world.touch(f"{kind} *", _REVISION, decides=False)
        if rv < self.compacted_rv:
            raise Gone.of(kind, rv, self.compacted_rv)
        return [ev for _when, ev in self._log if ev.object.kind == kind and ev.object.resource_version > rv]

    def compact(self) -> int:
        """Compact the history up to the current revision (etcd compaction): older watches get 410 Gone."""
        self._world.touch(_REVISION, write=True, decides=False)
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
            name = revision_name(ev.type, obj, n)
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
        # the model's flag is the default; a search that names the fault kinds itself (--faults all) overrides it
        default = self._stale if isinstance(self._stale, bool) else kind in self._stale
        if not self._world.fault_enabled("stale_read", default):
            return None
        for rv, name, until in self.stale_revisions(kind, not_older_than):
            if self._world.fault("stale_read", f"{label} at the revision of {name}", key=kind, default=default):
                return rv, name, until
        return None


def revision_name(event_type: str, obj: KubeObject, n: int) -> str:
    """A revision named by the event that made it, as a plan names it ("MODIFIED default/rmq #2 (deleting)"):
    the ``n``-th event of that type for the object, never its number (numbers shift when a plan entry goes)."""
    return f"{event_type} {obj.key}" + (f" #{n}" if n > 1 else "") + (
        " (deleting)" if event_type != DELETED and obj.deletion_timestamp is not None else "")


def spec_digest(obj: KubeObject) -> str:
    """A short fingerprint of the object's ``spec`` (the write notes carry it): two revisions of one object whose
    desired state differs (a StatefulSet's replicas, a volume's requested size) have different fingerprints."""
    text = json.dumps(obj.spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


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


#: the footprint resource of the revision counter (and the history it indexes), shared by every kind
_REVISION = "revision"


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


def serve_transports(maker: Callable[..., Any]) -> None:
    """Install what :meth:`APIServer.transport` makes its transports with (the HTTP API's ``Transport``)."""
    global _transport_maker
    _transport_maker = maker


def apiservers_of(world: World) -> list[APIServer]:
    """The apiservers a run built, in creation order: a public handle for oracles and after-run checks.

    Keep the run's ``world`` (a scenario may store it) and call this once the
    run has ended to read the final objects with ``peek``/``peek_all``.
    """
    return list(world.state.get("_kube_apiservers", []))


def changed_fields(old: KubeObject | None, new: KubeObject, limit: int = 4) -> str:
    """What an update changed, as a story says it: ``": status.phase Pending -> Running; spec.replicas 2 -> 3"``.

    Leaf paths of labels, annotations, finalizers, ownerReferences, the
    deletion mark, spec and status that differ; at most ``limit``, then how
    many more. Built only for a told run (a story), never in a search.
    """
    if old is None:
        return ""
    out: list[str] = []

    def walk(path: str, a: Any, b: Any) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in dict.fromkeys([*a, *b]):
                walk(f"{path}.{k}" if path else str(k), a.get(k), b.get(k))
            return
        out.append(f"{path} {_short(a)} -> {_short(b)}")

    walk("metadata.labels", old.labels, new.labels)
    walk("metadata.annotations", old.annotations, new.annotations)
    walk("metadata.finalizers", old.finalizers, new.finalizers)
    walk("metadata.ownerReferences", [r.name for r in old.owner_references], [r.name for r in new.owner_references])
    walk("metadata.deletionTimestamp", old.deletion_timestamp, new.deletion_timestamp)
    walk("spec", old.spec, new.spec)
    walk("status", old.status, new.status)
    if not out:
        return ""
    more = f"; {len(out) - limit} more" if len(out) > limit else ""
    return ": " + "; ".join(out[:limit]) + more


def _short(value: Any) -> str:
    if value is None:
        return "(none)"
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
