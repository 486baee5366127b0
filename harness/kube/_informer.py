"""Shared informers: a reflector, a FIFO of received deltas, a lister cache, event handlers (client-go ``tools/cache``).

Follows ``k8s.io/client-go/tools/cache``: ``reflector.go`` (``ListAndWatch``:
list, then watch from the list's revision; ``watch``: a watch that closes is
re-opened from ``LastSyncResourceVersion``, the revision of the last event
*received*; an error, 410 Gone included, returns to ``RunWithContext``, which
lists again after the backoff), ``the_real_fifo.go``/``delta_fifo.go`` (the
queue between the reflector and the consumer, and ``Replace``), and
``shared_informer.go``/``controller.go`` (``processDeltas``: the indexer is
updated **first**, then every handler is notified; ``OnUpdate`` marks an update
whose resourceVersion did not change as a *sync*, which ``distribute`` hands
only to listeners with a resync period).

Received, or not yet sent (the split a watch end explores)
----------------------------------------------------------
Between a commit and a handler, an event is in one of two places: **not yet
sent** (the apiserver's watch cache, the connection) or **received**: the
reflector's ``handleAnyWatch`` has read it, ``store.Add/Update/Delete`` has put
it in the FIFO and ``setLastSyncResourceVersion`` has recorded its revision,
and it waits for the consumer's ``Pop``. While the watch is open the two are
indistinguishable: both are handed over in revision order, each inside its
window. They differ only when the watch ends: a received delta stays in the
FIFO and is still delivered (nothing in client-go empties the queue when a
watch ends or a relist starts); what was not yet sent is fetched again by the
re-watch (``events_since`` the last received revision) or replaced by the
relist.

The model: an event joins the FIFO at its commit, provisionally; **popping**
it (the indexer update and the handlers) is the scheduled action, with the
event's window. Every event carries one fault point of each watch kind, "the
watch ended before this event was sent", which the search decides at the first
informer step after the commit (the event's own pop when the FIFO was empty, else the
pop of the delta ahead of it). If it fires, that event and every later one
are taken back out of the FIFO (nothing has seen them yet: the FIFO hands
deltas over in order) and the reflector's ``LastSyncResourceVersion`` is the
revision of the event before it; the deltas ahead of it stay and are popped
in their windows. So how far reception got is a choice of the search, made
where it can matter, and costs no step when no fault fires: without faults,
traces are step for step those of a plain in-flight stream. (Rejected: a
reception step per event doubles every run's steps for orders the windows
already reach; a data choice "how many were received" at the fault makes
every such fault two plan entries; reception at commit with a fault only "now"
would make a watch break in the middle of a burst of commits unreachable.)

Deltas are handed over **one at a time, in the order received**, as client-go
does since v1.33 (``InOrderInformers``, GA in 1.36: ``RealFIFO`` pops one
``Delta`` per ``Pop``). The older ``DeltaFIFO`` pops all queued deltas of a
key at once, at the key's first place in the queue; the model does not group
them. (The relist's coalescing is the same in both, below.)

The relist (``Reflector.list`` -> ``syncWith`` -> ``Replace``)
--------------------------------------------------------------
The LIST's objects become ``Replaced`` deltas **behind** whatever the FIFO
still holds, so a received delta is never lost or overtaken; they coalesce
what the reflector missed (a create and its updates are one add; a delete and
a re-create with the same name are one update whose UID changed). A key that
is **known** but missing from the list gets a ``DeletedFinalStateUnknown``
tombstone: known means queued in the FIFO (its last queued delta is not
already a delete; the tombstone then carries the newest queued object) or in
the indexer and not queued (the tombstone carries the indexer's object). That
is ``RealFIFO.Replace``'s ``reconcileReplacement``, and ``DeltaFIFO.Replace``
picks the same keys and objects. Tombstones come first, queued keys in queue
order, then indexer keys in cache order; then the listed objects in list
order (``reconcileReplacement``'s order; ``DeltaFIFO`` puts each ``Replaced``
delta with its key's queued deltas instead). When the FIFO is empty the
whole replacement is applied in the list step itself (the consumer keeps up);
otherwise it is one delta of the FIFO, ``"informer/Pod deliver relist of 3
objects rv=12"``, popped in its turn. A listed object whose resourceVersion
the cache already has is a sync: its handlers hear of it only with a resync
period.

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
``"Pod ns/p1"``). The reflector (list, re-watch) has steps of its own under the
same actor: the FIFO keeps being popped while the reflector re-watches or
waits out a backoff, as client-go's ``processLoop`` and ``ListAndWatch`` are
separate goroutines.

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
not name the kinds itself; README "Fault kinds" has the same table)
------------------------------------------------------------------
``watch_end`` (``watch_ends=True``), one point per event
    "informer/Pod watch ends before DELETED ns/a rv=8 is sent; resumes from the
    last received rv=7": the watch closes; received deltas are still popped; the
    reflector re-watches from the last received revision (``latency`` later,
    inside ``max_lag``) and gets what was not sent: nothing lost, nothing
    duplicated, only later.
``compaction`` (``compactions=True``), at each re-watch
    the server has compacted past the reflector's revision: 410 Gone, then a
    relist after client-go's backoff (800 ms doubling to 30 s, jitter up to the
    same again, reset after 2 minutes of health).
``transient_error`` (the apiserver's ``transient_errors=True``), at each
    re-watch and each LIST after the first: the request fails (a timeout,
    which ``isWatchErrorRetriable`` does not retry), so ``ListAndWatch``
    returns and the reflector lists again after the backoff. (A failed first
    LIST would only delay the sync every controller waits for.)
``watch_drop`` (``watch_drops=True``), one point per event
    the shorthand "drop and relist": the watch ends with an error before the
    event is sent, which is a watch end followed by a failed re-watch: received
    deltas stay, the relist comes after the backoff and replaces what was not
    sent.
``duplicate`` (``duplicates=True``), at each pop
    the event is received twice. The second is an update with an unchanged
    resourceVersion, a sync (handlers with a resync period hear of it, others
    do not); a second DELETED reaches every handler again (``RealFIFO`` queues
    every delete; ``processDeltas`` calls ``OnDelete``).
``stale_read`` (the apiserver's ``stale_reads=True``), one point per older revision
    a LIST is served by a lagging watch cache at a revision of the window
    the search chooses, named by the event that made it (a restarted
    controller that lists from a stale apiserver: Sieve's "time travel");
    the view stays frozen there, no newer event of the kind delivered, until
    the cache catches up (at the latest ``stale_window`` after the next
    event), and then the watch sends what came after.

This module is the informer itself: the reflector (list, watch, re-watch,
backoff) and the FIFO between it and the consumer. Its read side (the lister,
the handler signatures, the relist's tombstone) is ``_lister.py``; the
listeners that call handlers, ``_listeners.py``; its footprints and notes,
``_informer_trace.py``; the delivery window and the watch-break faults it shares
with the HTTP API's watch streams, ``_delivery.py``.
"""

