"""An informer's handlers: each notification handed to a handler, in its step or on a listener of its own.

``_call`` calls one handler with copies; :class:`_Listener` is client-go's
``processorListener`` (``shared_informer.go``): a handler with its own
unbounded buffer and its own actor, which may await the API. The informer
decides who hears of what (``Informer._notify``: ``distribute``).
"""

from __future__ import annotations

import inspect
from collections import deque
from typing import TYPE_CHECKING, Any

from ._lister import DeletedFinalStateUnknown, OnAdd, OnDelete, OnUpdate
from ._objects import KubeObject

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from harness.sim import Queue, TimerHandle

    from ._informer import Informer


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
        world = self._informer._world
        if world._fp is not None:
            self._touch(note, write=True)
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
        if inf._world._fp is not None:
            self._touch((what, old, new), write=False)
        if inf._world.noting:
            inf._note_handler(what, old, new, self.actor)
            inf._touch_memory(what, new, [self.handler])
        result = _call(self.handler, what, old, new)
        if inspect.iscoroutine(result):
            assert self._calls is not None, "a handler that returns a coroutine is refused at registration"
            self.busy = True
            self._calls.put_nowait(result)
            return
        self.pump()

    def _touch(self, note: _Note, *, write: bool) -> None:
        """The listener's buffer: its order (a FIFO) and the notification, by key and revision."""
        what, _old, new = note
        obj = new.obj if isinstance(new, DeletedFinalStateUnknown) else new
        world = self._informer._world
        world.touch(f"{self.actor} buffer", write=True, decides=False)
        world.touch(f"{self.actor} buffer: {obj.key}", write=write, said=f"{what} {obj.key} rv={obj.resource_version}",
                    version=obj.resource_version)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.notes.clear()
