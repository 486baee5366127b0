"""Blocking code in threads, in lockstep with the world: one thread or actor runs at a time, never both.

kopf runs an operator's plain ``def`` handlers in its thread pool
(``loop.run_in_executor``), and those call the synchronous official client
and ``time.sleep``. Threads run when the OS says; under the world each call
becomes an actor (named after the function, ``kopf-op/create_fn``) whose code
runs in a real thread *while the Trio thread waits for it*, so nothing else
moves meanwhile. When the thread reaches an operation of the world (a request
to the apiserver through an intercepted client, ``time.sleep``), it hands that
operation to its actor, which runs it as Trio code (its yield points, its
virtual sleeps: the world's choices) and hands the outcome back. The thread's
own code between two such operations is one step of its actor.

``threading.Event.wait`` in such a thread (kopf's ``stopped.wait(5)`` in a
sync daemon) is a wait of its actor in virtual time, woken when the Event is
set (by the loop, or by another lockstep thread once that one hands back).
A thread that blocks on a lock, a condition, a semaphore or a queue another
thread holds hands off (``_handoff``): its actor waits in the world, labelled
where it waits, until the lock looks free, and the world chooses which thread
goes on. Such a wait is a model error only when no thread of the world could
end it: when the run ends (it settled, or every other thread waits too) with
the thread still waiting, at the thread's line.

The hand-over is strict, so which thread runs is the world's choice alone:
the two sides hand over through real locks, and each side blocks on its own
lock as soon as it handed over, allocating nothing in between (the garbage
collector runs in whichever thread allocates past its threshold: it then runs
at the same point of every run). The world waits for a thread in slices of
:data:`_SLICE` real seconds (a signal or the watchdog can interrupt it), and a
slice decides nothing, with one exception: a thread that waits for real on a
lock made before the hand-offs were installed (a library's module-level lock,
see ``_handoff``) for :data:`_BLOCKED_AFTER` real seconds, in ``threading`` or
``queue``, is a model error at its line: a thread the world waits for can only
be released by one the world does not run. A thread given up that way, or
running when the world was interrupted, is left to itself and refused any
further operation of the world.
"""
from __future__ import annotations

import _thread
import asyncio
import contextvars
import linecache
import math
import queue
import sys
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

import trio
import trio.lowlevel as tl

from . import _handoff
from ._actors import _whose, shown_name
from ._handoff import _local
from ._tasks import VERBATIM

if TYPE_CHECKING:
    from ._asyncio import WorldLoop
    from ._world import World

T = TypeVar("T")

_REAL_LOCK = _thread.allocate_lock
#: real seconds between two looks at a thread the world waits for (a signal or the watchdog can interrupt)
_SLICE = 0.05
#: real seconds a lockstep thread may wait on a real lock (one made before :func:`install`) before that is called
#: a misuse
_BLOCKED_AFTER = 2.0
_BLOCKED_SLICES = round(_BLOCKED_AFTER / _SLICE)


class _Abandoned(BaseException):
    """Raised in a lockstep thread whose actor was cancelled (a crash, the run's end): its stack unwinds."""