from __future__ import annotations

import builtins
import inspect
import math
from collections import deque
from collections.abc import Callable

from harness._errors import UsageError
from harness.sim import TimerHandle, World

from ._apiserver import APIServer
from ._delivery import DEFAULT_MAX_LAG, note_lost, watch_break
from ._errors import Gone
from ._informer_trace import InformerTrace
from ._listeners import _call, _Handler, _Listener
from ._lister import DeletedFinalStateUnknown, Lister, OnAdd, OnDelete, OnUpdate
from ._objects import KubeObject
from ._process import ControllerProcess
from ._revisions import DELETED, WatchEvent

#: client-go reflector backoff (``wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)``)
BACKOFF_INITIAL = 0.8
BACKOFF_CAP = 30.0
BACKOFF_RESET = 120.0
BACKOFF_JITTER = 1.0


class _Delta:
    """A watch event in the FIFO: ``at`` is when it entered (its commit, or the re-watch that fetched it).

    ``decided`` is False until the search has passed the event's "the watch
    ended before it was sent" points (module docstring): undecided deltas are
    always a suffix of the FIFO.
    """

    __slots__ = ("at", "decided", "event")

    def __init__(self, event: WatchEvent, at: float, decided: bool = False) -> None:
        self.event = event
        self.at = at
        self.decided = decided


