"""Shared informers: one watch stream per informer, a lister cache, event handlers (section 0.4).

Follows ``k8s.io/client-go/tools/cache``: ``reflector.go`` (list, then watch
from the list's revision; a dropped watch relists), ``delta_fifo.go``
(``Replace`` turns keys missing from a relist into ``DeletedFinalStateUnknown``),
``shared_informer.go`` ``HandleDeltas``/``processDeltas`` (the indexer is
updated **first**, then every handler is notified).

Delivery is a chain of harness timers, one pending at a time per informer:
delivering one event is exactly one scheduled action labelled
``"informer/Pod deliver DELETED ns/p1 rv=12"`` (key ``"Pod ns/p1"``). Events
of one informer are delivered in revision order; different informers are
independent chains, so the scheduler may deliver a later Pod event before an
earlier Queue event. Cache lag therefore comes from scheduling itself, plus an
optional ``latency`` in virtual seconds. Rejected: a daemon actor blocked on a
harness ``Queue``, because its wait is registered before the event exists, so
the trace would read "wait" instead of naming the event, and an idle actor
needs a second step per event.

Handlers are plain synchronous functions, as in client-go
(``ResourceEventHandlerFuncs``), and receive copies. By default they run in the
same step as the store update. ``handler_lag=True`` gives them their own chain
(actor ``"<informer>/handler"``), as client-go's per-listener goroutine does, so
"the store is ahead of the handlers" (0.4b) becomes explorable, at the price of
one more step per event.

Faults, each off unless its flag is set and each a ``world.choose`` whose 0 is
"no fault": ``watch_drops`` (the watch breaks before an event; the events still
queued are lost and the next step is a relist that coalesces intermediate
states, adds missed creates and tombstones missed deletes) and
``duplicates`` (the event is delivered twice, the second as an update with
old == new).
"""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from harness.sim import TimerHandle, World

from ._apiserver import DELETED, APIServer, WatchEvent
from ._errors import NotFound
from ._objects import KubeObject
from ._process import ControllerProcess


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A delete seen only through a relist: ``obj`` is the last state the cache had."""

    key: str
    obj: KubeObject


OnAdd = Callable[[KubeObject], None]
OnUpdate = Callable[[KubeObject, KubeObject], None]
OnDelete = Callable[["KubeObject | DeletedFinalStateUnknown"], None]


class Lister:
    """The read side of an informer's indexer; every read returns copies."""

    __slots__ = ("_store", "kind")

    def __init__(self, kind: str, store: dict[str, KubeObject]) -> None:
        self.kind = kind
        self._store = store

    def get(self, namespace: str, name: str) -> KubeObject:
        """``Lister.Get``: the cached object, or :class:`NotFound` (as the generated listers return)."""
        obj = self._store.get(f"{namespace}/{name}" if namespace else name)
        if obj is None:
            raise NotFound.of(self.kind, name)
        return obj.deepcopy()

    def try_get(self, namespace: str, name: str) -> KubeObject | None:
        obj = self._store.get(f"{namespace}/{name}" if namespace else name)
        return None if obj is None else obj.deepcopy()

    def list(self, namespace: str | None = None, selector: dict[str, str] | None = None) -> builtins.list[KubeObject]:
        """``Lister.List``: cached objects (cache insertion order), by namespace and labels."""
        return [
            o.deepcopy()
            for o in self._store.values()
            if (namespace is None or o.namespace == namespace) and o.matches(selector)
        ]

    def resource_version(self, namespace: str, name: str) -> int | None:
        """The cached RV of a key without copying (for oracles)."""
        obj = self._store.get(f"{namespace}/{name}" if namespace else name)
        return None if obj is None else obj.resource_version

    def list_keys(self) -> builtins.list[str]:
        """``ListKeys``: the cached ``namespace/name`` keys."""
        return list(self._store)

    def __len__(self) -> int:
        return len(self._store)


_Handler = tuple["OnAdd | None", "OnUpdate | None", "OnDelete | None"]
# A pending notification: (what, old, new) with what in "add", "update", "delete".
_Note = tuple[str, "KubeObject | DeletedFinalStateUnknown | None", "KubeObject | DeletedFinalStateUnknown"]


