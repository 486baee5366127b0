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

What a thread cannot do under the world is wait on something only another
thread ends (a ``threading.Event`` another handler sets, a lock held across an
operation): the world runs one of them at a time, so the wait would never end.
Such a wait is found by the watchdog of the step, which names the thread's line.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import trio

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
        while True:
            try:
                return self._to_world.get(timeout=0.05)  # (slices: a signal or the watchdog can still interrupt)
            except queue.Empty:
                continue

    def resume(self, ok: bool, value: Any) -> tuple[str, Any]:
        self._to_thread.put((ok, value))
        return self.next()


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
            while what == "job":
                loop.take_from_threads()
                try:
                    result = await value()
                except Exception as exc:
                    what, value = worker.resume(False, exc)
                else:
                    what, value = worker.resume(True, result)
        except BaseException:
            while what == "job":  # cancelled where it waited: the thread's stack unwinds, its operations refused
                what, value = worker.resume(False, _Abandoned())
            raise
        finally:
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
_installed = False


def _sleep(seconds: float) -> None:
    """``time.sleep``: a virtual sleep of the actor in a lockstep thread, the real one anywhere else."""
    if getattr(_local, "worker", None) is None:
        _REAL_SLEEP(seconds)
        return
    call_in_world(lambda: trio.sleep(max(0.0, seconds)))


def install_time_sleep() -> None:
    """Make ``time.sleep`` in a lockstep thread the world's (once per process; other threads sleep for real)."""
    global _installed
    if not _installed:
        _installed = True
        time.sleep = _sleep  # type: ignore[assignment]
