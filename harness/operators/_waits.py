"""What each thread of an OS process is blocked on: whether it waits for the world, or has set itself a short timer.

The quiescence wait (``harness.sim._outside``) ends when an operator process
has been silent and idle for ``quiet`` seconds: ``quiet`` covers the process's
own timers (a reaction that sleeps 0.1 s before it sends), so it is paid after
every step that touched the process, most of which cause nothing. Linux shows
more than silence: for each thread, ``/proc/<pid>/task/<tid>/syscall`` names the
system call it is blocked in and that call's arguments, among them the timeout
it asked for (``proc(5)``). A thread blocked in ``read`` on a watch, in
``epoll_pwait`` with no timeout or one of half a second, or in a ``futex``
wait with none, can only be woken by the world (bytes on a socket) or by
another thread of its own (which is then running, or itself blocked in the same
way); a thread blocked with a timeout of at most ``quiet`` is a timer that the
``quiet`` rule would have waited for.

So :meth:`ThreadWaits.settled` says a process tree is *settled* when, at this
look, every thread is asleep (``S``), in a call the table below knows, with no
timeout or one that cannot end before ``until`` (the end of the operator's
``quiet`` after the process's last activity: the time the ``quiet`` rule would
end the wait at), no thread ran since the previous look (each thread's run
count and CPU nanoseconds in ``/proc/<pid>/task/<tid>/schedstat`` unchanged,
the same threads alive), and no TCP socket holds bytes not yet read
(``rx_queue`` of ``/proc/<pid>/net/tcp``) on either end: the process's own, and
the harness's on the port it serves the process (a request the process sent
and now waits on, blocked in ``read`` like a process waiting for the world,
that the server has not read yet, or a connection still in the listening
socket's backlog). A settled process ends the wait
at once, whatever is left of ``quiet``; one that is not falls back to the
``quiet`` rule, so the rule never waits longer than before. Where a timeout is
a pointer (``futex``, ``nanosleep``, ``clock_nanosleep``, ``ppoll``,
``pselect6``, ``epoll_pwait2``) its ``timespec`` is read from
``/proc/<pid>/mem`` (a process may read its children's memory: ``ptrace(2)``'s
access mode); an absolute deadline is compared with the clock it names.

Why that is sound for the timers ``quiet`` covered: a timer that fires before
the ``quiet`` rule would end the wait is a thread in a timed wait that ends by
``until`` (its own, or a runtime's netpoller waiting for its earliest timer:
Go's ``netpoll(delay)`` blocks in ``epoll_pwait`` until the next timer of any
goroutine, ``runtime/netpoll_epoll.go``; asyncio's loop in ``epoll_wait`` until
its next ``call_at``, ``selectors.EpollSelector``), which makes the process
unsettled until it fires. A relative timeout ends its length after its call
began, and when that was is not shown; what is known is a time before it: the
look before the one that first saw the thread's run count changed while it had
been asleep (it woke after that look, so it blocked again later), or, for a
thread that did not run since, the same bound as at the last look. The
earliest the call can end is that time plus its length (or now, when nothing
is known), which only errs towards waiting. So a Go process polling every
100 ms (client-go's ``WaitForCacheSync``) is held until its poll fires while
that poll falls before ``until``, and settles as soon as its next poll falls
after it: a chain of such polls that the ``quiet`` rule would have waited for
is waited for, link by link. A thread woken by a reply is running or runnable
at the next look, or ran since the last one (its run count grew). What is not
seen: a timer kept by a thread that is running (it is busy anyway), and one
that fires after ``until`` (the ``quiet`` rule did not cover those either).

Measured on the Go example manager at rest: one thread in ``epoll_pwait`` with
499 ms (the work queues' 500 ms metrics tickers, client-go
``util/workqueue/queue.go``), the runtime's ``sysmon`` in a ``futex`` wait
until the same timer, the others in untimed ``futex`` waits.

Unavailable (not Linux x86-64 or arm64, no ``/proc``, a file it may not read):
never settled, and the wait is the ``quiet`` rule as before.
"""

from __future__ import annotations

import os
import platform
import re
import struct
from pathlib import Path

from ..sim._clocks import real_monotonic, real_time  # (the harness's own clocks: an operator's may be virtual)

_PROC = Path("/proc")