class Informer:
    """A shared index informer for one kind: ``start()``, ``lister``, ``add_event_handler``."""

    def __init__(
        self,
        world: World,
        api: APIServer,
        kind: str,
        *,
        name: str | None = None,
        resync_period: float = 0.0,
        latency: float = 0.0,
        handler_lag: bool = False,
        watch_drops: bool = False,
        duplicates: bool = False,
        process: ControllerProcess | None = None,
    ) -> None:
        self._world = world
        self._api = api
        self.kind = kind
        self.name = name or f"informer/{kind}"
        self.resync_period = resync_period
        self.latency = latency
        self.handler_lag = handler_lag
        self.watch_drops = watch_drops
        self.duplicates = duplicates
        self._store: dict[str, KubeObject] = {}
        self.lister = Lister(kind, self._store)
        # Reports find the run's informers here to compare caches with the apiserver (harness.report).
        world.state.setdefault("_kube_informers", []).append(self)
        self._handlers: list[_Handler] = []
        self._stream: deque[WatchEvent] = deque()
        self._needs_list = True
        self._timer: TimerHandle | None = None
        self._notes: deque[_Note] = deque()
        self._note_timer: TimerHandle | None = None
        self._resync_timer: TimerHandle | None = None
        self._stop_watch: Callable[[], None] | None = None
        self._started = False
        self._stopped = False
        self._synced = world.Event()
        #: key -> revision of the last event (or relist state) this informer delivered
        self.delivered_rv: dict[str, int] = {}
        self.delivered = 0
        self.relists = 0
        if process is not None:
            process.on_crash(self.stop)

    # ---------------------------------------------------------------- setup
    def add_event_handler(
        self, on_add: OnAdd | None = None, on_update: OnUpdate | None = None, on_delete: OnDelete | None = None
    ) -> None:
        """``AddEventHandler(ResourceEventHandlerFuncs{...})``; add handlers before ``start``."""
        self._handlers.append((on_add, on_update, on_delete))

    def start(self) -> None:
        """Open the watch now; the initial LIST is the informer's first scheduled step."""
        if self._started:
            return
        self._started = True
        self._stop_watch = self._api.watch(self.kind, self._on_event)
        self._pump()
        if self.resync_period > 0:
            self._schedule_resync()

    def stop(self) -> None:
        """Close the watch and drop everything pending (a crash, or ``stopCh`` closed)."""
        self._stopped = True
        if self._stop_watch is not None:
            self._stop_watch()
        for t in (self._timer, self._note_timer, self._resync_timer):
            if t is not None:
                t.cancel()
        self._stream.clear()
        self._notes.clear()

    def has_synced(self) -> bool:
        """``HasSynced``: the initial list has been delivered."""
        return self._synced.is_set()

    async def wait_for_cache_sync(self) -> None:
        """``cache.WaitForCacheSync``: a yield point enabled once the initial list is in."""
        await self._synced.wait(f"{self.name} wait for cache sync")

    @property
    def pending(self) -> int:
        """Events received from the apiserver but not yet delivered."""
        return len(self._stream)

    # ------------------------------------------------------------- delivery
    def _on_event(self, event: WatchEvent) -> None:
        if self._stopped:
            return
        self._stream.append(event)
        if self._timer is None:
            self._pump()

    def _pump(self) -> None:
        if self._stopped or self._timer is not None:
            return
        if self._needs_list:
            label = f"{self.name} list"
            key = None
            rv = None
        elif self._stream:
            ev = self._stream[0]
            obj = ev.object
            label = f"{self.name} deliver {ev.type} {obj.key} rv={obj.resource_version}"
            key = obj.ref
            rv = obj.resource_version
        else:
            return
        self._timer = self._world.call_later(self.latency, self._deliver, label=label, actor=self.name, key=key, rv=rv)

    def _deliver(self) -> None:
        self._timer = None
        if self._stopped:
            return
        if self._needs_list:
            self._relist()
        elif self._stream:
            ev = self._stream[0]
            world = self._world
            head = f"{ev.type} {ev.object.key} rv={ev.object.resource_version}"
            if self.watch_drops and world.choose(f"fault: {self.name} watch drops before {head}", 2):
                self._stream.clear()
                self._needs_list = True
            else:
                self._stream.popleft()
                if self.duplicates and world.choose(f"fault: {self.name} delivers {head} twice", 2):
                    self._stream.appendleft(ev)
                self._apply(ev)
        self._pump()

    def _apply(self, ev: WatchEvent) -> None:
        obj = ev.object
        key = obj.key
        old = self._store.get(key)
        self.delivered += 1
        self.delivered_rv[key] = obj.resource_version
        if ev.type == DELETED:
            self._store.pop(key, None)
            self._notify("delete", old, obj)
        else:
            self._store[key] = obj
            if old is None:
                self._notify("add", None, obj)
            else:
                self._notify("update", old, obj)

    def _relist(self) -> None:
        """``Reflector.ListAndWatch`` + ``DeltaFIFO.Replace`` against the current server state."""
        objects, _rv = self._api.snapshot(self.kind)
        self._stream.clear()  # everything queued so far is covered by the list
        self._needs_list = False
        self.relists += 1
        listed: dict[str, KubeObject] = {o.key: o for o in objects}
        for key, obj in listed.items():
            old = self._store.get(key)
            self._store[key] = obj
            self.delivered_rv[key] = obj.resource_version
            self._notify("add" if old is None else "update", old, obj)
        for key in [k for k in self._store if k not in listed]:
            last = self._store.pop(key)
            self._notify("delete", None, DeletedFinalStateUnknown(key, last))
        if not self._synced.is_set():
            self._synced.set()

    # -------------------------------------------------------------- handlers
    def _notify(
        self, what: str, old: KubeObject | DeletedFinalStateUnknown | None, new: KubeObject | DeletedFinalStateUnknown
    ) -> None:
        if not self._handlers:
            return
        if not self.handler_lag:
            self._run_handlers(what, old, new)
            return
        self._notes.append((what, old, new))
        if self._note_timer is None:
            self._pump_notes()

    def _pump_notes(self) -> None:
        if self._stopped or not self._notes:
            return
        what, _old, new = self._notes[0]
        obj = new.obj if isinstance(new, DeletedFinalStateUnknown) else new
        label = f"{self.name} handle {what} {obj.key} rv={obj.resource_version}"
        self._note_timer = self._world.call_later(
            0.0, self._handle_next, label=label, actor=f"{self.name}/handler", key=obj.ref
        )

    def _handle_next(self) -> None:
        self._note_timer = None
        if self._stopped or not self._notes:
            return
        what, old, new = self._notes.popleft()
        self._run_handlers(what, old, new)
        self._pump_notes()

    def _run_handlers(
        self, what: str, old: KubeObject | DeletedFinalStateUnknown | None, new: KubeObject | DeletedFinalStateUnknown
    ) -> None:
        for on_add, on_update, on_delete in self._handlers:
            if what == "add":
                if on_add is not None:
                    assert isinstance(new, KubeObject)
                    on_add(new.deepcopy())
            elif what == "update":
                if on_update is not None:
                    assert isinstance(new, KubeObject) and isinstance(old, KubeObject)
                    on_update(old.deepcopy(), new.deepcopy())
            elif on_delete is not None:
                on_delete(
                    DeletedFinalStateUnknown(new.key, new.obj.deepcopy())
                    if isinstance(new, DeletedFinalStateUnknown)
                    else new.deepcopy()
                )

    # ---------------------------------------------------------------- resync
    def _schedule_resync(self) -> None:
        self._resync_timer = self._world.call_later(
            self.resync_period, self._resync, label=f"{self.name} resync", actor=self.name
        )

    def _resync(self) -> None:
        """Every cached object re-delivered as ``OnUpdate(old == new)``, with no apiserver call."""
        if self._stopped:
            return
        if self.has_synced():
            for obj in list(self._store.values()):
                self._notify("update", obj, obj)
        self._schedule_resync()

