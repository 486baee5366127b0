"""One clock: inside a run, every clock an in-process operator reads is the world's virtual clock.

An operator decides with the clocks it reads: kopf retries a failed handler
once ``datetime.now()`` passes the delay it stored, a client expires a pooled
connection after ``time.monotonic()`` moved 5 s, a leader elector compares
``time.time()`` with a lease. Left real, those clocks run apart from the
world's (a kopf handler that failed once waited 60 virtual seconds that never
came on the real clock, so it was never retried), and a run depends on when it
ran. So, for code that runs as an operator's (:func:`read_world_clocks`, which
``Operator`` calls for every task, asyncio task and lockstep thread of its
``main``):

* the wall clocks are :data:`EPOCH` plus virtual time: ``time.time``,
  ``time.time_ns``, ``datetime.datetime.now``/``utcnow``/``today``,
  ``datetime.date.today`` and the no-argument forms of ``time.localtime``,
  ``gmtime``, ``ctime``, ``asctime`` and ``strftime``. :data:`EPOCH` is the
  instant the apiserver's timestamps count from, so an object's
  ``creationTimestamp`` and the operator's ``now`` agree;
* the monotonic clocks are virtual time itself, seconds since the run began:
  ``time.monotonic``, ``time.monotonic_ns``, ``time.perf_counter`` and
  ``perf_counter_ns`` (the last two too: a duration an operator measures is
  one it may decide on, or log), equal to the loop's ``loop.time()`` and to
  ``trio.current_time()``;
* CPU clocks (``process_time``, ``thread_time``) stay real: they measure the
  process, not the world, and no operator waits on them.

Everyone else (the harness's watchdogs and quiescence waits, the search's time
budget, Trio's own clock, pytest) reads the real clocks, through the same
functions: who reads is told by a context variable the operator's tasks
inherit (Trio tasks, asyncio tasks and lockstep threads all start in a copy of
their parent's context), not by patching for the run's length.

How: the ``time`` functions are replaced in the ``time`` module once per
process, and in the modules already loaded that bound them by name (aiohttp's
``from time import monotonic``), except the standard library's, Trio's and the
harness's, which need the real ones and keep them; a module imported later
binds the replaced ones. ``datetime.datetime.now`` and ``utcnow`` are replaced
on the class itself (its type dictionary, as ``PyType_Modified`` allows): the
class stays the one every module holds, so ``from datetime import datetime``,
``isinstance``, ``klass is datetime.datetime`` (the official client's
deserializer) and pickling are untouched; ``today`` reads ``time.time``
already. Rejected: a ``datetime`` subclass put in the ``datetime`` module for
the run (what freezegun does): modules that bound the real class, and tables
built from it at import (the clients' ``{'datetime': datetime.datetime}``),
no longer match the class the module shows; patching the ``time`` module only
while a run lasts: every module that did ``from time import monotonic``
between runs would hold the real clock.
"""

from __future__ import annotations

import contextvars
import ctypes
import datetime
import gc
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._world import World

#: the Unix time virtual time 0 stands for: 2026-01-01T00:00:00Z, in every run and replay (the apiserver's
#: timestamps count from it too), so no trace or object depends on the day it ran
EPOCH = 1_767_225_600
_EPOCH_UTC = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
assert _EPOCH_UTC.timestamp() == EPOCH

#: the world whose clock the running code reads: set for an operator's tasks (inherited by what they start)
_READER: contextvars.ContextVar[World | None] = contextvars.ContextVar("harness_world_clock", default=None)

# The real clocks, bound before anything replaces them: the harness's own waits read these.
real_time = time.time
real_time_ns = time.time_ns
real_monotonic = time.monotonic
real_monotonic_ns = time.monotonic_ns
real_perf_counter = time.perf_counter
real_perf_counter_ns = time.perf_counter_ns
_real_localtime = time.localtime
_real_gmtime = time.gmtime
_real_ctime = time.ctime
_real_asctime = time.asctime
_real_strftime = time.strftime
_real_now: Any = vars(datetime.datetime)["now"]
_real_utcnow: Any = vars(datetime.datetime)["utcnow"]

_installed = False


def read_world_clocks(world: World) -> None:
    """Make every clock the calling task reads (and every task, asyncio task and thread it starts) ``world``'s."""
    install()
    _READER.set(world)


def _virtual_ns() -> int | None:
    """Virtual nanoseconds since the run began, if the calling code reads a world's clock; else None."""
    world = _READER.get()
    if world is None:
        return None
    if world._real is not None:
        return round(world.now * 1_000_000_000)  # (a real-clock run: its scaled real time)
    return world._now_ns


def _virtual_seconds() -> float | None:
    ns = _virtual_ns()
    return None if ns is None else ns / 1_000_000_000  # (the same float as trio.current_time())


# ------------------------------------------------------------------------------ the time module
def _time() -> float:
    t = _virtual_seconds()
    return real_time() if t is None else EPOCH + t


