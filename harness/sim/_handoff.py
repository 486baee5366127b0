"""Lockstep threads hand off on each other's locks: a blocked ``acquire`` is a wait the world sees.

Under the world one lockstep thread (``_lockstep``) runs at a time, so a thread
that blocks for real on a lock another one holds would wait for ever: the holder
runs again only when its actor is chosen, and the world stands still while the
blocked thread runs. Once lockstep threads may exist (:func:`install`, when a
:class:`~harness.sim.WorldLoop` or an asyncio ``Operator`` is made, before an
operator's module is imported), ``threading.Lock``, ``threading.RLock`` and
``threading._allocate_lock`` (the waiter lock of ``Condition.wait``) make thin
wrappers around the real locks. ``Condition``, ``Semaphore``,
``BoundedSemaphore``, ``Barrier``, ``Event`` and ``queue.Queue`` (with its Lifo
and Priority variants) are built from those in pure Python, so they follow.

* Outside a lockstep thread a wrapper is the real lock: a blocking acquire
  blocks (the Trio thread, a thread the operator started itself).
* In a lockstep thread a blocking acquire first tries the real lock without
  blocking; when it is taken, the thread hands a wait to its actor, a yield
  point of the world labelled where the thread waits (``wait for a lock at
  handlers.py:12 in created``), enabled once the lock looks free. The world
  chooses among the enabled actors, so which waiting thread takes a released
  lock is the world's choice, never the OS's; the thread retries, without
  blocking, only when its actor is resumed. A ``timeout`` is virtual time.
* A release needs nothing: the world looks at a waiter's lock when it decides.

Locks made before :func:`install` (a library's module-level lock), and those
made through a name imported before it (``from threading import Lock`` in a
module loaded earlier: kubernetes' ``ApiClient``, urllib3's pool container) stay
real C locks: a lockstep thread blocked on one held by a parked thread is still
stopped after two real seconds, a model error at its line (``_lockstep``).
A lock released by a thread outside the world (one the operator starts itself)
is seen when the world next decides; such a thread is not the world's to order.

Rejected: waking every parked thread whenever any thread hands back (each retry
a step of its own, most of them failing), and noting releases on the lock (a
cost on every release in the process, where polling the parked ones' locks at a
decision costs only while a thread waits).
"""

from __future__ import annotations

import _thread
import queue
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import trio

from ._actors import _whose, shown_name

if TYPE_CHECKING:
    from ._lockstep import _Worker

#: the lockstep thread's worker (``_lockstep``), per thread
_local = threading.local()

_REAL_LOCK = _thread.allocate_lock
_REAL_RLOCK: Callable[[], Any] = _thread.RLock
_installed = False


class _Wrapped:
    """The real lock ``make()`` gives, taken at once when free; a hand-off (:func:`_wait`) when a lockstep thread
    would wait for it. What ``_Lock`` and ``_RLock`` share."""

    __slots__ = ("__weakref__", "_lock", "release")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._lock = make()
        #: the real lock's own release (a release never waits: no Python frame in between)
        self.release: Callable[[], None] = self._lock.release

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if blocking and timeout == -1:
            return bool(self._lock.acquire(False)) or _wait(self, -1)
        return _acquire(self, blocking, timeout)

    def __enter__(self) -> bool:
        return bool(self._lock.acquire(False)) or _wait(self, -1)

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self._lock.release()

    def _free(self) -> bool:
        """Whether the lock looks free (what a parked thread's wait asks before it retries)."""
        raise NotImplementedError


class _Lock(_Wrapped):
    """``threading.Lock()`` once lockstep threads may exist: the real lock, a hand-off when a lockstep thread waits."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_REAL_LOCK)

    def locked(self) -> bool:
        return bool(self._lock.locked())

    acquire_lock = _Wrapped.acquire  # (the old names ``_thread.lock`` keeps)
    locked_lock = locked

    def release_lock(self) -> None:
        self._lock.release()

    def _free(self) -> bool:
        return not self._lock.locked()

    def _at_fork_reinit(self) -> None:
        self._lock._at_fork_reinit()

    def __repr__(self) -> str:
        return repr(self._lock).replace("_thread.lock", "lock", 1)


class _RLock(_Wrapped):
    """``threading.RLock()`` once lockstep threads may exist (see :class:`_Lock`); ``Condition`` uses its
    ``_release_save``/``_acquire_restore``, so a condition's re-acquire after a wait hands off too."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_REAL_RLOCK)

    def _is_owned(self) -> bool:
        return self._lock._is_owned()  # type: ignore[no-any-return]

    def _release_save(self) -> Any:
        return self._lock._release_save()

    def _acquire_restore(self, state: tuple[int, int]) -> None:
        worker: _Worker | None = getattr(_local, "worker", None)
        if worker is None or worker.real_waits:
            self._lock._acquire_restore(state)
            return
        self.acquire()  # (as this thread's again: then its count back, each a re-entry that cannot wait)
        for _ in range(state[0] - 1):
            self._lock.acquire()

    def _recursion_count(self) -> int:
        return self._lock._recursion_count()  # type: ignore[no-any-return]

    def _free(self) -> bool:
        # Looked at on the world's thread, which holds no lock a lockstep thread waits for: a free RLock is taken
        # and given back at once (the C RLock says nothing of its owner).
        if self._lock.acquire(False):
            self._lock.release()
            return True
        return False

    def _at_fork_reinit(self) -> None:
        self._lock._at_fork_reinit()

    def __repr__(self) -> str:
        return repr(self._lock).replace("_thread.RLock", "RLock", 1)


