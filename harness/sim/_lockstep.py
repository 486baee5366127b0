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
What a thread cannot do under the world is wait on a lock, a condition or a
queue only another thread ends: the world runs one of them at a time, so the
wait would never end. After two real seconds of such a wait the run stops
with a model error at the thread's line.
"""

from __future__ import annotations

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

from ._actors import _whose, shown_name
from ._tasks import VERBATIM

if TYPE_CHECKING:
    from ._asyncio import WorldLoop

T = TypeVar("T")

_local = threading.local()


class _Abandoned(BaseException):
    """Raised in a lockstep thread whose actor was cancelled (a crash, the run's end): its stack unwinds."""


class _Worker:
    """One call in its own thread, handing the world's operations to its actor and waiting for their outcome."""

    def __init__(self, func: Callable[..., Any], args: tuple[Any, ...], name: str) -> None:
        self.func = func
        self.args = args
        #: the context of the call (an operator's route to its apiserver): a thread starts with an empty one
        self.context = contextvars.copy_context()
        self._to_world: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._to_thread: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)

    def _main(self) -> None:
        _local.worker = self
        try:
            result = self.context.run(self.func, *self.args)
        except _Abandoned:
            self._to_world.put(("abandoned", None))
        except BaseException as exc:
            self._to_world.put(("raised", exc))
        else:
            self._to_world.put(("returned", result))

    # the thread's side
    def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        self._to_world.put(("job", fn))
        ok, value = self._to_thread.get()
        if ok:
            return value  # type: ignore[no-any-return]
        raise value

    # the world's side: the Trio thread blocks until the thread hands something back (the world stands still)
    def next(self) -> tuple[str, Any]:
        waited = 0.0
        while True:
            try:
                item = self._to_world.get(timeout=0.05)  # (slices: a signal or the watchdog can still interrupt)
            except queue.Empty:
                waited += 0.05
                if waited >= _BLOCKED_AFTER and (where := self.blocked_at()) is not None:
                    return ("blocked", where)
                continue
            _flush_sets()
            return item

    def blocked_at(self) -> str | None:
        """Where the thread waits, if it waits on a lock, a condition or a queue only another thread can end."""
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
        self._to_thread.put((ok, value))
        return self.next()


def _outward(frame: FrameType | None, limit: int) -> Iterator[FrameType]:
    for _ in range(limit):
        if frame is None:
            return
        yield frame
        frame = frame.f_back


#: real seconds a lockstep thread may wait on a threading primitive before that is called a misuse
_BLOCKED_AFTER = 2.0


def in_lockstep_thread() -> bool:
    """Whether the calling thread is a lockstep thread (its world operations go through :func:`call_in_world`)."""
    return getattr(_local, "worker", None) is not None


def call_in_world(fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``await fn()`` as the calling lockstep thread's actor (its yield points), and return its outcome."""
    worker: _Worker | None = getattr(_local, "worker", None)
    if worker is None:
        raise RuntimeError("call_in_world is called from a lockstep thread (an executor call under a WorldLoop)")
    return worker.call(fn)


def run_in_thread(loop: WorldLoop, func: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
    """``loop.run_in_executor(executor, func, *args)`` under the world: an actor running ``func`` in lockstep."""
    install_time_sleep()
    fut: asyncio.Future[T] = loop.create_future()
    target: Any = func
    for _ in range(5):  # functools.partial (of Context.run, as asyncio.to_thread and kopf wrap): name what it calls
        inner = getattr(target, "func", None)
        if inner is None:
            break
        args_of = getattr(target, "args", ())
        target = args_of[0] if getattr(inner, "__name__", "") == "run" and args_of and callable(args_of[0]) else inner
    name = getattr(target, "__name__", None) or type(target).__name__

    async def drive() -> None:
        worker = _Worker(func, args, f"{loop.current_name() or 'loop'}:{name}")
        worker.thread.start()
        what, value = worker.next()
        try:
            if what == "blocked":
                raise loop._outside(f"a thread of the operator ({name}) waits on a lock, a condition or a queue "
                                    f"at {value}, which only another thread can end; under the world one thread "
                                    "runs at a time (threading.Event and time.sleep are the world's waits)")
            while what == "job":
                loop.take_from_threads()
                try:
                    result = await value()
                except Exception as exc:
                    what, value = worker.resume(False, exc)
                else:
                    what, value = worker.resume(True, result)
                if what == "blocked":
                    raise loop._outside(f"a thread of the operator ({name}) waits on a lock, a condition or a "
                                        f"queue at {value}, which only another thread can end; under the world one "
                                        "thread runs at a time (threading.Event and time.sleep are the world's waits)")
        except BaseException:
            while what == "job":  # cancelled where it waited: the thread's stack unwinds, its operations refused
                what, value = worker.resume(False, _Abandoned())
            raise
        finally:
            if what != "blocked":  # (a thread blocked outside the world is left to itself: a daemon thread)
                worker.thread.join()
            loop.take_from_threads()
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
    if getattr(_local, "worker", None) is None or self.is_set() \
            or sys._getframe(1).f_code.co_filename == threading.__file__:
        # (threading's own hand-offs, a Thread.start waiting for the new thread to run, end at once)
        return _REAL_EVENT_WAIT(self, timeout)

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


def install_time_sleep() -> None:
    """Make ``time.sleep`` and ``threading.Event.wait`` in a lockstep thread the world's (once per process; other
    threads wait for real)."""
    global _installed
    if not _installed:
        _installed = True
        time.sleep = _sleep  # type: ignore[assignment]
        threading.Event.wait = _event_wait  # type: ignore[method-assign]
        threading.Event.set = _event_set  # type: ignore[method-assign]
