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

This module is the apiserver's public surface: its reads, its verbs, the watch
cache's history (snapshots, compaction, stale revisions) and its counters. The
write machinery below the verbs is its base class, ``_registry.py``; the event
types and how a revision is named, ``_revisions.py``; JSON merge, ``_merge.py``.
It knows nothing of HTTP: the HTTP API (``_http/``) installs what
:meth:`APIServer.transport` makes.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable
from typing import Any

from harness.sim import Event, World

from ._errors import Gone, Invalid, TooLargeResourceVersion
from ._lifecycle import SYSTEM_NAMESPACES, invalid_namespace_name
from ._objects import KubeObject, object_ref
from ._registry import REQUEST_LATENCY, Registry
from ._revisions import _REVISION, DELETED, Sink, WatchEvent, revision_name

#: What makes :meth:`APIServer.transport`'s transports: the HTTP API (``harness/kube/_http/``) installs its own
#: when it is imported (``harness.kube`` imports it), so the apiserver imports nothing of HTTP.
_transport_maker: Callable[..., Any] | None = None

#: ``cacher/watch_cache.go`` ``blockTimeout``: how long a LIST at a resourceVersion the watch cache has not
#: reached waits for it before the 504 "Too large resource version"
BLOCK_TIMEOUT = 3.0


class APIServer(Registry):
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

    Namespaces: as kube-apiserver, it starts with ``kube-system``,
    ``kube-public``, ``kube-node-lease`` and ``default`` (Active, with the
    ``kubernetes`` finalizer; revisions 1 to 4 and uids ``uid-0001`` to
    ``uid-0004``, taken at construction without a step), and
    ``namespaces=("team-a",)`` adds more the same way (a cluster whose
    namespaces were made before the run). A create or update of an object in
    a namespace that does not exist is 404 ``namespaces "x" not found``, a
    create in a Terminating one is 403 (the NamespaceLifecycle admission:
    ``_lifecycle.py``); a scenario makes its namespace first, as on a cluster
    (``await api.create(KubeObject("Namespace", "", "team-a"))``), or names
    it here. A deleted Namespace stays Terminating unless a namespace
    controller runs (:func:`~harness.kube.start_cluster`).

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
        namespaces: Iterable[str] = (),
    ) -> None:
        if isinstance(namespaces, str):
            namespaces = (namespaces,)
        namespaces = tuple(namespaces)
        for name in namespaces:
            problem = invalid_namespace_name(name)
            if problem:
                raise ValueError(f"APIServer(namespaces=...): {name!r} {problem}; give DNS-1123 labels such as "
                                 "'team-a' (lower-case letters, digits and '-', at most 63 characters)")
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
        self._bootstrap_namespaces((*SYSTEM_NAMESPACES, *namespaces))
        #: the revision the cluster's own objects (its namespaces) end at: what the run starts from, not its changes
        self.bootstrap_revision = self._rv
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

    async def confirm_delete(self, namespace: str, name: str, uid: str | None = None) -> KubeObject:
        """The kubelet's final DELETE of a terminating Pod (grace period 0, uid precondition)."""
        return await self.delete("Pod", namespace, name, uid=uid, grace_period_seconds=0)

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