_Wrapper = _Wrapped


def _acquire(lock: _Wrapper, blocking: bool, timeout: float) -> bool:
    """An acquire that is not the plain blocking one: non-blocking, or with a timeout."""
    if not blocking or (timeout != -1 and not timeout >= 0):  # (the real lock's answer, or its ValueError)
        return bool(lock._lock.acquire(blocking, timeout))
    return bool(lock._lock.acquire(False)) or _wait(lock, timeout)


def _wait(lock: _Wrapper, timeout: float) -> bool:
    """A blocking acquire found the lock taken: a lockstep thread hands off, any other thread waits for real."""
    worker: _Worker | None = getattr(_local, "worker", None)
    if worker is None or worker.real_waits:
        return bool(lock._lock.acquire(True, timeout))
    return hand_off(worker, lock, timeout)


def hand_off(worker: _Worker, lock: _Wrapper, timeout: float) -> bool:
    """Wait in the world until ``lock`` looks free (at most ``timeout`` virtual seconds), then retry; repeat."""
    what, where = waiting_where(sys._getframe(2))
    label = f"wait for {what} at {where}"
    world = worker.world
    deadline: list[float] = []

    async def park() -> bool:
        """The actor's wait: False once the timeout passed."""
        if timeout == -1:
            await world._yield(label, guard=lock._free, idle=True)
            return True
        if not deadline:
            deadline.append(trio.current_time() + timeout)
        with trio.move_on_at(deadline[0]) as scope:
            await world._yield(label, guard=lock._free, idle=True)
        return not scope.cancelled_caught

    worker.waiting_on = (what, where)
    try:
        while True:
            in_time = worker.call(park)
            if lock._lock.acquire(False):
                return True
            if not in_time:
                return False
    finally:
        worker.waiting_on = None


#: what a thread waits for, by the outermost frame of ``threading`` or ``queue`` it waits in
_KINDS = {"Semaphore": "a semaphore", "BoundedSemaphore": "a semaphore", "Condition": "a condition",
          "Barrier": "a barrier", "Event": "an event's lock", "Queue.get": "an item of a queue",
          "Queue.put": "room in a queue", "Queue.join": "a queue's tasks done"}
_STDLIB_WAITS = (threading.__file__, queue.__file__)


def waiting_where(frame: FrameType | None) -> tuple[str, str]:
    """``("a condition", "handlers.py:12 in created")``: what a thread waits for, and the model's line it waits at
    (else the innermost line outside the harness and ``threading``)."""
    what = "a lock"
    package: str | None = None
    stdlib: str | None = None
    for _ in range(200):
        if frame is None:
            break
        code = frame.f_code
        path = code.co_filename
        at = f"{shown_name(path)}:{frame.f_lineno} in {code.co_name}"
        if path in _STDLIB_WAITS:
            name = code.co_qualname
            kind = _KINDS.get(name) or _KINDS.get(name.split(".")[0])
            if kind is not None:
                what, stdlib = kind, at
        elif not path.startswith("<"):
            whose = _whose(path)
            if whose == 2:
                return what, at
            if whose == 1 and package is None:
                package = at
        frame = frame.f_back
    return what, package or stdlib or "an unknown line"


def install() -> None:
    """Make ``threading.Lock``, ``threading.RLock`` and ``Condition.wait``'s waiter lock the wrappers (once per
    process; the locks made before stay real)."""
    global _installed
    if not _installed:
        _installed = True
        threading.Lock = _Lock  # type: ignore[assignment]
        threading._allocate_lock = _Lock  # type: ignore[attr-defined]
        threading.RLock = _RLock  # type: ignore[assignment]

