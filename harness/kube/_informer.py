"""Shared informers: a reflector, a lister cache, event handlers (section 0.4).

Follows ``k8s.io/client-go/tools/cache``: ``reflector.go`` (list, then watch
from the list's revision; a watch that ends re-watches from the last revision
it saw; 410 Gone or a failed call relists after a backoff),
``delta_fifo.go`` (``Replace`` turns keys missing from a relist into
``DeletedFinalStateUnknown``), ``shared_informer.go``
``HandleDeltas``/``processDeltas`` (the indexer is updated **first**, then
every handler is notified).

Time (a window per delivery, explored by the search)
----------------------------------------------------
A watch **pipelines**: every event the server commits is in flight at once, in
revision order, and each may be delivered anywhere in
``[commit + latency, commit + latency + max_lag]``. The canonical run delivers
at the nominal time (``latency`` after the commit, 0 by default); a strategy may
postpone an event (and, FIFO, those behind it) inside its window, past another
informer's events or a controller's own timers. ``max_lag`` defaults to
:data:`DEFAULT_MAX_LAG` (2 s: client-go bounds nothing; a loaded apiserver's
watch lags by seconds, and 2 s is past the 1 s requeues and session ticks of
the controllers modelled here; raise it for a loaded cluster). Deliveries of
one informer stay in revision order; across informers and against timers,
anything inside the windows is reachable. Delivering one event is one
scheduled action labelled ``"informer/Pod deliver DELETED ns/p1 rv=12"`` (key
``"Pod ns/p1"``).

Handlers receive copies. By default they run in the same step as the store
update (the canonical runs of the models here depend on it, and a handler that
only enqueues a key behaves the same either way). ``handler_lag=True`` gives
every handler its own ``processorListener`` (``shared_informer.go``): the
indexer is updated when the delta is popped, **before** any handler runs
(``processDeltas``), and ``distribute`` then appends the notification to each
listener's own unbounded buffer, which that listener's goroutine drains in
order. Here each listener is a chain of scheduled steps of its own (actor
``"<informer>/handler"`` for the first handler, ``"<informer>/handler-<n>"``
for the n-th), each inside a ``max_lag`` window, so "the lister is ahead of
what a handler has seen" (0.4b) and "two handlers of one informer lag
differently" are both explorable. A handler registered after the informer
synced always gets a listener of its own (``"<informer>/late-handler-<n>"``),
whose buffer starts with one synthetic Add per cached object, as
``AddEventHandler`` on a started informer does.

A listener's handler may be ``async def`` and await the API, as upstream
handlers do (volcano's podgroup controller deletes a PodGroup inside its
ReplicaSet handler): client-go calls handlers synchronously on the listener's
goroutine, so while the handler waits for the apiserver that listener delivers
nothing more, while the indexer and the other listeners go on. The awaiting
runs in an actor named like the listener (one per async listener), so its
requests are yield points, fault points and crash points like any other
actor's. Without ``handler_lag`` handlers run inside the delivery step, which
cannot await: an ``async def`` handler is refused at registration there.

Faults (``world.fault`` points; the flag is the default when the search does
not name the kinds itself)
------------------------------------------------------------------
``watch_drop`` (``watch_drops=True``)
    the shorthand "drop and relist": the watch breaks before an event; events
    the server had not yet delivered are replaced by a relist that coalesces
    intermediate states, adds missed creates and tombstones missed deletes.
``watch_end`` (``watch_ends=True``)
    the watch ends before an event and the reflector re-watches from the last
    revision it saw: nothing lost, nothing duplicated, only later.
``compaction`` (``compactions=True``)
    at a re-watch, the server has compacted past the reflector's revision: 410
    Gone, then a relist after client-go's backoff (800 ms doubling to 30 s,
    jitter up to the same again, reset after 2 minutes of health).
``duplicate`` (``duplicates=True``)
    the event is delivered twice, the second as an update with old == new.
``stale_read`` (the apiserver's ``stale_reads=True``)
    a LIST is served by a watch cache lagging ``stale_window`` seconds (a
    restarted controller that lists from a stale apiserver: "time travel");
    the watch then continues from that older revision.
"""

from __future__ import annotations

import builtins
import inspect
import math
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from harness._errors import UsageError
from harness.sim import Queue, TimerHandle, World

from ._apiserver import DELETED, APIServer, WatchEvent
from ._errors import Gone, NotFound
from ._objects import KubeObject
from ._process import ControllerProcess