#: how a call's timeout is passed: an int of milliseconds in argument ``i`` (``("ms", i)``), a relative
#: ``timespec`` (``("ts", i)``) or ``timeval`` (``("tv", i)``) at the address in argument ``i`` (0: none), or none at
#: all (``("none", 0)``: only the world or another thread ends the call). ``futex`` and ``clock_nanosleep`` are their
#: own kinds (their flags say whether the deadline is absolute).
_KINDS_X86_64 = {
    0: ("none", 0), 1: ("none", 0), 17: ("none", 0), 19: ("none", 0), 20: ("none", 0),  # read write pread64 readv writev
    42: ("none", 0), 43: ("none", 0), 44: ("none", 0), 45: ("none", 0), 46: ("none", 0), 47: ("none", 0),
    288: ("none", 0), 61: ("none", 0), 247: ("none", 0), 34: ("none", 0), 130: ("none", 0),
    # connect accept sendto recvfrom sendmsg recvmsg accept4 wait4 waitid pause rt_sigsuspend
    7: ("ms", 2), 232: ("ms", 3), 281: ("ms", 3),  # poll epoll_wait epoll_pwait
    23: ("tv", 4), 270: ("ts", 4), 271: ("ts", 2), 441: ("ts", 3), 35: ("ts", 0), 128: ("ts", 2),
    # select pselect6 ppoll epoll_pwait2 nanosleep rt_sigtimedwait
    202: ("futex", 0), 230: ("clock", 0),
}
#: the same for arm64 (the generic table, ``include/uapi/asm-generic/unistd.h``)
_KINDS_AARCH64 = {
    63: ("none", 0), 64: ("none", 0), 67: ("none", 0), 65: ("none", 0), 66: ("none", 0),
    203: ("none", 0), 202: ("none", 0), 206: ("none", 0), 207: ("none", 0), 211: ("none", 0), 212: ("none", 0),
    242: ("none", 0), 260: ("none", 0), 95: ("none", 0), 133: ("none", 0),
    22: ("ms", 3),  # epoll_pwait
    72: ("ts", 4), 73: ("ts", 2), 441: ("ts", 3), 101: ("ts", 0), 137: ("ts", 2),
    98: ("futex", 0), 115: ("clock", 0),
}
_KINDS = {"x86_64": _KINDS_X86_64, "amd64": _KINDS_X86_64, "aarch64": _KINDS_AARCH64,
          "arm64": _KINDS_AARCH64}.get(platform.machine().lower())

#: futex operations (``futex(2)``): the low bits; FUTEX_CLOCK_REALTIME and FUTEX_PRIVATE_FLAG are flags
_FUTEX_CMD = 0x7F
_FUTEX_WAIT, _FUTEX_WAIT_BITSET, _FUTEX_WAIT_REQUEUE_PI, _FUTEX_LOCK_PI2 = 0, 9, 11, 13
_FUTEX_CLOCK_REALTIME = 256
_TIMER_ABSTIME = 1
_CLOCK_REALTIME = 0
_UNKNOWN = float("inf")  # sentinel: a timed wait whose timeout could not be read


def _timespec(pid: int, address: int, *, micro: bool = False) -> float | None:
    """The ``timespec`` (or ``timeval``) at ``address`` in process ``pid``'s memory, in seconds; None: unreadable."""
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.pread(fd, 16, address)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) < 16:
        return None
    sec, frac = struct.unpack("qq", raw)
    return float(sec) + float(frac) / (1e6 if micro else 1e9)


def _timeout(pid: int, words: list[str]) -> tuple[float, bool] | None:
    """The timeout of the call a thread is blocked in, from its ``syscall`` line, and whether it counts from the
    call's start (relative: its length) or from now (an absolute deadline, as what is left of it): None when it
    has none, :data:`_UNKNOWN` when it has one this cannot read or the call is not in the table."""
    if _KINDS is None or not words or not words[0].lstrip("-").isdigit():
        return _UNKNOWN, False
    nr = int(words[0])
    kind, i = _KINDS.get(nr, ("?", 0))
    try:
        args = [int(w, 16) for w in words[1:7]]
    except ValueError:
        return _UNKNOWN, False
    if kind == "none":
        return None
    if kind == "ms":
        ms = args[i] if args[i] < 2**31 else args[i] - 2**32  # an int: -1 is "no timeout"
        return None if ms < 0 else (ms / 1000, True)
    if kind in ("ts", "tv"):
        if args[i] == 0:
            return None
        seconds = _timespec(pid, args[i], micro=kind == "tv")
        return (_UNKNOWN, False) if seconds is None else (seconds, True)
    if kind == "futex":
        cmd = args[1] & _FUTEX_CMD
        if cmd not in (_FUTEX_WAIT, _FUTEX_WAIT_BITSET, _FUTEX_WAIT_REQUEUE_PI, _FUTEX_LOCK_PI2):
            return _UNKNOWN, False
        if args[3] == 0:
            return None
        seconds = _timespec(pid, args[3])
        if seconds is None:
            return _UNKNOWN, False
        if cmd == _FUTEX_WAIT:  # relative; the others are absolute, on the clock their flag names
            return seconds, True
        now = real_time() if args[1] & _FUTEX_CLOCK_REALTIME else real_monotonic()
        return max(0.0, seconds - now), False
    if kind == "clock":  # clock_nanosleep(clockid, flags, request, remain)
        seconds = _timespec(pid, args[2])
        if seconds is None:
            return _UNKNOWN, False
        if not args[1] & _TIMER_ABSTIME:
            return seconds, True
        now = real_time() if args[0] == _CLOCK_REALTIME else real_monotonic()
        return max(0.0, seconds - now), False
    return _UNKNOWN, False