class _Worker:
    """One call in its own thread, handing the world's operations to its actor and waiting for their outcome.

    The two sides hand over through two real locks, each a one-slot mailbox: the
    thread puts what it hands the world in ``_item`` and releases ``_handed``;
    the world puts the outcome in ``_reply`` and releases ``_resumed``. A side
    that hands over runs no Python code that allocates until it blocks on its
    own lock (no ``queue.Empty`` raised per slice, as a queue's ``get(timeout)``
    would): the garbage collector, which runs in whichever thread allocates past
    its threshold, then runs at the same point of every run whatever the OS does.
    """

    def __init__(self, loop: WorldLoop, func: Callable[..., Any], args: tuple[Any, ...], name: str,
                 started_at: str | None) -> None:
        self.func = func
        self.args = args
        self.world: World = loop.world
        #: the model's line that started the call (``run_in_executor``), for a thread with none of its own
        self.started_at = started_at
        #: the context of the call (an operator's route to its apiserver): a thread starts with an empty one
        self.context = contextvars.copy_context()
        self._handed = _REAL_LOCK()
        self._handed.acquire()
        self._item: tuple[str, Any] = ("", None)
        self._resumed = _REAL_LOCK()
        self._resumed.acquire()
        self._reply: tuple[bool, Any] = (True, None)
        #: threading's own waits (``Thread.start`` waiting for the new thread) wait for real, not in the world
        self.real_waits = False
        #: ``(what, where)`` while the thread waits on a lock, a condition or a queue (a hand-off, ``_handoff``)
        self.waiting_on: tuple[str, str] | None = None
        #: given up (it blocked outside the world): whatever it hands the world later is refused
        self.detached = False
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)

    def _main(self) -> None:
        _local.worker = self
        try:
            result = self.context.run(self.func, *self.args)
        except _Abandoned:
            item: tuple[str, Any] = ("abandoned", None)
        except BaseException as exc:
            item = ("raised", exc)
        else:
            item = ("returned", result)
        self._item = item
        self._handed.release()

    # the thread's side
    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        if self.detached:
            raise _Abandoned
        self._item = ("job", fn)
        self._handed.release()
        self._resumed.acquire()
        ok, value = self._reply
        if ok:
            return value  # type: ignore[no-any-return]
        raise value

    # the world's side: the Trio thread blocks until the thread hands something back (the world stands still)
    def next(self) -> tuple[str, Any]:
        handed = self._handed
        slices = 0
        while not handed.acquire(True, _SLICE):
            slices += 1
            if slices % _BLOCKED_SLICES == 0 and (where := self.blocked_at()) is not None:
                self.detached = True
                return ("blocked", where)
        item = self._item
        self._item = ("", None)
        _flush_sets()
        return item

    def blocked_at(self) -> str | None:
        """Where the thread waits, if it waits for real on a lock, a condition or a queue (one made before the
        hand-offs were installed) that only another thread can end."""
        frame = sys._current_frames().get(self.thread.ident or -1)
        if frame is None or not any(f.f_code.co_filename == threading.__file__ or f.f_code.co_filename == queue.__file__
                                    for f in _outward(frame, 4)):
            return None
        for f in _outward(frame, 200):
            path = f.f_code.co_filename
            if not path.startswith("<") and _whose(path) == 2:
                line = linecache.getline(path, f.f_lineno).strip()
                return f"{shown_name(path)}:{f.f_lineno} in {f.f_code.co_name}" + (f" ({line[:80]})" if line else "")
        return f"{shown_name(frame.f_code.co_filename)}:{frame.f_lineno} in {frame.f_code.co_name}"

    def resume(self, ok: bool, value: Any) -> tuple[str, Any]:
        self._reply = (ok, value)
        self._resumed.release()
        return self.next()


def _outward(frame: FrameType | None, limit: int) -> Iterator[FrameType]:
    for _ in range(limit):
        if frame is None:
            return
        yield frame
        frame = frame.f_back


def in_lockstep_thread() -> bool:
    """Whether the calling thread is a lockstep thread (its world operations go through :func:`call_in_world`)."""
    return getattr(_local, "worker", None) is not None