#: default ``max_lag``: seconds an informer event may come after its nominal time
DEFAULT_MAX_LAG = 2.0
#: client-go reflector backoff (``wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)``)
BACKOFF_INITIAL = 0.8
BACKOFF_CAP = 30.0
BACKOFF_RESET = 120.0
BACKOFF_JITTER = 1.0


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
# A pending notification: (what, old, new) with what in "add", "update", "delete",
# or "synthetic add" (a late listener's Add for an object already cached).
_Note = tuple[str, "KubeObject | DeletedFinalStateUnknown | None", "KubeObject | DeletedFinalStateUnknown"]


def _call(handler: _Handler, what: str, old: KubeObject | DeletedFinalStateUnknown | None,
          new: KubeObject | DeletedFinalStateUnknown) -> object:
    """Call the function of ``handler`` for one notification with copies; returns what it returned."""
    on_add, on_update, on_delete = handler
    if what in ("add", "synthetic add"):
        if on_add is not None:
            assert isinstance(new, KubeObject)
            return on_add(new.deepcopy())
    elif what == "update":
        if on_update is not None:
            assert isinstance(new, KubeObject) and isinstance(old, KubeObject)
            return on_update(old.deepcopy(), new.deepcopy())
    elif on_delete is not None:
        return on_delete(
            DeletedFinalStateUnknown(new.key, new.obj.deepcopy())
            if isinstance(new, DeletedFinalStateUnknown)
            else new.deepcopy()
        )
    return None


