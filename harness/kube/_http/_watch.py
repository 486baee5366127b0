"""Watch streams: the server end of one watch connection, its events each delivered in its window.

A watch connection (:class:`_Watch`) is the server end of an informer's watch
(``_informer.py``): the events the server commits are in flight at once, in
revision order, each delivered (written to the connection) as a scheduled step
of the stream's own actor ``"<client>/watch/<Kind>"``, with the informer's own
reception fault points (:func:`~harness.kube._delivery.watch_break`).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...sim import running_world_loop
from .._delivery import DEFAULT_MAX_LAG, note_lost, watch_break
from .._errors import Gone
from .._objects import KubeObject, object_ref
from .._revisions import ADDED, DELETED, MODIFIED, WatchEvent
from ._codec import _dumps
from ._resources import Resource
from ._selectors import Requirement, _fields_match, selects
from ._status import status_body

if TYPE_CHECKING:
    from harness.sim import Queue as WorldQueue
    from harness.sim import TimerHandle

    from ._handler import APIHandler

# ------------------------------------------------------------------------------------------- watches
@dataclass(frozen=True)
class WatchOptions:
    """A client's watch streams: the window of each delivery and the fault flags (as an :class:`Informer`'s)."""

    max_lag: float = DEFAULT_MAX_LAG
    latency: float = 0.0
    watch_drops: bool = False
    watch_ends: bool = False
    compactions: bool = False


#: the annotation of the BOOKMARK that ends a WatchList's initial events (``metav1.InitialEventsAnnotationKey``)
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_END = b""  # the server closed the stream (a clean end: the response body ends)
_BROKEN = object()  # the connection broke (the client's read raises)


class _Watch:
    """The server end of one watch connection: events in flight in revision order, each sent in its window.

    ``resourceVersion`` (``handlers/watch.go``, the cacher's ``Watch``):
    unset or ``""`` sends the current state as ADDED events, then what comes
    next; ``"0"`` does the same from the watch cache, which may lag
    (``stale_read``); ``"N"`` sends every event after ``N``, or, if ``N`` is
    compacted away, one ``ERROR`` event with a 410 ``Expired`` Status. The
    selectors filter as the cacher's ``filterWithAttrsFunction`` does: an
    object that stops matching is sent as DELETED, one that starts as ADDED.
    ``timeoutSeconds`` closes the stream after that long (with a BOOKMARK
    first when ``allowWatchBookmarks``); without it the stream stays open.

    WatchList (``sendInitialEvents``, what client-go 1.35+ informers send
    first, ``tools/cache/reflector.go`` ``watchList``): ``true`` sends the
    current state as ADDED events whatever the revision asked (``"0"`` from the
    watch cache, which may lag), then, with ``allowWatchBookmarks``, one
    BOOKMARK at that state's revision annotated ``k8s.io/initial-events-end:
    "true"`` (the cacher's ``cacheWatcher`` after its initial events,
    ``storage/cacher/cache_watcher.go``), and the events after it; without the
    bookmark the reflector never takes the stream as a list. ``false`` sends no
    initial events: from the current revision, or the events after ``N``.
    """

    def __init__(self, handler: APIHandler, res: Resource, client: str, options: WatchOptions, namespace: str | None,
                 labels: tuple[Requirement, ...], fields: tuple[tuple[str, bool, str], ...], *, bookmarks: bool,
                 timeout: float | None, initial_events: bool | None = None) -> None:
        self._handler = handler
        self._api = handler.api
        self._world = handler.world
        self.res = res
        self.client = client
        self.name = f"{client}/watch/{res.kind}"
        self._namespace = namespace
        self._labels = labels
        self._fields = fields
        self._bookmarks = bookmarks
        self._timeout = timeout
        self._initial_events = initial_events
        self._initial_left = -1  # initial events still to send before the initial-events-end bookmark (-1: none)
        self.options = options
        self.buffer: WorldQueue[Any] = self._world.Queue()
        self._pending: deque[tuple[str, KubeObject, float]] = deque()
        self._passing: set[str] = set()
        self._last_rv = 0  # the revision of the last event sent
        self._timer: TimerHandle | None = None
        self._end_timer: TimerHandle | None = None
        self._stop: Callable[[], None] | None = None
        self.closed = False
        #: where chunks go instead of the buffer: a connection that is pushed to (asyncio's protocols), not read
        self._sink: Callable[[object], None] | None = None

    def _put(self, item: object) -> None:
        if self._sink is not None:
            self._sink(item)
        else:
            self.buffer.put_nowait(item)

    def attach(self, sink: Callable[[object], None]) -> None:
        """Push every chunk to ``sink`` as it is sent (``b""``: the end; anything else not bytes: a broken
        connection) instead of keeping it for :meth:`read`; what was sent before goes at once."""
        pending = self.buffer._items
        while pending:
            sink(pending.popleft())
        self._sink = sink

    @staticmethod
    def broken(item: object) -> bool:
        """Whether a chunk handed to a sink says the connection broke."""
        return item is _BROKEN

    def _matches(self, obj: KubeObject) -> bool:
        return ((self._namespace is None or obj.namespace == self._namespace) and selects(self._labels, obj.labels)
                and _fields_match(self._fields, obj))

    async def open(self, rv: str) -> None:
        """The watch request: one yield point, then the initial events and the subscription, atomically."""
        world, api, kind = self._world, self._api, self.res.kind
        where = object_ref(kind, self._namespace or "", "*")
        await world.step(f"watch {where}" + (f" from rv={rv}" if rv else "")
                         + (" with its initial events (WatchList)" if self._initial_events else ""), key=f"{kind} *")
        world.touch(f"{kind} *", decides=False)
        stale: tuple[int, str, float] | None = None
        if (rv and rv != "0" and self._initial_events is None) or self._initial_events is False:
            start = int(rv) if rv and rv != "0" else api.resource_version
            if 0 < start < api.resource_version and world.fault(
                "compaction", f"{self.name} watch from rv={start} gets 410 Gone (the server compacted past it)",
                default=self.options.compactions,
            ):
                api.compact()
            try:
                events = api.events_since(kind, start)
            except Gone as err:
                if world.noting:
                    world.note(f"{self.name}: watch from rv={start} is too old (compacted at rv={api.compacted_rv}): "
                               "an ERROR event with a 410 Status", kind="watch", rv=start)
                self._put(_event_line("ERROR", status_body(err)))
                self._put(_END)
                self.closed = True
                return
            self._passing = {o.key for o in api.snapshot_at(kind, start) if self._matches(o)}
            self._last_rv = start
            initial = [(e.type, e.object) for e in events]
        else:
            stale = api.stale_revision(kind, f"{self.name} watch served by a lagging watch cache") if rv == "0" else None
            at = api.resource_version if stale is None else stale[0]
            objects = api.snapshot_at(kind, at) if stale is not None else api.snapshot(kind)[0]
            initial = [(ADDED, o) for o in sorted(objects, key=lambda o: (o.namespace, o.name))]
            self._last_rv = at
        now = world.now
        for what, obj in initial:
            self._queue(what, obj, now)
        if self._initial_events and self._bookmarks:
            self._initial_left = len(self._pending)
            self._initial_end()
        if stale is not None:  # what the lagging cache has yet to catch up on follows its state
            for e in api.events_since(kind, at):
                self._queue(e.type, e.object, now)
        self._stop = api.watch(kind, self._on_event)
        if self._timeout is not None:
            self._end_timer = world.call_later(self._timeout, self._time_out, label=f"{self.name} timeoutSeconds "
                                               f"elapsed: the server ends the watch", actor=self.name)
        self._pump()

    def _on_event(self, ev: WatchEvent) -> None:
        if not self.closed:
            self._queue(ev.type, ev.object, self._world.now)
            self._pump()

    def _queue(self, what: str, obj: KubeObject, at: float) -> None:
        """The cacher's filter: which event (if any) this connection sends for ``obj``."""
        was, now = obj.key in self._passing, what != DELETED and self._matches(obj)
        if what == DELETED:
            if not was:
                return
            self._passing.discard(obj.key)
        elif now and not was:
            what = ADDED
            self._passing.add(obj.key)
        elif was and not now:
            what = DELETED
            self._passing.discard(obj.key)
        elif not now:
            return
        elif what == ADDED:
            what = MODIFIED if was else ADDED
        self._pending.append((what, obj, at))

    def _pump(self) -> None:
        if self.closed or self._timer is not None or not self._pending:
            return
        what, obj, at = self._pending[0]
        when = at + self.options.latency
        self._timer = self._world.call_at(
            when, self._send, label=f"{self.name} deliver {what} {obj.key} rv={obj.resource_version}",
            actor=self.name, key=obj.ref, rv=obj.resource_version, latest=when + self.options.max_lag)

    def _send(self) -> None:
        """Write the head event to the connection, unless the watch breaks before it (the informer's points)."""
        self._timer = None
        if self.closed or not self._pending:
            return
        what, obj, _at = self._pending[0]
        broke = watch_break(
            self._world, self.name, WatchEvent(what, obj), self._last_rv, drops=self.options.watch_drops,
            ends=self.options.watch_ends, drop_then="the connection breaks (the client's read fails)",
            end_then=f"the stream ends; the client may re-watch from rv={self._last_rv}",
        )
        if broke is not None:
            if self._world.noting:
                note_lost(self._world, [WatchEvent(w, o) for w, o, _ in self._pending], broke == "drop",
                          "the client's read fails" if broke == "drop" else "the response body ends")
            self._close(_BROKEN if broke == "drop" else _END)
            return
        self._pending.popleft()
        self._last_rv = max(self._last_rv, obj.resource_version)
        if self._world._fp is not None:  # the watch event read: the commit of that revision
            self._world.touch(obj.ref, said=f"{what} rv={obj.resource_version}", version=obj.resource_version)
            self._touch_stream(f"{what} {obj.ref} rv={obj.resource_version}", write=True)
        self._put(_event_line(what, self._handler.codec.encode(obj, self.res)))
        if self._initial_left > 0:
            self._initial_left -= 1
            self._initial_end()
        self._pump()

    def _initial_end(self) -> None:
        """Once the last initial event is written, the BOOKMARK that ends them, in the same write: its revision
        is the state's the initial events make up, so the reflector's store and its next watch start there."""
        if self._initial_left:
            return
        self._initial_left = -1
        if self._world._fp is not None:
            self._touch_stream(f"BOOKMARK rv={self._last_rv} (the initial events end)", write=True)
        self._put(_event_line("BOOKMARK", {"kind": self.res.kind, "apiVersion": self.res.api_version, "metadata": {
            "resourceVersion": str(self._last_rv), "annotations": {INITIAL_EVENTS_END: "true"}}}))

    def _time_out(self) -> None:
        self._end_timer = None
        if self.closed:
            return
        if self._bookmarks:  # a bookmark right before the timeout closes the watch (cacher.go, 1.27+)
            self._put(_event_line("BOOKMARK", {"kind": self.res.kind, "apiVersion": self.res.api_version,
                                                            "metadata": {"resourceVersion": str(self._last_rv)}}))
        self._close(_END)

    def _close(self, how: object) -> None:
        self.stop()
        if self._world._fp is not None:
            self._touch_stream("the connection broke" if how is _BROKEN else "the stream ended", write=True)
        self._put(how)

    def _touch_stream(self, said: str, *, write: bool) -> None:
        """What the connection hands the client: a write into the client's memory when sent, a read when consumed.

        A delivery is the server writing bytes the client's code reads later:
        the client's process memory (as an informer handler's call writes its
        process's, ``_informer_trace``), so the step that consumes the event
        reads from the delivery, and the reduction never commutes the two. The
        stream's own resource (``"<client>/watch/<Kind> stream"``) carries it
        for a process recorded key by key, and names the event for the story.
        """
        world = self._world
        stream = f"{self.name} stream"
        world.touch(stream, write=write, said=f"{stream}: {said}")
        mem = world.memory_of(self.client)
        if mem is not None and write:  # (each step of the client's own reads its memory: the dispatcher records it)
            world.touch(mem, write=True, said=f"{self.name} delivered {said}")

    def stop(self) -> None:
        """The connection is gone (either end closed it): no more events, no timers left behind."""
        self.closed = True
        if self._stop is not None:
            self._stop()
            self._stop = None
        for t in (self._timer, self._end_timer):
            if t is not None:
                t.cancel()
        self._timer = self._end_timer = None
        self._pending.clear()

    def read_ready(self) -> bytes:
        """The event lines sent after the one :meth:`read` just returned and not yet read, taken now (no step of
        their own), for a connection that writes them to its socket in the same write.

        kube-apiserver's watch handler encodes each event from the watcher's result channel and flushes the
        connection only when that channel is empty (``endpoints/handlers/watch.go``, ``WatchServer.HandleHTTP``:
        ``if len(ch) == 0 { flusher.Flush() }``), and a WatchList's initial events and the bookmark that ends them
        are put in the channel one after the other (``storage/cacher/cache_watcher.go``, ``processInterval``): what
        the server has sent and not yet written to the connection reaches the client in one write. The stream's end and a
        broken connection stay for :meth:`read`.
        """
        items, lines = self.buffer._items, []
        while items and isinstance(items[0], bytes) and items[0] != _END:
            item = items.popleft()
            if self._world._fp is not None:
                self._touch_stream(_said(item), write=False)
            lines.append(item)
        return b"".join(lines)

    async def read(self) -> bytes | None:
        """The client reads the next chunk: one JSON line per event, in order (a yield point of the client).

        None when the stream ended; raises :class:`ConnectionResetError` when it broke.
        """
        item = await self.buffer.get(f"{self.client} reads watch {self.res.kind}")
        if self._world._fp is not None:
            self._touch_stream(_said(item), write=False)
        if item is _BROKEN:
            raise ConnectionResetError(f"{self.name}: the watch connection broke")
        return None if item == _END else item


class _Chunks:
    """The body of a watch response as an async iterator: a plain class, not an async generator, so a client that
    stops reading leaves nothing for Trio to finalize. ``broken`` makes the client library's read error."""

    def __init__(self, watch: _Watch, broken: Callable[[str], BaseException]) -> None:
        self._watch = watch
        self._broken = broken

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        loop = running_world_loop()
        try:  # (read by an operator on asyncio: the read is Trio code of the reading task's actor)
            chunk = await (self._watch.read() if loop is None else loop.run_trio(self._watch.read))
        except ConnectionResetError as exc:
            raise self._broken(str(exc)) from None
        if chunk is None:
            raise StopAsyncIteration
        return chunk


def _said(item: object) -> str:
    """A chunk as the story names it: the event's type, object and revision, or how the stream stopped."""
    if item is _BROKEN:
        return "the connection broke"
    if item == _END or not isinstance(item, bytes):
        return "the stream ended"
    event = json.loads(item)
    obj = event.get("object") or {}
    meta = obj.get("metadata") or {}
    ref = object_ref(str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))
    return f"{event.get('type')} {ref} rv={meta.get('resourceVersion', '')}"


def _event_line(what: str, obj: dict[str, Any]) -> bytes:
    return _dumps({"type": what, "object": obj}) + b"\n"
