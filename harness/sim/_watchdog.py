"""The watchdog: an actor that runs on without reaching a yield point is stopped, never a silent hang.

The scheduler decides every switch, but only at yield points: an actor that
never reaches one (``while True: pass``, a retry loop around something the
harness does not schedule, a quadratic loop over a big list) holds the one
thread the world runs on, and nothing else can run. A newcomer's hunt of such a
model printed nothing for ever, and the first Ctrl-C only set a flag that the
search would read between runs, which never came.

A daemon thread watches the world's step counter on the wall clock. When the
counter has not moved for :data:`DEFAULT_BOUND` seconds (``limit``), it raises
:class:`NoYield` asynchronously in the world's thread (CPython's
``PyThreadState_SetAsyncExc``: the exception lands at the next bytecode the
looping code runs, in the actor's own frame, so its line is the one reported).
The run then ends with a ``no-yield`` violation that the search reports as a
model error naming the actor and the line. After a stop request (Ctrl-C,
SIGTERM, a closed pipe) it waits only :data:`STOP_GRACE` seconds of no progress:
a stop answers within seconds even inside such a loop.

The clock is injectable (``clock=``), so a test never depends on how fast the
machine is; the bound is an option (``World(yield_timeout=...)``, ``hunt
--yield-timeout``). Code blocked in C (a ``time.sleep``, a socket read) does not
run bytecode and is not interrupted: those are the ``blocked-outside`` checks'.

Rejected: ``signal.setitimer`` (signals reach only the main thread, and xdist or
Dask workers run worlds elsewhere); a ``sys.settrace`` budget (it slows every
run by an order of magnitude to catch a model error that is rare).
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from typing import Any

#: seconds of wall time an actor may run without reaching a yield point
DEFAULT_BOUND = 10.0
#: seconds of no progress after a stop request before the running actor is stopped
STOP_GRACE = 2.0
#: how often the watchdog looks (wall seconds)
POLL = 0.05


class NoYield(BaseException):
    """Raised inside an actor that ran past the watchdog's bound without a yield point.

    A ``BaseException``: a model's ``except Exception`` around its loop must not
    swallow it.
    """


class Tripped:
    """What the watchdog saw when it stopped an actor: who, for how long, and why."""

    __slots__ = ("actor", "seconds", "stop")

    def __init__(self, actor: str | None, seconds: float, stop: bool) -> None:
        self.actor = actor
        self.seconds = seconds
        #: stopped because a stop was requested (Ctrl-C), not because the bound passed
        self.stop = stop


def _stop_requested() -> bool:
    from .._interrupt import stop_requested

    return stop_requested()


class Watch:
    """One run's watch: armed by the world when it starts, disarmed when it ends (:func:`arm`, :func:`disarm`)."""

    __slots__ = ("last", "pending", "progress", "running", "since", "stop_seen", "tripped")

    def __init__(self, progress: Callable[[], int], running: Callable[[], str | None], now: float) -> None:
        self.progress = progress
        self.running = running
        self.last = -1
        self.since = now
        self.stop_seen: float | None = None
        #: set when the watchdog stopped an actor of this run
        self.tripped: Tripped | None = None
        #: an exception was raised in the run's thread and may not have landed yet
        self.pending = False


class _Settings:
    bound: float = DEFAULT_BOUND
    clock: Callable[[], float] = staticmethod(time.monotonic)
    poll: float = POLL


SETTINGS = _Settings()
_armed: dict[int, Watch] = {}
_lock = threading.Lock()
_thread: threading.Thread | None = None


def configure(*, bound: float | None = None, clock: Callable[[], float] | None = None,
              poll: float | None = None) -> None:
    """Set the bound (wall seconds; 0 turns the watchdog off), the clock it reads and how often it looks.

    ``hunt --yield-timeout`` and ``pytest --race-yield-timeout`` set the bound;
    tests inject a clock.
    """
    if bound is not None:
        SETTINGS.bound = bound
    if clock is not None:
        SETTINGS.clock = clock
    if poll is not None:
        SETTINGS.poll = poll


def arm(progress: Callable[[], int], running: Callable[[], str | None]) -> Watch | None:
    """Watch the calling thread's run from now on: ``progress()`` is its step counter, ``running()`` the actor.

    Cheap (a dict entry): a search arms it once per run; one daemon thread per
    process watches every armed run (xdist and Dask workers run worlds in
    threads of their own).
    """
    global _thread
    if SETTINGS.bound <= 0:
        return None
    watch = Watch(progress, running, SETTINGS.clock())
    with _lock:
        _armed[threading.get_ident()] = watch
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_watch_all, name="race-harness watchdog", daemon=True)
            _thread.start()
    return watch


def disarm(watch: Watch | None) -> None:
    """The run ended: stop watching it, and take back an exception raised but not yet landed."""
    if watch is None:
        return
    tid = threading.get_ident()
    with _lock:
        if _armed.get(tid) is watch:
            del _armed[tid]
        if watch.pending:
            watch.pending = False
            _raise_in(tid, None)


def _watch_all() -> None:
    while True:
        time.sleep(SETTINGS.poll)
        _look_all()


def _look_all() -> None:
    """One look at every armed run; its locals die with the call, so the thread never keeps a finished run's
    world alive between looks (a test counts the harness's objects after 10,000 runs)."""
    with _lock:
        for tid, watch in list(_armed.items()):
            _look(tid, watch)


def _look(tid: int, w: Watch) -> None:
    now = SETTINGS.clock()
    step = w.progress()
    if step != w.last:
        w.last, w.since = step, now
        return
    if w.stop_seen is None and _stop_requested():
        w.stop_seen = now
    stalled = now - w.since
    by_stop = w.stop_seen is not None and now - max(w.since, w.stop_seen) >= STOP_GRACE
    if stalled < SETTINGS.bound and not by_stop:
        return
    if w.tripped is None:
        w.tripped = Tripped(w.running(), stalled, by_stop and stalled < SETTINGS.bound)
    w.pending = True
    _raise_in(tid, NoYield)
    w.since = now  # if it did not land (code in C) or was caught, raise again after another bound


def _raise_in(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in the thread ``thread_id`` at its next bytecode (CPython); None takes back one pending."""
    set_async: Any = ctypes.pythonapi.PyThreadState_SetAsyncExc
    set_async(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else None)