class _Listener:
    """client-go's ``processorListener``: one handler, its own buffer, its own goroutine.

    ``add`` appends to the buffer (client-go's ``pendingNotifications`` ring
    grows without bound, so ``distribute`` never waits for a slow handler);
    the head is handled in a scheduled step of the listener's own actor, inside
    a ``max_lag`` window, and the next one only after it returns. An ``async
    def`` handler's coroutine is handed to the listener's actor and awaited
    there; the listener stays busy, delivering nothing, until it returns (the
    Go handler blocks its ``run`` goroutine the same way).
    """

    __slots__ = ("_calls", "_informer", "actor", "busy", "handler", "notes", "timer")

    def __init__(self, informer: Informer, handler: _Handler, actor: str) -> None:
        self._informer = informer
        self.handler = handler
        self.actor = actor
        self.notes: deque[_Note] = deque()
        self.timer: TimerHandle | None = None
        self.busy = False  # an async handler is awaiting
        self._calls: Queue[Coroutine[Any, Any, object]] | None = None
        if any(fn is not None and inspect.iscoroutinefunction(fn) for fn in handler):
            self._start_runner()

    def _start_runner(self) -> None:
        """The listener's goroutine as an actor, for the handler's awaits (crashes with the informer's process)."""
        inf = self._informer
        calls: Queue[Coroutine[Any, Any, object]] = inf._world.Queue()
        self._calls = calls

        async def serve() -> None:
            while True:
                coro = await calls.get(f"{inf.name} await handler")
                try:
                    await coro
                finally:
                    self.busy = False
                    self.pump()

        if inf._process is not None:
            inf._process.spawn(self.actor, serve, daemon=True)
        else:
            inf._world.spawn(self.actor, serve, daemon=True)

    def add(self, note: _Note) -> None:
        self.notes.append(note)
        if self.timer is None and not self.busy:
            self.pump()

    def pump(self) -> None:
        inf = self._informer
        if inf._stopped or not self.notes or self.timer is not None or self.busy:
            return
        what, _old, new = self.notes[0]
        obj = new.obj if isinstance(new, DeletedFinalStateUnknown) else new
        verb = what if what == "synthetic add" else f"handle {what}"
        self.timer = inf._world.call_later(
            0.0, self._handle_next, label=f"{inf.name} {verb} {obj.key} rv={obj.resource_version}",
            actor=self.actor, key=obj.ref, window=inf.max_lag,
        )

    def _handle_next(self) -> None:
        self.timer = None
        inf = self._informer
        if inf._stopped or not self.notes:
            return
        what, old, new = self.notes.popleft()
        result = _call(self.handler, what, old, new)
        if inspect.iscoroutine(result):
            assert self._calls is not None, "a handler that returns a coroutine is refused at registration"
            self.busy = True
            self._calls.put_nowait(result)
            return
        self.pump()

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.notes.clear()



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
        max_lag: float | None = None,
        handler_lag: bool = False,
        watch_drops: bool = False,
        watch_ends: bool = False,
        compactions: bool = False,
        duplicates: bool = False,
        process: ControllerProcess | None = None,
    ) -> None:
        self._world = world
        self._api = api
        self.kind = kind
        self.name = name or f"informer/{kind}"
        self.resync_period = resync_period
        self.latency = latency
        #: seconds an event may be delivered after its nominal time (a strategy's choice)
        self.max_lag = DEFAULT_MAX_LAG if max_lag is None else max_lag
        self.handler_lag = handler_lag
        self.watch_drops = watch_drops
        self.watch_ends = watch_ends
        self.compactions = compactions
        self.duplicates = duplicates
        self._store: dict[str, KubeObject] = {}
        self.lister = Lister(kind, self._store)
        # Reports find the run's informers here to compare caches with the apiserver (harness.report).
        world.state.setdefault("_kube_informers", []).append(self)
        self._process = process
        # handlers run inside the delivery step (no handler_lag, registered before sync)
        self._handlers: list[_Handler] = []
        # handlers with a processorListener of their own (handler_lag, or registered after sync)
        self._listeners: list[_Listener] = []
        self._registered = 0
        # events the server has sent and the reflector not yet delivered, with their commit times
        self._stream: deque[tuple[WatchEvent, float]] = deque()
        self._needs_list = True
        self._list_at = 0.0  # nominal time of the next LIST
        self._list_window = self.max_lag
        self._rewatch = False  # a re-watch from _last_rv is pending
        self._last_rv = 0
        self._failures = 0
        self._last_failure = -math.inf
        self._timer: TimerHandle | None = None
        self._resync_timer: TimerHandle | None = None
        self._stop_watch: Callable[[], None] | None = None
        self._started = False
        self._stopped = False
        self._synced = world.Event()
        #: key -> revision of the last event (or relist state) this informer delivered
        self.delivered_rv: dict[str, int] = {}
        self.delivered = 0
        self.relists = 0
        self.rewatches = 0
        if process is not None:
            process.on_crash(self.stop)

    # ---------------------------------------------------------------- setup
    def add_event_handler(
        self, on_add: OnAdd | None = None, on_update: OnUpdate | None = None, on_delete: OnDelete | None = None
    ) -> None:
        """``AddEventHandler(ResourceEventHandlerFuncs{...})``.

        With ``handler_lag=True`` the handler gets a listener of its own (see
        the module docstring) and may be ``async def``. Without it, handlers run
        inside the delivery step, which cannot await: a coroutine function there
        is refused here, because it would be called and never awaited (Python
        only warns, and the run would go on as if it had run).

        A handler added after the informer synced gets a listener of its own
        whatever ``handler_lag`` says, whose buffer starts with one synthetic Add
        per cached object (in the order the cache holds the keys), as client-go's
        ``sharedIndexInformer.AddEventHandler`` does for a listener that joins
        late (``shared_informer.go``): they come as scheduled steps of
        ``"<informer>/late-handler-<n>"``, each inside a ``max_lag`` window, only
        to the new handler, and before any later notification to it.
        """
        handler: _Handler = (on_add, on_update, on_delete)
        if not self.handler_lag:
            for what, fn in (("on_add", on_add), ("on_update", on_update), ("on_delete", on_delete)):
                if fn is not None and inspect.iscoroutinefunction(fn):
                    raise UsageError(
                        f"{self.name}: the {what} handler {getattr(fn, '__qualname__', fn)!r} is a coroutine "
                        "function (async def), but without handler_lag informer handlers run inside the delivery "
                        "step and are called, not awaited, so its body would never run. Pass "
                        f"Informer(..., handler_lag=True) to give each handler a listener of its own that may "
                        "await the API (client-go's processorListener), or make it a plain function that "
                        "enqueues a key and await the API in the controller's reconcile."
                    )
        self._registered += 1
        n = self._registered
        late = self.has_synced()
        if not late and not self.handler_lag:
            self._handlers.append(handler)
            return
        actor = f"{self.name}/late-handler-{n}" if late else (
            f"{self.name}/handler" if n == 1 else f"{self.name}/handler-{n}"
        )
        listener = _Listener(self, handler, actor)
        self._listeners.append(listener)
        if late and on_add is not None:
            for obj in self._store.values():
                listener.add(("synthetic add", None, obj))

    def start(self) -> None:
        """Open the watch now; the initial LIST is the informer's first scheduled step."""
        if self._started:
            return
        self._started = True
        self._stop_watch = self._api.watch(self.kind, self._on_event)
        self._list_at = self._world.now + self.latency
        self._pump()
        if self.resync_period > 0:
            self._schedule_resync()

    def stop(self) -> None:
        """Close the watch and drop everything pending (a crash, or ``stopCh`` closed)."""
        self._stopped = True
        if self._stop_watch is not None:
            self._stop_watch()
        for t in (self._timer, self._resync_timer):
            if t is not None:
                t.cancel()
        self._stream.clear()
        for listener in self._listeners:
            listener.stop()

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
        if self._stopped or self._needs_list or self._rewatch:
            return  # a LIST or re-watch to come covers it
        self._stream.append((event, self._world.now))
        if self._timer is None:
            self._pump()

    def _pump(self) -> None:
        if self._stopped or self._timer is not None:
            return
        world = self._world
        if self._needs_list:
            label = f"{self.name} list"
            key = None
            rv = None
            when, latest = self._list_at, self._list_at + self._list_window
            fn = self._do_list
        elif self._rewatch:
            label = f"{self.name} re-watch from rv={self._last_rv}"
            key, rv = None, None
            when, latest = self._list_at, self._list_at + self.max_lag
            fn = self._do_rewatch
        elif self._stream:
            ev, t = self._stream[0]
            obj = ev.object
            label = f"{self.name} deliver {ev.type} {obj.key} rv={obj.resource_version}"
            key = obj.ref
            rv = obj.resource_version
            when = t + self.latency
            latest = when + self.max_lag
            fn = self._deliver
        else:
            return
        self._timer = world.call_at(when, fn, label=label, actor=self.name, key=key, rv=rv, latest=latest)

    def _deliver(self) -> None:
        self._timer = None
        if self._stopped or not self._stream:
            return
        ev, _t = self._stream[0]
        world = self._world
        head = f"{ev.type} {ev.object.key} rv={ev.object.resource_version}"
        if world.fault("watch_drop", f"{self.name} watch drops before {head}", key=ev.object.ref,
                       default=self.watch_drops):
            self._stream.clear()
            self._needs_list = True
            self._list_at = world.now + self.latency
            self._list_window = self.max_lag
        elif world.fault(
            "watch_end",
            f"{self.name} watch ends before {head}; resumes at rv={self._last_rv}",
            key=ev.object.ref,
            default=self.watch_ends,
        ):
            self._stream.clear()
            self._rewatch = True
            self._list_at = world.now + self.latency
        else:
            self._stream.popleft()
            if world.fault("duplicate", f"{self.name} delivers {head} twice", key=ev.object.ref, default=self.duplicates):
                self._stream.appendleft((ev, world.now))
            self._last_rv = max(self._last_rv, ev.object.resource_version)
            self._apply(ev)
        self._pump()

    def _do_rewatch(self) -> None:
        """``Reflector.watch`` resumed from the last seen revision; 410 Gone means relist after backoff."""
        self._timer = None
        if self._stopped:
            return
        self._rewatch = False
        self.rewatches += 1
        world = self._world
        if world.fault(
            "compaction",
            f"{self.name}: the server compacted past rv={self._last_rv} before the re-watch (410 Gone)",
            default=self.compactions,
        ):
            self._api.compact()
        try:
            missed = self._api.events_since(self.kind, self._last_rv)
        except Gone:
            self._relist_after_backoff()
        else:
            now = world.now
            self._stream.extend((ev, now) for ev in missed)
        self._pump()

    def _relist_after_backoff(self) -> None:
        """client-go ``wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)`` (reflector.go)."""
        now = self._world.now
        if now - self._last_failure > BACKOFF_RESET:
            self._failures = 0
        self._failures += 1
        self._last_failure = now
        backoff = min(BACKOFF_INITIAL * 2 ** (self._failures - 1), BACKOFF_CAP)
        self._needs_list = True
        self._stream.clear()
        self._list_at = now + backoff
        self._list_window = backoff * BACKOFF_JITTER  # jitter 1.0: anywhere up to twice the backoff

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

    def _do_list(self) -> None:
        self._timer = None
        if self._stopped:
            return
        self._relist()
        self._pump()

    def _relist(self) -> None:
        """``Reflector.ListAndWatch`` + ``DeltaFIFO.Replace``; the LIST may come from a lagging watch cache."""
        api = self._api
        stale = api.stale_revision(
            self.kind, f"{self.name} lists from a watch cache lagging {api.stale_window:g} s"
        )
        if stale is None:
            objects, rv = api.snapshot(self.kind)
        else:
            objects, rv = api.snapshot_at(self.kind, stale), stale
        self._stream.clear()
        self._needs_list = False
        self._list_window = self.max_lag
        self.relists += 1
        self._last_rv = rv
        if stale is not None:
            # the watch continues from the stale revision: what came after is still to be delivered
            now = self._world.now
            self._stream.extend((ev, now) for ev in api.events_since(self.kind, stale))
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
        """``sharedProcessor.distribute``: in-step handlers run now, every listener buffers its own copy."""
        for handler in self._handlers:
            if inspect.iscoroutine(result := _call(handler, what, old, new)):
                result.close()
                raise UsageError(
                    f"{self.name}: a handler returned a coroutine, but without handler_lag handlers are called, "
                    "not awaited. Pass Informer(..., handler_lag=True) so it runs on a listener that awaits it, "
                    "or make it a plain function."
                )
        for listener in self._listeners:
            listener.add((what, old, new))

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



def informers_of(world: World) -> list[Informer]:
    """The informers a run built, in creation order (their listers hold what each cache saw last)."""
    return list(world.state.get("_kube_informers", []))