def call_in_world(fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``await fn()`` as the calling lockstep thread's actor (its yield points), and return its outcome."""
    worker: _Worker | None = getattr(_local, "worker", None)
    if worker is None:
        raise RuntimeError("call_in_world is called from a lockstep thread (an executor call under a WorldLoop)")
    return worker.call(fn)


#: the lockstep threads of each world, oldest first (what the run's end looks at)
_threads_of: weakref.WeakKeyDictionary[World, list[_Worker]] = weakref.WeakKeyDictionary()
#: worlds whose end was looked at (once: the first thread cancelled at the end looks at them all)
_ends_seen: weakref.WeakSet[World] = weakref.WeakSet()


def _left_waiting(world: World) -> tuple[_Worker, bool] | None:
    """At the run's end: the oldest thread still waiting on a lock, a condition or a queue that no thread of the
    world could release (the run settled, or every other live thread waits on one too), and whether it settled."""
    if world in _ends_seen:
        return None
    _ends_seen.add(world)
    threads = _threads_of.get(world, [])
    waiting = [w for w in threads if w.waiting_on is not None]
    if not waiting:
        return None
    settled = world._ended and world._now_ns < world._horizon_ns
    if settled or len(waiting) == len(threads):
        return waiting[0], settled
    return None


def _blocked_message(name: str, where: str) -> str:
    return (f"a thread of the operator ({name}) waits for real on a lock, a condition or a queue at {where}, which "
            "only another thread can end; under the world one thread runs at a time. The lock was made before the "
            "harness was loaded (a module-level lock of a library, or `from threading import Lock` imported "
            "earlier), so the world cannot hand it off: make it after the harness is imported, or in the operator's "
            "own module")


def run_in_thread(loop: WorldLoop, func: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
    """``loop.run_in_executor(executor, func, *args)`` under the world: an actor running ``func`` in lockstep."""
    from ._asyncio import model_line_here

    install()
    fut: asyncio.Future[T] = loop.create_future()
    target: Any = func
    for _ in range(5):  # functools.partial (of Context.run, as asyncio.to_thread and kopf wrap): name what it calls
        inner = getattr(target, "func", None)
        if inner is None:
            break
        args_of = getattr(target, "args", ())
        target = args_of[0] if getattr(inner, "__name__", "") == "run" and args_of and callable(args_of[0]) else inner
    name = getattr(target, "__name__", None) or type(target).__name__
    started_at = model_line_here()
    world = loop.world

    async def drive() -> None:
        worker = _Worker(loop, func, args, f"{loop.current_name() or 'loop'}:{name}", started_at)
        threads = _threads_of.setdefault(world, [])
        threads.append(worker)
        worker.thread.start()
        # what the thread handed back last: "job" (it waits for the outcome), "running" (it runs: the Trio thread
        # waits in next()), or how it ended ("returned", "raised", "abandoned"; "blocked" outside the world)
        what, value = "running", None
        try:
            what, value = worker.next()
            while what == "job":
                loop.take_from_threads()
                _wake_parked(world)
                try:
                    reply = (True, await value())
                except Exception as exc:
                    reply = (False, exc)
                what = "running"
                what, value = worker.resume(*reply)
            if what == "blocked":
                raise loop._outside(_blocked_message(name, value))
        except BaseException:
            if what == "job" and world._stopping and (left := _left_waiting(world)) is not None:
                _never_released(world, *left)
            while what == "job":  # cancelled where it waited: the thread's stack unwinds, its operations refused
                what = "running"
                what, value = worker.resume(False, _Abandoned())
            raise
        finally:
            if what in ("returned", "raised", "abandoned"):
                worker.thread.join()
            else:  # blocked outside the world, or running when the world was interrupted: left to itself (a daemon)
                worker.detached = True
            threads.remove(worker)
            loop.take_from_threads()
            _wake_parked(world)
        if fut.done():
            return
        if what == "returned":
            fut.set_result(value)
        elif what == "raised":
            fut.set_exception(value)
        else:
            fut.cancel()

    loop.spawn_host(VERBATIM + name, drive)
    return fut


def _never_released(world: World, worker: _Worker, settled: bool) -> None:
    """A model error: the run ended with ``worker`` waiting on what no thread of the world could release."""
    assert worker.waiting_on is not None
    what, where = worker.waiting_on
    name = worker.thread.name.rpartition(":")[2]
    started = f" (started by run_in_executor at {worker.started_at})" if worker.started_at else ""
    how = "settled" if settled else "ended with every other thread waiting too"
    world._fail("misuse", f"misuse in {name}",
                f"a thread of the operator ({name}){started} waits for {what} at {where}, and no thread of the world "
                f"releases it: the run {how}, and nothing else could. Release what a thread acquires (`with lock:`), "
                "take locks in one order, and give a thread that waits for work (a queue's get) a producer or a "
                "timeout", next((a for a in world._actors if a.task is tl.current_task()), None))


def _wake_parked(world: World) -> None:
    """Under the real clock a parked thread's guard is looked at when the world is woken: after a hand-back."""
    wake = world._wake
    if wake is not None and any(w.waiting_on is not None for w in _threads_of.get(world, ())):
        wake()


_REAL_SLEEP = time.sleep
_REAL_EVENT_WAIT = threading.Event.wait
_REAL_EVENT_SET = threading.Event.set
_installed = False
#: the world's waiters of a threading.Event waited on in a lockstep thread
_event_waiters: weakref.WeakKeyDictionary[threading.Event, list[trio.Event]] = weakref.WeakKeyDictionary()
#: Events a lockstep thread set: their waiters are woken on the Trio thread, when the thread hands back
_sets_from_threads: list[threading.Event] = []


def _event_wait(self: threading.Event, timeout: float | None = None) -> bool:
    """``threading.Event.wait`` in a lockstep thread: a wait of its actor in virtual time (elsewhere: the real one)."""
    worker: _Worker | None = getattr(_local, "worker", None)
    if worker is None or self.is_set():
        return _REAL_EVENT_WAIT(self, timeout)
    if sys._getframe(1).f_code.co_filename == threading.__file__:
        # threading's own hand-offs (a Thread.start waiting for the new thread to run) end at once, for real: the
        # locks they wait on are released by a thread outside the world, never by a hand-off
        saved, worker.real_waits = worker.real_waits, True
        try:
            return _REAL_EVENT_WAIT(self, timeout)
        finally:
            worker.real_waits = saved

    async def wait() -> bool:
        woken = trio.Event()
        _event_waiters.setdefault(self, []).append(woken)
        try:
            with trio.move_on_after(math.inf if timeout is None else max(0.0, timeout)):
                await woken.wait()
        finally:
            waiters = _event_waiters.get(self)
            if waiters is not None and woken in waiters:
                waiters.remove(woken)
        return self.is_set()

    return call_in_world(wait)


def _event_set(self: threading.Event) -> None:
    _REAL_EVENT_SET(self)
    if self in _event_waiters:
        if tl.in_trio_run():  # the world's own thread: the waiters wake now
            for woken in _event_waiters.pop(self, []):
                woken.set()
        else:  # a lockstep thread or any other: Trio is only ever touched from its own thread
            _sets_from_threads.append(self)


def _flush_sets() -> None:
    while _sets_from_threads:
        for woken in _event_waiters.pop(_sets_from_threads.pop(0), []):
            woken.set()


def _sleep(seconds: float) -> None:
    """``time.sleep``: a virtual sleep of the actor in a lockstep thread, the real one anywhere else."""
    if getattr(_local, "worker", None) is None:
        _REAL_SLEEP(seconds)
        return
    call_in_world(lambda: trio.sleep(max(0.0, seconds)))


def install() -> None:
    """Make ``time.sleep``, ``threading.Event.wait`` and a blocked acquire of a lock (``_handoff``) in a lockstep
    thread the world's (once per process; other threads wait for real). Called when a WorldLoop is made, before an
    operator's module is imported, so that module's locks are hand-off locks."""
    global _installed
    _handoff.install()
    if not _installed:
        _installed = True
        time.sleep = _sleep  # type: ignore[assignment]
        threading.Event.wait = _event_wait  # type: ignore[method-assign]
        threading.Event.set = _event_set  # type: ignore[method-assign]
