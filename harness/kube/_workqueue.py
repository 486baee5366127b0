"""The client-go work queue: dedup, delays and rate limits.

One class covers the three layers of ``k8s.io/client-go/util/workqueue``:

* ``queue.go``: ``queue`` (FIFO), ``dirty`` and ``processing``. ``add`` dedups
  against ``dirty``; an item added while it is processing is parked in
  ``dirty`` and re-queued by ``done``, so it is never handed to two workers and
  any number of adds during processing give exactly one more processing.
* ``delaying_queue.go``: ``add_after`` keeps one waiting entry per item whose
  ready time only ever moves earlier; neither ``add`` nor ``forget`` removes
  it (a pending delayed re-add cannot be cancelled). Each waiting entry is a
  harness timer, so the re-add is a scheduled action in the trace.
* ``rate_limiting_queue.go``: ``add_rate_limited = add_after(item, when(item))``.

Items are compared as Go compares them: values by ``==``/``hash`` (strings,
tuples, frozen dataclasses) and objects whose class keeps ``object.__eq__`` by
identity, which is how the Volcano queues of pointers behave. Sets are never
used: membership lives in insertion-ordered dicts and every decision reads the
FIFO, so the hash of an identity item (its address) never orders anything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable
from typing import Any, Generic, TypeVar

from harness.sim import Event, TimerHandle, World

from ._process import ControllerProcess
from ._ratelimit import RateLimiter, default_controller_rate_limiter

T = TypeVar("T", bound=Hashable)

_ITEM = 0
_SHUTDOWN = 1


class ShutDown(Exception):
    """``get()`` on a queue that is shutting down and empty (client-go returns ``shutdown=true``)."""


def describe_item(item: object) -> str:
    """A stable text for an item in trace labels: never an address."""
    if isinstance(item, str):
        return item
    text = str(item)
    if " at 0x" in text:  # default object repr: identity items get their type name only
        key = getattr(item, "key", None)
        return f"<{type(item).__name__} {key}>" if isinstance(key, str) else f"<{type(item).__name__}>"
    return text


class _Waiting:
    __slots__ = ("handle", "ready_at")

    def __init__(self, ready_at: float, handle: TimerHandle) -> None:
        self.ready_at = ready_at
        self.handle = handle


class WorkQueue(Generic[T]):
    """A rate-limiting delaying work queue (``workqueue.NewTypedRateLimitingQueue``).

    ``rate_limiter`` defaults to :func:`default_controller_rate_limiter`.
    ``get()`` is a yield point enabled while the queue holds an item (an idle
    wait, so workers blocked on it are not a deadlock); it raises
    :class:`ShutDown` once the queue is shut down and drained.
    """

    def __init__(
        self,
        world: World,
        name: str,
        rate_limiter: RateLimiter | None = None,
        *,
        process: ControllerProcess | None = None,
    ) -> None:
        self._world = world
        self.name = name
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(world)
        self._queue: deque[T] = deque()
        self._dirty: dict[T, None] = {}
        self._processing: dict[T, None] = {}
        self._waiting: dict[T, _Waiting] = {}
        self._wake = world.Queue()  # one token per queued item, plus a sticky shutdown token
        self._shutting_down = False
        self._drain = False  # ShutDownWithDrain waits for the items in processing
        self._drained: Event | None = None
        self._get_label = f"{name} get"
        #: footprint resources: the queue as a whole (its FIFO, dirty, processing and waiting sets) and each item
        self._res = f"{name} queue"
        self._res_item = f"{name} queue: "
        if process is not None:
            process.on_crash(self.shut_down)

    # ------------------------------------------------------------- queue.go
    def add(self, item: T) -> None:
        """``Add``: dedup against dirty; park in dirty while processing; else append and wake."""
        world = self._world
        if self._shutting_down or item in self._dirty:
            if world._fp is not None:  # it read the item's place: nothing changes
                world.touch(self._res_item + describe_item(item), said="add: coalesced", decides=False)
            if world.noting:
                self._note(item, "add {}: coalesced with the same key already queued" if not self._shutting_down
                           else "add {}: dropped, the queue is shutting down", "coalesced")
            return
        self._dirty[item] = None
        if item in self._processing:
            if world._fp is not None:
                self._touch(item, "add (being processed: queued again when done)")
            if world.noting:
                self._note(item, "add {}: being processed, queued again when done", "dirty")
            return
        if world._fp is not None:
            self._touch(item, "add")
        if world.noting:
            self._note(item, "add {}", "add")
        self._queue.append(item)
        self._wake.put_nowait(_ITEM)

    async def get(self) -> T:
        """``Get``: wait for an item, pop the head, mark it processing (a yield point)."""
        while True:
            token = await self._wake.get(self._get_label)
            if self._queue:
                if token == _SHUTDOWN:
                    self._wake.put_nowait(_SHUTDOWN)
                item = self._queue.popleft()
                self._processing[item] = None
                del self._dirty[item]
                world = self._world
                if world._fp is not None:  # the FIFO's head decides which item; the item read is what was added
                    world.touch(self._res, write=True, decides=False)
                    said = describe_item(item)
                    world.touch(self._res_item + said, said=f"{self.name} queue: Get {said}")
                    world.touch(self._res_item + said, write=True, said="processing", decides=False)
                if self._world.noting:
                    self._note(item, "get {}", "get")
                return item
            if self._shutting_down:
                if token == _SHUTDOWN:
                    self._wake.put_nowait(_SHUTDOWN)
                raise ShutDown(f"work queue {self.name} is shutting down")
            # A stale token (a shutdown token took its item); wait again.

    def done(self, item: T) -> None:
        """``Done``: leave processing; re-queue the item if it was added meanwhile."""
        self._processing.pop(item, None)
        world = self._world
        if world._fp is not None:
            world.touch(self._res, write=True, decides=False)
            if item in self._dirty:  # re-queued: what the add while it was processing asked for
                said = describe_item(item)
                world.touch(self._res_item + said, said="Done: added while processing")
                world.touch(self._res_item + said, write=True, said="Done: queued again")
            else:
                world.touch(self._res_item + describe_item(item), write=True, said="Done", decides=False)
        if item in self._dirty:
            self._queue.append(item)
            self._wake.put_nowait(_ITEM)
        if not self._processing and self._drained is not None:
            self._drained.set()  # ShutDownWithDrain: nothing left in processing

    def shut_down(self) -> None:
        """``ShutDown``: drop later adds, wake every getter; waiting entries are discarded.

        Called after :meth:`shut_down_with_drain`, it ends that wait at once
        (upstream: "safe to call ShutDown after having called ShutDownWithDrain").
        """
        self._drain = False
        if self._drained is not None:
            self._drained.set()
        self._shut("shuts down, dropping", (*self._queue, *self._processing, *self._waiting), "crash")

    async def shut_down_with_drain(self) -> None:
        """``ShutDownWithDrain``: shut down, then wait until every item in processing is ``done``.

        As ``queue.go``: later adds are dropped at once and getters learn of
        the shutdown once the FIFO is empty (queued items are still handed
        out); the wait ends when no item is in processing (an item re-queued
        by ``done`` because it was added while processing is handed out again,
        but the wait may end before it is taken) or when :meth:`shut_down` forces it. A worker that never calls
        ``done`` blocks it for ever: upstream's documented requirement, here a
        deadlock verdict. The wait is a yield point only when something is in
        processing.
        """
        self._drain = True
        self._shut("shuts down with drain: waits for", tuple(self._processing), "queue")
        while self._processing and self._drain:
            self._drained = self._world.Event()
            await self._drained.wait(f"{self.name} shut down: drain {len(self._processing)} item(s) in processing")
        self._drained = None

    def _shut(self, what: str, items: tuple[T, ...], kind: str) -> None:
        if self._shutting_down:
            return
        self._shutting_down = True
        if self._world.noting:
            said = [describe_item(i) for i in items]
            self._world.note(f"{self.name} queue {what} " + (", ".join(said) if said else "nothing"),
                             kind=kind, keys=tuple(k for k in said if "/" in k), queue=self.name,
                             **({"lost": said} if kind == "crash" else {"op": "drain", "processing": said}))
        for entry in self._waiting.values():
            entry.handle.cancel()  # their adds would be dropped: the delaying queue ignores adds once shut down
        self._waiting.clear()
        self._wake.put_nowait(_SHUTDOWN)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def __len__(self) -> int:
        """``Len``: items in the FIFO only; processing and waiting items are not counted."""
        self._read(len(self._queue), "queued")
        return len(self._queue)

    def _read(self, n: int, what: str) -> None:
        """A read of the whole queue (a metric, ``Len``): it reads from the last write of any item."""
        if self._world._fp is not None:
            self._world.touch(self._res, said=f"{self.name} queue: {what} {n}")

    # ----------------------------------------------------- delaying_queue.go
    def add_after(self, item: T, delay: float) -> None:
        """``AddAfter``: ``delay <= 0`` is ``add``; a waiting entry's ready time only moves earlier."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._world.now + delay
        entry = self._waiting.get(item)
        if self._world._fp is not None:
            self._touch(item, f"AddAfter {delay:g} s: due at t={ready_at:.3f}")
        if self._world.noting:
            self._note(item, f"AddAfter {{}} {delay:g} s: due at t={ready_at:.3f}" + (
                "" if entry is None or ready_at < entry.ready_at else
                f" (already waiting until t={entry.ready_at:.3f}, which stays)"), "add_after", due=ready_at)
        if entry is not None:
            if ready_at < entry.ready_at:
                entry.handle.cancel()
                entry.ready_at = ready_at
                entry.handle = self._schedule(item, delay)
            return
        self._waiting[item] = _Waiting(ready_at, self._schedule(item, delay))

    def _schedule(self, item: T, delay: float) -> TimerHandle:
        text = describe_item(item)

        def ready() -> None:
            self._waiting.pop(item, None)
            if self._world._fp is not None:
                self._world.touch(self._res_item + text, said=f"{self.name} ready {text}")
            self.add(item)

        return self._world.call_later(delay, ready, label=f"{self.name} ready {text}", actor=f"{self.name}/delay", key=text)

    # ------------------------------------------------ rate_limiting_queue.go
    def add_rate_limited(self, item: T) -> None:
        """``AddRateLimited``: ``add_after(item, rate_limiter.when(item))``."""
        delay = self.rate_limiter.when(item)
        if self._world._fp is not None:  # the failure count it read and raised
            res = f"{self.name} rate limiter: {describe_item(item)}"
            self._world.touch(res, said=f"requeue #{self.rate_limiter.num_requeues(item)}")
            self._world.touch(res, write=True, said=f"{delay:g} s")
        if self._world.noting:
            self._note(item, f"AddRateLimited {{}}: the rate limiter says {delay:g} s "
                       f"(requeue #{self.rate_limiter.num_requeues(item)})", "add_rate_limited", delay=delay)
        self.add_after(item, delay)

    def forget(self, item: T) -> None:
        """``Forget``: clears the limiter's failure count only; a waiting entry stays."""
        if self._world._fp is not None:
            self._world.touch(f"{self.name} rate limiter: {describe_item(item)}", write=True, said="Forget",
                              decides=False)
        if self._world.noting:
            waiting = self._waiting.get(item)
            self._note(item, "Forget {}: failure count reset" + (
                f"; its waiting entry (due t={waiting.ready_at:.3f}) stays" if waiting else ""), "forget")
        self.rate_limiter.forget(item)

    def _touch(self, item: T, said: str) -> None:
        """A write of the queue (its order) and of ``item``'s place in it."""
        world = self._world
        text = describe_item(item)
        world.touch(self._res, write=True, said=f"{self.name} queue: {said} {text}")
        world.touch(self._res_item + text, write=True, said=f"{self.name} queue: {said} {text}")

    def _read_item(self, item: T, said: str) -> None:
        if self._world._fp is not None:
            text = describe_item(item)
            self._world.touch(self._res_item + text, said=f"{self.name} queue: {text} {said}")

    def _note(self, item: T, text: str, op: str, **fields: Any) -> None:
        """A note of the queue (``text`` has ``{}`` where the item goes); the item's key ties it to its object."""
        said = describe_item(item)
        key = getattr(item, "key", None) if not isinstance(item, str) else item
        self._world.note(f"{self.name} queue: " + text.format(said), kind="queue",
                         keys=(key,) if isinstance(key, str) else (), queue=self.name, op=op, item=said, **fields)

    def num_requeues(self, item: T) -> int:
        """How many rate-limited re-adds of ``item`` the rate limiter counts (``NumRequeues``)."""
        return self.rate_limiter.num_requeues(item)

    # --------------------------------------------------------------- metrics
    @property
    def queued(self) -> int:
        self._read(len(self._queue), "queued")
        return len(self._queue)

    @property
    def processing(self) -> int:
        self._read(len(self._processing), "processing")
        return len(self._processing)

    @property
    def waiting(self) -> int:
        self._read(len(self._waiting), "waiting")
        return len(self._waiting)

    @property
    def failures(self) -> int:
        """Items the rate limiter keeps a failure count for (grows until each is forgotten)."""
        return self.rate_limiter.tracked()

    @property
    def backlog(self) -> int:
        """``queued + processing + waiting``: every item the queue still owes a processing."""
        n = len(self._queue) + len(self._processing) + len(self._waiting)
        self._read(n, "backlog")
        return n

    def is_processing(self, item: T) -> bool:
        """Whether a worker holds ``item`` now (between ``get`` and ``done``)."""
        self._read_item(item, "processing" if item in self._processing else "not processing")
        return item in self._processing

    def is_waiting(self, item: T) -> bool:
        """Whether ``item`` waits for a delayed add (``add_after`` or ``add_rate_limited``) to fire."""
        self._read_item(item, "waiting" if item in self._waiting else "not waiting")
        return item in self._waiting

    def ready_at(self, item: T) -> float | None:
        """When a waiting item becomes ready, or None."""
        entry = self._waiting.get(item)
        self._read_item(item, "not waiting" if entry is None else f"ready at t={entry.ready_at:.3f}")
        return None if entry is None else entry.ready_at