def _time_ns() -> int:
    ns = _virtual_ns()
    return real_time_ns() if ns is None else EPOCH * 1_000_000_000 + ns


def _monotonic() -> float:
    t = _virtual_seconds()
    return real_monotonic() if t is None else t


def _monotonic_ns() -> int:
    ns = _virtual_ns()
    return real_monotonic_ns() if ns is None else ns


def _perf_counter() -> float:
    t = _virtual_seconds()
    return real_perf_counter() if t is None else t


def _perf_counter_ns() -> int:
    ns = _virtual_ns()
    return real_perf_counter_ns() if ns is None else ns


def _localtime(secs: float | None = None) -> time.struct_time:
    return _real_localtime(_time() if secs is None else secs)


def _gmtime(secs: float | None = None) -> time.struct_time:
    return _real_gmtime(_time() if secs is None else secs)


def _ctime(secs: float | None = None) -> str:
    return _real_ctime(_time() if secs is None else secs)


def _asctime(t: Any = None) -> str:
    return _real_asctime(_localtime() if t is None else t)


def _strftime(format: str, t: Any = None) -> str:  # (time.strftime's own parameter name)
    return _real_strftime(format, _localtime() if t is None else t)


_REPLACED: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "time": (real_time, _time), "time_ns": (real_time_ns, _time_ns), "monotonic": (real_monotonic, _monotonic),
    "monotonic_ns": (real_monotonic_ns, _monotonic_ns), "perf_counter": (real_perf_counter, _perf_counter),
    "perf_counter_ns": (real_perf_counter_ns, _perf_counter_ns), "localtime": (_real_localtime, _localtime),
    "gmtime": (_real_gmtime, _gmtime), "ctime": (_real_ctime, _ctime), "asctime": (_real_asctime, _asctime),
    "strftime": (_real_strftime, _strftime),
}


# ------------------------------------------------------------------------------ datetime
def _virtual_utc() -> datetime.datetime | None:
    """The world's UTC instant as an aware datetime (EPOCH plus virtual time), if the caller reads a world's clock.

    ``EPOCH + timedelta(seconds=loop.time())``, with the very float ``loop.time()`` returns: kopf takes
    ``now() - timedelta(seconds=loop.time())`` as the instant its loop's clock began, and finds exactly EPOCH.
    """
    t = _virtual_seconds()
    return None if t is None else _EPOCH_UTC + datetime.timedelta(seconds=t)


def _as(cls: type[datetime.datetime], value: datetime.datetime) -> datetime.datetime:
    if cls is datetime.datetime:
        return value
    return cls(value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond,
               value.tzinfo, fold=value.fold)


def _now(cls: type[datetime.datetime], tz: datetime.tzinfo | None = None) -> datetime.datetime:
    utc = _virtual_utc()
    if utc is None:
        return _real_now.__get__(None, cls)(tz)  # type: ignore[no-any-return]
    if tz is None:
        return _as(cls, utc.astimezone().replace(tzinfo=None))  # the local wall time, naive (as now() gives)
    return _as(cls, tz.fromutc(utc.replace(tzinfo=tz)))  # (what now(tz) does: the zone converts from UTC)


def _utcnow(cls: type[datetime.datetime]) -> datetime.datetime:
    utc = _virtual_utc()
    if utc is None:
        return _real_utcnow.__get__(None, cls)()  # type: ignore[no-any-return]
    return _as(cls, utc.replace(tzinfo=None))


def _set_class_attribute(cls: type, name: str, value: object) -> None:
    """Set an attribute of a built-in (C) class: its type dictionary is reachable only through the GC's referents of
    its read-only mapping proxy; ``PyType_Modified`` then drops what the method cache held."""
    namespace = next(r for r in gc.get_referents(vars(cls)) if isinstance(r, dict))
    namespace[name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


# ------------------------------------------------------------------------------ installing
#: top-level packages whose bindings of the real clocks are kept: they need real time even in an operator's tasks
_KEEP_REAL = frozenset({"harness", "trio", "_pytest", "pytest", "hypothesis"}) | sys.stdlib_module_names


def install() -> None:
    """Replace the clocks (once per process; outside an operator's code each replacement is the real clock)."""
    global _installed
    if _installed:
        return
    _installed = True
    for name, (_real, replacement) in _REPLACED.items():
        setattr(time, name, replacement)
    _set_class_attribute(datetime.datetime, "now", classmethod(_now))
    _set_class_attribute(datetime.datetime, "utcnow", classmethod(_utcnow))
    _rebind_loaded_modules()


def _rebind_loaded_modules() -> None:
    """Modules that bound a real clock by name (``from time import monotonic``) before :func:`install` get the
    replacement; those of the standard library, Trio and the harness keep theirs."""
    replacing = {id(real): (real, replacement) for real, replacement in _REPLACED.values()}
    for module_name, module in list(sys.modules.items()):
        if module is None or module_name.partition(".")[0] in _KEEP_REAL:
            continue
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            pair = replacing.get(id(value))
            if pair is not None and pair[0] is value:
                namespace[key] = pair[1]