def _unread(pid: int, inodes: set[int], ports: tuple[int, ...] = ()) -> bool:
    """Whether one of the TCP sockets ``inodes`` holds received bytes not yet read (``rx_queue``), or one bound to a
    local port in ``ports`` (the harness's own end: a request the process sent that the server has not read yet, or
    a connection waiting in its listening socket's backlog, whose ``rx_queue`` counts them)."""
    for table in ("tcp", "tcp6"):
        try:
            with open(f"{_PROC}/{pid}/net/{table}", "rb") as f:
                text = f.read()
        except OSError:
            continue
        # (only the lines with a receive queue are split: a table of a busy machine's sockets, most of them in
        # TIME_WAIT after a hunt's runs, took 5 ms a look to split whole)
        for m in _QUEUED.finditer(text):
            fields = m.group(0).split()
            if len(fields) > 9 and (int(fields[9]) in inodes or int(fields[1].rsplit(b":", 1)[1], 16) in ports):
                return True
    return False


#: a line of ``/proc/net/tcp`` whose ``rx_queue`` (the fifth field's second half) is not zero
_QUEUED = re.compile(rb"^ *\d+: \S+ \S+ \S+ [0-9A-F]+:(?!0+ )[0-9A-F]+ .*$", re.MULTILINE)


def _sockets(pid: int) -> set[int] | None:
    """The inodes of process ``pid``'s sockets; None: unreadable."""
    inodes = set()
    try:
        fds = os.listdir(_PROC / str(pid) / "fd")
    except OSError:
        return None
    for fd in fds:
        try:
            target = os.readlink(_PROC / str(pid) / "fd" / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


class ThreadWaits:
    """Looks at the threads of a set of processes: :meth:`settled` says whether all wait for the world (module)."""

    #: whether this system shows what it reads
    available = _KINDS is not None and (_PROC / "self" / "task").is_dir()

    def __init__(self) -> None:
        self._runs: dict[tuple[int, str], bytes] | None = None  # (pid, tid) -> schedstat at the last look
        self._asleep: set[tuple[int, str]] = set()  # threads asleep (``S``) at the last look
        #: (pid, tid) -> a time before the call it is blocked in began (None: unknown, it began before every look)
        self._since: dict[tuple[int, str], float | None] = {}
        self._looked: float | None = None  # when the last look was

    def settled(self, pids: list[int], until: float, ports: tuple[int, ...] = ()) -> bool:
        """Whether every thread of ``pids`` is asleep in a known call with no timeout, or one whose deadline is
        after ``until`` (the real ``time.monotonic()`` seconds), none ran since the last look, and no socket of theirs has
        unread bytes, nor one of the harness's bound to ``ports`` (what they sent it)."""
        if not self.available:
            return False
        now = real_monotonic()
        runs: dict[tuple[int, str], bytes] = {}
        asleep: set[tuple[int, str]] = set()
        since: dict[tuple[int, str], float | None] = {}
        settled = True
        for pid in pids:
            base = _PROC / str(pid) / "task"
            try:
                tids = os.listdir(base)
            except OSError:
                settled = False  # it ended meanwhile: the next look decides
                continue
            for tid in tids:
                key = (pid, tid)
                try:
                    stat = (base / tid / "stat").read_bytes()
                    runs[key] = (base / tid / "schedstat").read_bytes()
                except OSError:
                    settled = False
                    continue
                since[key] = self._began(key, runs[key])
                if stat[stat.rfind(b")") + 2:][:1] != b"S":
                    settled = False
                    continue
                asleep.add(key)
                if not settled:
                    continue
                try:
                    timeout = _timeout(pid, (base / tid / "syscall").read_text().split())
                except OSError:
                    settled = False
                    continue
                if timeout is not None and self._deadline(timeout, since[key], now) <= until:
                    settled = False
            if settled:
                inodes = _sockets(pid)
                settled = inodes is not None and not _unread(pid, inodes, ports)
        previous, self._runs = self._runs, runs
        self._asleep, self._since, self._looked = asleep, since, now
        return settled and previous == runs

    def _began(self, key: tuple[int, str], run: bytes) -> float | None:
        """A time before the blocking call thread ``key`` is in (or about to make) began: the last look, if it ran
        since and was asleep then (it woke after that look, so its call began later); if it was running then, the
        bound of its previous call (which ended before this one began); if it did not run since, the bound of the
        same call as before; a thread new since the last look began after it. None: unknown."""
        if self._runs is None:
            return None
        before = self._runs.get(key)
        if before is None:
            return self._looked
        if before == run:
            return self._since.get(key)
        return self._looked if key in self._asleep else self._since.get(key)

    @staticmethod
    def _deadline(timeout: tuple[float, bool], began: float | None, now: float) -> float:
        """The earliest the timed wait ``timeout`` (seconds, relative) can end, in the real ``time.monotonic()`` seconds: an
        absolute deadline is known; a relative timeout ends its length after its call began, which is after
        ``began`` (unknown: it has not ended yet, so after now)."""
        seconds, relative = timeout
        if seconds == _UNKNOWN:  # (a timeout it could not read, or a call not in the table: it may end at once)
            return now
        if not relative:
            return now + seconds
        return now if began is None else max(now, began + seconds)
