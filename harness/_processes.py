"""Every process an operator starts ends with its run: its group, its session, and what detached from both.

``ExternalOperator`` starts its operator in a session of its own
(``start_new_session``), and once ended it with ``killpg``: that reaches the
process group and nothing else. Measured, three kinds outlived it: a child that
ignores SIGTERM after its parent died of it (the wait was for the parent only),
a daemon that forked twice and called ``setsid()`` (another session and group,
reparented to init: it spun a core after the hunt), and on a second Ctrl-C the
operator itself with the run's temporary folder (``os._exit`` skips every
``finally``).

So each operator process is a :class:`ProcessFamily`: before it starts it gets
a token of its own in its environment (``RACE_HARNESS_RUN=<token>``), and an
environment is inherited by every descendant, forked, exec'd, detached or not.
Its members are the processes of this user (same uid) that carry the token in
``/proc/<pid>/environ``, that are in its session or process group, or whose
parent is a member (``/proc/<pid>/stat``, ``proc(5)``). Ending the family sends
SIGTERM to its process group, gives the operator ``grace`` seconds to go (what
it leaves behind gets a fifth of a second more), then SIGKILLs every member left,
scanning again until none is left (a member that forks meanwhile is seen at the
next scan) and reaps the operator. A crash fault SIGKILLs at once, as a node's
OOM killer does the whole container.

A registry of the live families and of the temporary folders of the runs
(:func:`end_all`) is the safety net for every way out of a hunt that skips a
run's end: the second Ctrl-C or SIGTERM (``harness._interrupt`` calls it before
``os._exit``), an exception the run did not catch, and interpreter exit
(``atexit``).

Limits. Without ``/proc`` (macOS) the family is its process group, ended with
``killpg`` as before: a descendant in a session of its own survives there. On
Linux a descendant that both leaves the session and execs with an environment
of its own (``env -i``, Go's ``exec.Cmd`` with ``Env`` set) is found only while
its parent chain to the operator lives (the ``ppid`` closure).

Rejected: ``prctl(PR_SET_CHILD_SUBREAPER)`` on the harness process (orphans of
the operator reparented to the harness, so its children tree holds them all):
it is process-wide state in what is often a user's pytest process, every
orphan of every other subprocess would become a zombie of it unless reaped, and
it changes what the operator's daemons see (``getppid()`` no longer 1, which
some daemonizing code checks); set in the operator itself (``preexec_fn``) it
changes the operator's own semantics (it would have to reap orphans it never
made). A cgroup per operator (``cgroup.kill``) is the exact tool but needs a
delegated cgroup, which a developer's shell or a CI container rarely has.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

#: the environment variable that marks every process of one operator process's family
MARKER = "RACE_HARNESS_RUN"
#: the one that marks a hunt's worker processes and every process they start (``harness._pool``)
POOL_MARKER = "RACE_HARNESS_POOL"
#: seconds the operator has to stop after SIGTERM (its leftovers get ``_LEFTOVER_GRACE`` more)
DEFAULT_GRACE = 2.0
_LEFTOVER_GRACE = 0.2
#: seconds the SIGKILL rounds last at most (a process in uninterruptible sleep dies when its I/O ends)
_KILL_BOUND = 3.0
#: seconds a hunt's workers have to end at once (kill their operators, remove their folders) before SIGKILL
_WORKER_EXIT = 1.0

_PROC = Path("/proc")

_lock = threading.RLock()
_families: dict[str, ProcessFamily] = {}
_folders: set[Path] = set()
_atexit_installed = False
_searches = 0  # searches under way (nested: a hunt's search, its shrink and its proof are one)
_ending: list[threading.Thread] = []  # families ending off a search's path (ProcessFamily.end_soon)
_search_ends: list[Callable[[], None]] = []


def available() -> bool:
    """Whether this system has what the scan reads (Linux's ``/proc``)."""
    return (_PROC / "self" / "environ").exists()


def _fields(stat: bytes) -> list[bytes]:
    """The fields of ``/proc/<pid>/stat`` after ``comm`` (state first): ``comm`` may hold spaces and parentheses."""
    return stat[stat.rfind(b")") + 2:].split()


def scan(tokens: Collection[str], groups: Collection[int] = (), marker: str = MARKER) -> dict[int, str]:
    """The live processes of this user carrying one of ``tokens`` in their environment (as ``marker``), or in a
    session or process group in ``groups``, or descended from one of those: pid -> the token (``""`` when found
    by group or parent)."""
    if not available():
        return {}
    uid, me = os.getuid(), os.getpid()
    wanted = {f"{marker}={t}".encode() for t in tokens}
    parents: dict[int, int] = {}
    found: dict[int, str] = {}
    try:
        names = os.listdir(_PROC)
    except OSError:
        return {}
    for name in names:
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in (me, 1):
            continue
        base = _PROC / name
        try:
            if base.stat().st_uid != uid:
                continue
            fields = _fields((base / "stat").read_bytes())
        except OSError:
            continue  # it ended meanwhile
        if len(fields) < 4 or fields[0] == b"Z":
            continue  # a zombie has ended: it holds a pid until its parent reaps it, nothing else
        ppid, pgrp, session = int(fields[1]), int(fields[2]), int(fields[3])
        parents[pid] = ppid
        if pgrp in groups or session in groups:
            found[pid] = ""
            continue
        try:
            env = (base / "environ").read_bytes()
        except OSError:
            continue
        if wanted and marker.encode() in env:
            for entry in env.split(b"\0"):
                if entry in wanted:
                    found[pid] = entry.decode().partition("=")[2]
                    break
    grew = True
    while grew:  # descendants of members (their environment replaced by an exec)
        grew = False
        for pid, ppid in parents.items():
            if pid not in found and ppid in found:
                found[pid] = found[ppid]
                grew = True
    return found


class ProcessFamily:
    """One operator process and every process it starts (see the module): :meth:`start`, :meth:`end`, :meth:`kill`."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(12)
        self.popen: subprocess.Popen[bytes] | None = None
        self.ended = False

    def start(self, argv: Sequence[str], env: Mapping[str, str], **popen_args: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen`` in a session of its own with the family's marker in its environment; registered
        before it starts, so a stop that comes while it forks still finds it by its marker."""
        with _lock:
            _families[self.token] = self
            _install_atexit()
        try:
            self.popen = subprocess.Popen(list(argv), env={**env, MARKER: self.token}, start_new_session=True,
                                          **popen_args)
        except BaseException:
            _forget(self)
            raise
        return self.popen

    def members(self) -> list[int]:
        """The family's live processes (its operator's session and group, its marker, their descendants)."""
        groups = {self.popen.pid} if self.popen is not None else set()
        return sorted(scan({self.token}, groups))

    def _signal(self, sig: int, pids: list[int]) -> None:
        if self.popen is not None and self.popen.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(self.popen.pid, sig)  # (the group as before; also where there is no /proc)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)

    def end(self, grace: float = DEFAULT_GRACE) -> None:
        """SIGTERM to its group, ``grace`` seconds for the operator to go, then SIGKILL to all that is left; returns
        when none is left (or after a bound, for a process stuck in the kernel). Safe to call again."""
        try:
            if grace > 0:
                self._signal(signal.SIGTERM, [])  # its group: a scan of /proc costs ~10 ms, and it is the operator's
                # own graceful stop that matters; what left the group gets SIGKILL after it
                deadline = time.monotonic() + grace
                leader_gone: float | None = None
                while time.monotonic() < deadline:
                    if self.popen is None or self.popen.poll() is not None:
                        leader_gone = leader_gone or time.monotonic()
                        if time.monotonic() - leader_gone >= _LEFTOVER_GRACE or not self.members():
                            break
                    time.sleep(0.02)
        finally:  # (a KeyboardInterrupt in the grace still kills them all)
            self.kill()

    def end_soon(self, grace: float = DEFAULT_GRACE) -> None:
        """:meth:`end`, off the caller's path while a search is under way (:func:`runs_follow`): the next run need
        not wait for this one's operator to shut down (kopf's graceful stop takes half a second). Still registered
        until it is gone, so :func:`end_all` kills it; the outermost search returns only once every family handed
        here has ended (:func:`search`). Outside a search it is :meth:`end`, at once."""
        if not runs_follow():
            self.end(grace)
            return
        thread = threading.Thread(target=self.end, args=(grace,), name="race-harness-end", daemon=True)
        with _lock:
            _ending[:] = [t for t in _ending if t.is_alive()]
            _ending.append(thread)
        thread.start()

    def kill(self) -> None:
        """SIGKILL every member, again until none is left (bounded), and reap the operator."""
        deadline = time.monotonic() + _KILL_BOUND
        try:
            while True:
                pids = self.members()
                leader = self.popen is not None and self.popen.poll() is None
                if not pids and not leader:
                    break
                self._signal(signal.SIGKILL, pids)
                if time.monotonic() > deadline:
                    break
                time.sleep(0.01)
            if self.popen is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.popen.wait(max(0.1, deadline - time.monotonic()))
        finally:
            self.ended = True
            _forget(self)


class WorkerFamily(ProcessFamily):
    """A hunt's worker processes (``harness._pool``) and every process they start, as one family.

    Each worker is the leader of a session of its own and sets :data:`POOL_MARKER` to the family's token in its
    environment before it runs anything, so the operator processes it starts (sessions of their own too) carry
    it. Registered like an operator's family, so the second Ctrl-C's :func:`end_all` kills the workers and their
    operators alike; :meth:`end` is a pool's own end after its workers were asked to stop.
    """

    def __init__(self) -> None:
        super().__init__()
        self.pids: set[int] = set()
        with _lock:
            _families[self.token] = self
            _install_atexit()

    def members(self) -> list[int]:
        if not available():  # (the workers alone: their operators' own families end with their runs)
            return sorted(pid for pid in self.pids if _alive(pid))
        return sorted(scan({self.token}, self.pids, marker=POOL_MARKER))

    def _signal(self, sig: int, pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, sig)

    def kill(self) -> None:
        """SIGTERM to the workers, which is their at-once exit (their operator processes killed and their runs'
        folders removed first, ``harness._pool``), up to a second for them to go; then SIGKILL to every member."""
        workers = [pid for pid in self.pids if _running(pid)]
        for pid in workers:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _WORKER_EXIT
        while time.monotonic() < deadline and any(_running(pid) for pid in workers):
            time.sleep(0.02)
        super().kill()

    def end(self, grace: float = DEFAULT_GRACE) -> None:
        """Wait up to ``grace`` seconds for every member to be gone (the workers end their runs and operators
        themselves), then end what is left (:meth:`kill`)."""
        try:
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self.members():
                time.sleep(0.05)
        finally:
            self.kill()


def _running(pid: int) -> bool:
    """Alive and not a zombie (a worker that exited but is not reaped yet has done all it will)."""
    if not available():
        return _alive(pid)
    try:
        return _fields((_PROC / str(pid) / "stat").read_bytes())[0] != b"Z"
    except (OSError, IndexError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _forget(family: ProcessFamily) -> None:
    with _lock:
        _families.pop(family.token, None)


def make_folder(prefix: str = "race-harness-") -> Path:
    """A temporary folder for a run (a kubeconfig, output logs), removed by :func:`remove_folder` or :func:`end_all`."""
    import tempfile

    with _lock:
        path = Path(tempfile.mkdtemp(prefix=prefix))
        _folders.add(path)
        _install_atexit()
    return path


def remove_folder(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    with _lock:
        _folders.discard(path)


def live_families() -> list[ProcessFamily]:
    with _lock:
        return list(_families.values())


@contextlib.contextmanager
def search() -> Iterator[None]:
    """The runs of one search (``harness.explore.explore``): more runs of the same scenario follow the one in hand,
    so an operator process may be started ahead of its run (``harness.operators._ahead``); when the outermost search
    ends, so does every process started ahead (:func:`end_spares`). Outside a search (a replay, a test's single
    run) nothing is started ahead."""
    global _searches
    with _lock:
        _searches += 1
    try:
        yield
    finally:
        with _lock:
            _searches -= 1
            last = _searches == 0
        if last:
            _ended_soon()
            end_spares()


def _ended_soon() -> None:
    """Wait until every family handed to :meth:`ProcessFamily.end_soon` has ended (each within its grace and the
    kill's bound)."""
    with _lock:
        threads, _ending[:] = list(_ending), []
    for thread in threads:
        thread.join()


def runs_follow() -> bool:
    """Whether a search is under way: the run in hand is not the last of its scenario (see :func:`search`)."""
    return _searches > 0


def on_search_end(fn: Callable[[], None]) -> None:
    """Call ``fn`` when the outermost search ends and from :func:`end_all` (registered once per ``fn``)."""
    with _lock:
        if fn not in _search_ends:
            _search_ends.append(fn)
            _install_atexit()


def end_spares() -> None:
    """End what was started ahead for runs that will not come (see :func:`search`)."""
    with _lock:
        enders = list(_search_ends)
    for fn in enders:
        with contextlib.suppress(Exception):
            fn()


def end_all(grace: float = 0.0) -> None:
    """End every family still registered and remove every run's folder still there: the safety net of a process
    that leaves without its runs' ends (the second Ctrl-C, an uncaught exception, interpreter exit). ``grace`` 0
    kills at once: the user asked to stop at once. Processes started ahead of a run go first (:func:`end_spares`)."""
    end_spares()
    for family in live_families():
        with contextlib.suppress(Exception):
            family.end(grace) if grace > 0 else family.kill()
    with _lock:
        folders = list(_folders)
    for path in folders:
        remove_folder(path)


def _install_atexit() -> None:
    global _atexit_installed
    if not _atexit_installed:
        _atexit_installed = True
        atexit.register(end_all)