# a relist's delta: ("replaced", object) or ("tombstone", DeletedFinalStateUnknown)
_Replacement = tuple[str, "KubeObject | DeletedFinalStateUnknown"]


class _Replace:
    """A relist's deltas queued behind deltas the FIFO still held (``Replace``); popped as one step."""

    __slots__ = ("at", "deltas", "rv")

    def __init__(self, deltas: list[_Replacement], at: float, rv: int) -> None:
        self.deltas = deltas
        self.at = at
        self.rv = rv


class Informer(InformerTrace):
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
        self.lister = Lister(kind, self._store, self)
        #: footprint resources: one per cache entry ("<name> cache: ns/x"), and the whole cache
        self._cache = f"{self.name} cache: "
        self._cache_all = f"{self.name} cache: *"
        # Reports find the run's informers here to compare caches with the apiserver (harness.report).
        world.state.setdefault("_kube_informers", []).append(self)
        self._process = process
        # handlers run inside the delivery step (no handler_lag, registered before sync)
        self._handlers: list[_Handler] = []
        # handlers with a processorListener of their own (handler_lag, or registered after sync)
        self._listeners: list[_Listener] = []
        self._registered = 0
        # deltas received and not yet popped, in the order received (RealFIFO's items)
        self._fifo: deque[_Delta | _Replace] = deque()
        self._undecided = 0  # how many deltas at the FIFO's tail still have their reception points to pass
        self._needs_list = True
        self._list_at = 0.0  # nominal time of the next LIST or re-watch
        self._list_window = self.max_lag
        self._rewatch = False  # a re-watch from _last_rv is pending
        self._catching_up = False  # ... and it is a stale LIST's frozen view catching up
        self._last_rv = 0  # LastSyncResourceVersion: the list's, or the last event received
        self._rv_unavailable = False  # isLastSyncResourceVersionUnavailable: a 410 since the last LIST
        self._failures = 0
        self._last_failure = -math.inf
        self._timer: TimerHandle | None = None  # the reflector's next list or re-watch
        self._pop_timer: TimerHandle | None = None  # the consumer's next pop
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
        if self._world.noting and not self._stopped:
            self._world.note(f"{self.name} stops: its cache of {len(self._store)} object(s) and {self.pending} "
                             "undelivered event(s) are dropped", kind="crash", cached=len(self._store),
                             pending=self.pending)
        self._stopped = True
        if self._stop_watch is not None:
            self._stop_watch()
        for t in (self._timer, self._pop_timer, self._resync_timer):
            if t is not None:
                t.cancel()
        self._fifo.clear()
        self._undecided = 0
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
        """Deltas in the FIFO: committed while the watch was open (or fetched since), not yet delivered."""
        return sum(len(d.deltas) if isinstance(d, _Replace) else 1 for d in self._fifo)

    # ------------------------------------------------------------ reception
    def _on_event(self, event: WatchEvent) -> None:
        """The server commits: the event enters the FIFO, unless the watch is down (a re-watch or LIST covers it)."""
        if self._stopped or self._needs_list or self._rewatch:
            return
        self._fifo.append(_Delta(event, self._world.now))
        self._undecided += 1
        if self._pop_timer is None:
            self._pump_fifo()

    def _decide_reception(self) -> None:
        """Pass the "watch ended before it was sent" points of the undecided deltas, in order (module docstring).

        The first that fires takes that delta and every later one back out of
        the FIFO (they were never received; nothing has seen them) and ends the
        watch: a re-watch from the last received revision (``watch_end``) or a
        relist after the backoff (``watch_drop``).
        """
        fifo = self._fifo
        world = self._world
        first = len(fifo) - self._undecided
        for i in range(first, len(fifo)):
            d = fifo[i]
            assert isinstance(d, _Delta)
            ev = d.event
            obj = ev.object
            broke = watch_break(world, self.name, ev, self._last_rv, drops=self.watch_drops, ends=self.watch_ends)
            if broke is not None:
                drop = broke == "drop"
                if world.noting:
                    self._note_lost(list(fifo)[i:], drop)
                while len(fifo) > i:
                    fifo.pop()
                self._undecided = 0
                if drop:  # reflector.watch returns the error; RunWithContext lists again after the backoff
                    self._relist_after_backoff()
                else:  # the result channel closed: reflector.watch re-opens it from LastSyncResourceVersion
                    self._rewatch = True
                    if world._fp is not None:
                        world.touch(f"{self.name} reflector", write=True,
                                    said=f"the watch ended before {ev.type} {obj.key} rv={obj.resource_version}")
                    self._list_at = world.now + self.latency
                self._pump()
                return
            d.decided = True
            self._undecided -= 1
            self._last_rv = max(self._last_rv, obj.resource_version)

    # ------------------------------------------------------------- the consumer
    def _pump_fifo(self) -> None:
        if self._stopped or self._pop_timer is not None or not self._fifo:
            return
        head = self._fifo[0]
        if isinstance(head, _Replace):
            n = len(head.deltas)
            label = f"{self.name} deliver relist of {n} object{'s' if n != 1 else ''} rv={head.rv}"
            key = None
            rv = head.rv
            when = head.at
        else:
            obj = head.event.object
            label = f"{self.name} deliver {head.event.type} {obj.key} rv={obj.resource_version}"
            key = obj.ref
            rv = obj.resource_version
            when = head.at + self.latency
        self._pop_timer = self._world.call_at(when, self._pop, label=label, actor=self.name, key=key, rv=rv,
                                              latest=when + self.max_lag)

    def _pop(self) -> None:
        """``Pop`` + ``processDeltas`` for the head delta (after the reception points of what came behind it)."""
        self._pop_timer = None
        if self._stopped or not self._fifo:
            return
        if self._undecided:
            labelled = self._fifo[0]
            self._decide_reception()
            if self._world.noting and (not self._fifo or self._fifo[0] is not labelled):
                self._world.note(
                    "nothing delivered: the watch broke before this event was sent", kind="step",
                    key=None if isinstance(labelled, _Replace) else labelled.event.object.ref, nothing_delivered=True,
                )
        if self._fifo:
            head = self._fifo.popleft()
            if isinstance(head, _Replace):
                self._process_replace(head.deltas)
            else:
                ev = head.event
                world = self._world
                label = f"{self.name} delivers {ev.type} {ev.object.key} rv={ev.object.resource_version} twice"
                if world.fault("duplicate", label, key=ev.object.ref, default=self.duplicates):
                    self._fifo.appendleft(_Delta(ev, world.now, decided=True))
                self._apply(ev)
        self._pump_fifo()

    def _apply(self, ev: WatchEvent) -> None:
        obj = ev.object
        self.delivered += 1
        world = self._world
        if world._fp is not None:  # the event is the commit of its revision, read now
            world.touch(obj.ref, said=f"{ev.type} {obj.key} rv={obj.resource_version}", version=obj.resource_version)
        if ev.type == DELETED:
            self.delivered_rv[obj.key] = obj.resource_version
            old = self._store.pop(obj.key, None)
            if world._fp is not None:
                self._touch_write(obj.key, None, old is not None)
            self._notify("delete", old, obj)
        else:
            self._upsert(obj)

    def _upsert(self, obj: KubeObject) -> None:
        """``processDeltas`` for Added/Updated/Replaced: update the indexer, then ``OnAdd`` or ``OnUpdate``.

        An update whose resourceVersion did not change (a relisted object the
        cache has, a duplicate) is a sync to client-go (``OnUpdate``'s
        ``isSync``): ``distribute`` hands it only to listeners with a resync
        period, so without one no handler hears of it.
        """
        key = obj.key
        old = self._store.get(key)
        self._store[key] = obj
        self.delivered_rv[key] = obj.resource_version
        if self._world._fp is not None:
            self._touch_write(key, obj, old is None)
        if old is None:
            self._notify("add", None, obj)
        elif old.resource_version != obj.resource_version or self.resync_period > 0:
            self._notify("update", old, obj)

    # ------------------------------------------------------------ the reflector
    def _pump(self) -> None:
        if self._stopped or self._timer is not None:
            return
        if self._needs_list:
            label = f"{self.name} list"
            when, latest = self._list_at, self._list_at + self._list_window
            fn = self._do_list
        elif self._rewatch and self._catching_up:
            label = f"{self.name} view catches up: the lagging watch cache sends what came after rv={self._last_rv}"
            when, latest = self._list_at, self._list_at
            fn = self._do_rewatch
        elif self._rewatch:
            label = f"{self.name} re-watch from rv={self._last_rv}"
            when, latest = self._list_at, self._list_at + self.max_lag
            fn = self._do_rewatch
        else:
            return
        self._timer = self._world.call_at(when, fn, label=label, actor=self.name, latest=latest)

    def _do_rewatch(self) -> None:
        """``Reflector.watch`` resumed from the last received revision; an error or 410 Gone relists after backoff."""
        self._timer = None
        if self._stopped:
            return
        if self._world._fp is not None:
            self._world.touch(f"{self.name} reflector", said="a re-watch")
        self._rewatch = False
        world = self._world
        if self._catching_up:  # not a request of its own: the lagging cache's stream goes on
            self._catching_up = False
            missed = self._api.events_since(self.kind, self._last_rv)
            if world.noting:
                world.note(f"the lagging watch cache catches up: the frozen view of {self.kind} at rv={self._last_rv} "
                           f"gets {len(missed)} later event(s)", kind="watch", keys=[e.object.ref for e in missed],
                           rv=self._last_rv, resent=len(missed))
            self._receive(missed)
            self._pump()
            return
        self.rewatches += 1
        if world.fault(
            "transient_error",
            f"{self.name} re-watch fails (timeout); relists after backoff",
            default=self._api.transient_errors,
        ):
            self._relist_after_backoff("the re-watch failed (timeout)")
            self._pump()
            return
        if world.fault(
            "compaction",
            f"{self.name} re-watch gets 410 Gone (the server compacted past the last received rv={self._last_rv})",
            default=self.compactions,
        ):
            self._api.compact()
        try:
            missed = self._api.events_since(self.kind, self._last_rv)
        except Gone:
            self._rv_unavailable = True
            self._relist_after_backoff(f"the re-watch from rv={self._last_rv} got 410 Gone (compacted past it)")
        else:
            if world.noting:
                sent = ", ".join(f"{e.type} {e.object.key} rv={e.object.resource_version}" for e in missed)
                world.note(
                    f"watch resumes from rv={self._last_rv}: "
                    + (f"resends {sent}" if missed else "nothing was missed"),
                    kind="watch", keys=[e.object.ref for e in missed], rv=self._last_rv, resent=len(missed),
                )
            self._receive(missed)
        self._pump()

    def _receive(self, events: builtins.list[WatchEvent]) -> None:
        """Events a (re-)opened watch sends at once: each still has its reception points to pass."""
        now = self._world.now
        for ev in events:
            self._fifo.append(_Delta(ev, now))
        self._undecided += len(events)
        self._pump_fifo()

    def _relist_after_backoff(self, why: str = "") -> None:
        """client-go ``wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)`` (reflector.go).

        The FIFO keeps what it received: only the reflector waits. ``why`` is
        the reason the trace's note gives.
        """
        now = self._world.now
        if now - self._last_failure > BACKOFF_RESET:
            self._failures = 0
        self._failures += 1
        self._last_failure = now
        backoff = min(BACKOFF_INITIAL * 2 ** (self._failures - 1), BACKOFF_CAP)
        if self._world._fp is not None:  # the reflector's state: what its next list reads from
            self._world.touch(f"{self.name} reflector", write=True,
                              said=(f"{why}; " if why else "the watch broke; ") + f"lists again after {backoff:g} s")
        self._needs_list = True
        self._list_at = now + backoff
        self._list_window = backoff * BACKOFF_JITTER  # jitter 1.0: anywhere up to twice the backoff
        if self._world.noting:
            self._world.note(
                (f"{why}; " if why else "") + f"the reflector backs off {backoff:g} s (failure {self._failures}), "
                f"then lists again", kind="watch", backoff=backoff, failures=self._failures,
            )

    def _do_list(self) -> None:
        self._timer = None
        if self._stopped:
            return
        if self._world._fp is not None:
            self._world.touch(f"{self.name} reflector", said="" if self.relists == 0 else "a relist")
        if self.relists and self._world.fault(
            "transient_error", f"{self.name} list fails (timeout); lists again after backoff",
            default=self._api.transient_errors,
        ):
            self._relist_after_backoff("the LIST failed (timeout)")
        else:
            self._relist()
        self._pump()

    def _relist(self) -> None:
        """``Reflector.list`` + ``syncWith`` -> ``Replace``; the LIST may come from a lagging watch cache.

        A stale LIST (the ``stale_read`` fault at one of the older revisions the
        window holds: :meth:`APIServer.stale_revision`) leaves the view frozen
        there: the watch is served by the same lagging cache, so no newer event
        of the kind arrives until the cache catches up (at the latest the
        window after the next event: a replica lags at most ``stale_window``),
        and then the watch resends what came after the listed revision. This is
        Sieve's time travel: a restarted controller that lists from a lagging
        apiserver acts on a past it cannot tell from the present.

        How far back is client-go's ``relistResourceVersion`` (reflector.go):
        the first LIST asks for resourceVersion "0" (any state the watch cache
        holds); a relist asks for the last synced revision, which the
        apiserver serves "not older than", so it never goes back before what
        this informer has seen; after a 410 it asks for "" (a quorum read from
        etcd), which is never stale. Only a new informer -- a restarted
        process's -- travels back in time.
        """
        api = self._api
        stale = None if self._rv_unavailable else api.stale_revision(
            self.kind, f"{self.name} lists from a lagging watch cache", not_older_than=self._last_rv)
        self._rv_unavailable = False
        if stale is None:
            objects, rv = api.snapshot(self.kind)
        else:
            rv = stale[0]
            objects = api.snapshot_at(self.kind, rv)
        self._needs_list = False
        self._list_window = self.max_lag
        self.relists += 1
        self._last_rv = rv
        deltas = self._replacement(objects)
        if self._world.noting:
            self._note_list(objects, rv, stale, deltas)
        if self._fifo:  # behind what is still queued; the consumer pops it in its turn
            self._fifo.append(_Replace(deltas, self._world.now, rv))
            self._pump_fifo()
        else:
            self._process_replace(deltas)
        if stale is not None:
            # frozen: the watch opens on the lagging cache and sends nothing newer until it catches up
            self._rewatch = True
            self._catching_up = True
            self._list_at = max(self._world.now, stale[2])
        if not self._synced.is_set():
            self._synced.set()

    def _replacement(self, objects: builtins.list[KubeObject]) -> builtins.list[_Replacement]:
        """``Replace``'s deltas (``reconcileReplacement``): tombstones for known keys the list lacks, then the list.

        Known keys are those queued in the FIFO (the newest queued object; none
        if the last queued delta is already a delete) and those in the indexer
        that are not queued (the indexer's object). Queue order, then cache
        order: never a hash order.
        """
        listed = {o.key for o in objects}
        queued: dict[str, tuple[bool, KubeObject]] = {}  # key -> (last queued is a delete, newest object)
        for item in self._fifo:
            if isinstance(item, _Replace):
                for what, o in item.deltas:
                    queued[o.key] = (what == "tombstone", o.obj if isinstance(o, DeletedFinalStateUnknown) else o)
            else:
                queued[item.event.object.key] = (item.event.type == DELETED, item.event.object)
        out: builtins.list[_Replacement] = []
        for key, (deleted, obj) in queued.items():
            if key not in listed and not deleted:
                out.append(("tombstone", DeletedFinalStateUnknown(key, obj)))
        for key, obj in self._store.items():
            if key not in listed and key not in queued:
                out.append(("tombstone", DeletedFinalStateUnknown(key, obj)))
        out.extend(("replaced", o) for o in objects)
        return out

    def _process_replace(self, deltas: builtins.list[_Replacement]) -> None:
        """``processDeltas`` over a relist's deltas, in order."""
        world = self._world
        for what, obj in deltas:
            if isinstance(obj, DeletedFinalStateUnknown):
                if world.noting:
                    world.note(
                        f"relist synthesises Delete {obj.key} (DeletedFinalStateUnknown: missing from the LIST; "
                        f"last seen rv={obj.obj.resource_version})", kind="relist", key=obj.obj.ref, event="Delete",
                        rv=obj.obj.resource_version, relist=True,
                    )
                if world._fp is not None:  # it read the delete the LIST no longer shows
                    world.touch(obj.obj.ref, said=f"{obj.key} missing from the LIST")
                    self._touch_write(obj.key, None, obj.key in self._store)
                self._store.pop(obj.key, None)
                self._notify("delete", None, obj)
            else:
                assert what == "replaced"
                if world.noting:
                    old = self._store.get(obj.key)
                    event = "Create" if old is None else (
                        "Update" if old.resource_version != obj.resource_version else "Sync")
                    tail = "" if old is None else (
                        f" (cache had rv={old.resource_version})" if event == "Update" else
                        " (the cache has this rv: a sync, only handlers with a resync period hear of it)")
                    again = self.relists > 1
                    world.note(f"{'relist synthesises' if again else 'LIST adds'} {event} {obj.key} "
                               f"rv={obj.resource_version}{tail}", kind="relist", key=obj.ref, event=event,
                               rv=obj.resource_version, relist=again)
                if world._fp is not None:
                    world.touch(obj.ref, said=f"LIST: {obj.key} rv={obj.resource_version}", version=obj.resource_version)
                self._upsert(obj)

    # -------------------------------------------------------------- handlers
    def _notify(
        self, what: str, old: KubeObject | DeletedFinalStateUnknown | None, new: KubeObject | DeletedFinalStateUnknown
    ) -> None:
        """``sharedProcessor.distribute``: in-step handlers run now, every listener buffers its own copy."""
        if self._handlers and self._world.noting:
            self._note_handler(what, old, new, self.name)
            self._touch_memory(what, new, self._handlers)
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

    # ------------------------------------------------------------------ notes
    def _note_lost(self, lost: builtins.list[_Delta | _Replace], drop: bool) -> None:
        """The note of a broken watch: the events it lost (never sent, so never delivered) and what comes next."""
        events = [d.event for d in lost if isinstance(d, _Delta)]
        then = "relist after backoff" if drop else f"re-watch from rv={self._last_rv}"
        note_lost(self._world, events, drop, then, rv=self._last_rv)

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
