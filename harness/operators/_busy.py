"""Whether an OS process is still computing: what its traffic alone cannot tell the quiescence wait.

An operator process is quiescent when it waits for the world: nothing in
flight, nothing new for ``quiet`` seconds (``harness.sim._outside``). Silence
on its sockets is not enough. A process can compute for a long time between
a reply and its next request: kopf's handler, on its first call, spends 0.6 s
importing the ``kubernetes`` client's models before it sends its POST, and a
process that is ready to run but waits for a core (two pytest workers and the
operator on two cores) is silent however long ``quiet`` is. A quiet long
enough to cover such gaps costs its length after every step that touched the
process, most of which cause nothing.

So a look of the wait also asks the kernel: a process counts as busy when one
of its threads (or of its descendants' threads) is running or runnable (state
``R``) or in an uninterruptible wait (``D``: a file read, an import) now, or
when their CPU time (``utime + stime``, in clock ticks) grew since the last
look. A busy process is treated as having just been active, so ``quiet`` runs
from the end of its computing, not from its last byte, and ``quiet`` itself
only has to cover what no counter shows: the process's own timers (kopf before
1.42 sleeps 0.1 s to batch an object's events; client-go's rate limiter waits
5 ms and up) and the loopback's delivery of a reply to its thread.

Why that is sound: between what the process was sent and the request it
sends in reaction, each of its threads that has work is running, runnable or
in I/O (the look sees it, or its ticks grow), or asleep on a timer (``quiet``
covers timers shorter than itself), or blocked on a reply or an event from
the world, which is the quiescence the wait is for. And the rule never ends
a wait earlier than the traffic rule with the same ``quiet`` (a busy look only
moves the last activity later): it can cost time, never a request the traffic
rule would have waited for; what it buys is a ``quiet`` that need not cover the
process's computing.

What it reads is Linux's ``/proc`` (``proc(5)``: ``/proc/<pid>/stat`` for the
CPU time of all a process's threads, the ended ones' too, ``/proc/<pid>/task/<tid>/stat``
for each thread's state, ``.../children`` for the process tree).
Where there is none (macOS) or a process is gone, it says "not busy" and the
wait is the traffic rule alone, as before. A process that never stops
computing (a thread that spins, a JIT compiling for seconds) costs the wait's
``bound`` at each choice, as a process that never stops talking does.

Rejected: the CPU time alone (ticks of 10 ms miss a short burst in progress,
and a starved process gains none: it is runnable, not running); the state
alone (a burst between two looks leaves no trace); ``psutil`` (a dependency
for two files of ``/proc``); and ending a wait early whenever the process
holds a watch open with nothing in flight (a process with a watch open still
computes its reaction to the event just sent on it).
"""

from __future__ import annotations

import os
from pathlib import Path

from ._waits import ThreadWaits

_PROC = Path("/proc")
#: thread states of proc(5) that mean "working": running or runnable, and uninterruptible sleep (I/O)
_WORKING = frozenset("RD")


def _fields(stat: bytes) -> list[bytes]:
    """The fields of a ``stat`` file after ``comm`` (state first): ``comm`` may hold spaces and parentheses."""
    return stat[stat.rfind(b")") + 2:].split()


def _look(pid: int) -> tuple[bool, int, list[int]]:
    """Process ``pid``: whether one of its threads is working, its CPU ticks (all its threads', the ended ones'
    too), and its children's pids."""
    try:
        fields = _fields((_PROC / str(pid) / "stat").read_bytes())
        tids = os.listdir(_PROC / str(pid) / "task")
    except OSError:
        return False, 0, []  # it ended meanwhile
    ticks = int(fields[11]) + int(fields[12]) if len(fields) > 12 else 0  # utime, stime: fields 14, 15 of proc(5)
    working = False
    children: list[int] = []
    for tid in tids:
        base = _PROC / str(pid) / "task" / tid
        try:
            state = _fields((base / "stat").read_bytes())[:1]
        except OSError:
            continue  # the thread ended meanwhile
        working = working or (bool(state) and state[0].decode("ascii", "replace") in _WORKING)
        try:  # (a kernel built with CONFIG_PROC_CHILDREN; without it the descendants go unseen)
            children.extend(int(c) for c in (base / "children").read_bytes().split())
        except OSError:
            pass
    return working, ticks, children


class ProcessLoad:
    """Looks at an OS process and its descendants: :meth:`busy` says whether they computed since the last look."""

    #: whether this system has what it reads (Linux's /proc with per-thread stat files)
    available = (_PROC / "self" / "task").is_dir()

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._ticks: int | None = None
        self._pids: list[int] = [pid]  # the process tree at the last look
        self._waits = ThreadWaits()

    def settled(self, until: float, ports: tuple[int, ...] = ()) -> bool:
        """Whether every thread of the process tree (as of the last :meth:`busy`) waits for the world, with no
        timer of its own that can end by ``until`` (``time.monotonic()`` seconds), and none ran since the last call
        (``harness.operators._waits``)."""
        return self._waits.settled(self._pids, until, ports)

    def busy(self) -> bool:
        """Whether a thread of the process tree is working now, or their CPU time grew since the last look."""
        if not self.available:
            return False
        working = False
        ticks = 0
        todo, seen = [self.pid], set()
        while todo:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            w, t, children = _look(pid)
            working = working or w
            ticks += t
            todo.extend(children)
        grew = self._ticks is not None and ticks > self._ticks
        self._ticks = ticks
        self._pids = sorted(seen)
        return working or grew
