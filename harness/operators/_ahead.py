"""An operator process started ahead of its run: its start-up off the search's critical path (a :class:`Spare`).

A run of an operator process costs what the process spends before its first
request: the official-client operator's interpreter and imports take 1.2 s
of its 2 s run, kopf's more, a Go manager's runtime and client setup about a
second. A search runs the same scenario hundreds of times with the same
command, environment and folder, so the next run's process can start while
the current run goes on, and be ready when its run begins.

A spare is what a run's :meth:`ExternalOperator.start` would make, made
early: a loopback socket bound and listening (never accepted from until its
run), a kubeconfig naming it in a folder of its own (``harness._processes.make_folder``),
and the process started on them with the family marker
(``harness._processes.ProcessFamily``), keyed by all the process sees (its
command, environment without ``KUBECONFIG``, folder and whether TLS is
served; the port and the kubeconfig's path differ between any two runs, as
they do today). Its first connection completes in the kernel and waits in
the socket's backlog with its first bytes (a TLS ClientHello included), so
the world sees its first request only once the run that adopts it serves the
socket: held, not lost, and at the same point of the run as a fresh process's.
Nothing of a spare (its pid, its port) enters a trace.

When one is made. Only while a search is under way (``harness._processes.search``:
``explore`` and all its phases; a replay of one run, or a test's own
``run_once``, start none), for the first incarnation of a process, not before
that process has sent its first request (its own start-up is done then, so
the two starts do not compete for the cores), and then :func:`delay` after its
run began: the last run's length less the last spare's start-up (its start to
its first connection) less :data:`LEAD`, so that it connects a little before
its run begins and is held briefly; at once while either is unknown, and at
the run's end if that comes first. Each time a spare is still starting when its
run begins, one more is kept ready (up to :data:`MAX_DEPTH`), so each gets
that many runs' head start: a run that no longer waits for a start-up is
shorter than the start-up it no longer waits for. A restart after a crash fault is a fresh process, started as
today: it must reach the port its run already serves, and its start is the
restart's own cost in the plan.

When one is not adopted. The listening socket is readable once a connection
waits in its backlog; the harness looks at each quiescence wait
(:func:`look`). A spare whose connection has waited longer than
:data:`MAX_HOLD` (7 s) is ended: a client gives up a handshake it holds
(client-go's ``TLSHandshakeTimeout`` is 10 s, lightkube's httpx timeout 10 s;
the official Python client and kopf set none), and the look may see a
connection late by up to one wait. A spare that exited before it connected is
adopted all the same: it died of its own start-up, as a fresh process would,
and the run says so as it says it of a fresh one (a model error, with its
output). One that exited after it connected may have given up on its held
connection: it is ended, the run starts a fresh process, and no more spares
are made for that command in the search. A spare of the same operator name
with another key (the scenario changed what it runs) is ended at the next
start. Every spare ends when the outermost search ends, and with
:func:`harness._processes.end_all` (the second Ctrl-C, SIGTERM, atexit),
killed at once (SIGKILL to its family): it never talked to anything, so it has
no graceful stop to make.

Turned off by ``ExternalOperator(..., ahead=False)`` or, for every operator of
the harness process, ``RACE_HARNESS_AHEAD=0`` in its environment.

Rejected: a fork server, a pre-imported Python parent forked per run. A forked
interpreter is not the process as written: modules that read the environment
or ``sys.argv`` at import (``kubernetes.config``, kopf's settings, logging's
configuration) would have read the parent's, not the run's ``KUBECONFIG``; a
fork copies only the forking thread, so a lock another thread of the parent
held (an import lock, a logging handler's, a client's thread pool's) stays
held in the child for ever; what the parent drew at import (random seeds,
cached pids, open descriptors, atexit handlers) is shared by every child. It
would serve Python only (Go, Java, Node start as executables), and with the
start ahead what it would save is CPU on a core the run does not use, not the
run's wall time.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import statistics
import subprocess
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.sim import real_monotonic

from .._processes import ProcessFamily, make_folder, on_search_end, remove_folder, runs_follow
from ..kube._http._tcp import loopback_kubeconfig

#: the environment variable that turns starting ahead off for every operator process (``0``, ``false``, ``no``)
AHEAD_ENV = "RACE_HARNESS_AHEAD"
#: real seconds a spare's connection may have waited in the backlog and still be adopted (a client gives up a held
#: handshake after 10 s: client-go's ``TLSHandshakeTimeout``, lightkube's httpx timeout; the rest is the margin for
#: a connection seen late, :func:`look`)
MAX_HOLD = 7.0
#: spares kept ready per command, at most: one more each time a spare was still starting up when its run began
#: (a run that no longer waits for its process's start-up is shorter than that start-up: the official client's is
#: 1.2 s, its run then 0.3 s, so each spare needs several runs' head start)
MAX_DEPTH = 4
#: real seconds before its run a spare is meant to have connected (see :func:`delay`): half the hold it may have,
#: so a start-up or a run that is slower or faster than the last by as much still finds it adopted
LEAD = MAX_HOLD / 2
#: spares alive at once, at most (a scenario with several operator processes has its own for each)
MAX_SPARES = 6

_lock = threading.Lock()
_spares: dict[Hashable, list[Spare]] = {}  # key -> its spares, oldest first
_depth: dict[Hashable, int] = {}  # key -> how many spares to keep ready
_broken: set[Hashable] = set()  # keys whose spare exited once connected (or never started): not again this search
_run_seconds: dict[Hashable, list[float]] = {}  # key -> real seconds its last runs lasted (:data:`RECENT`)
_connect_seconds: dict[Hashable, list[float]] = {}  # key -> real seconds its last spares took to connect
#: how many of the last runs (and spares) :func:`delay` reads
RECENT = 3


def enabled(flag: bool | None) -> bool:
    """Whether an operator starts ahead: its own ``ahead=`` flag, else :data:`AHEAD_ENV` (on unless it says no)."""
    if flag is not None:
        return flag
    return os.environ.get(AHEAD_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def listening_socket() -> socket.socket:
    """A loopback TCP socket bound to a free port and listening: a connection to it completes (and its first bytes
    wait) in the kernel until the socket is served."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@dataclass
class Spare:
    """A process started for a run that has not begun: its socket, its folder (kubeconfig, ``output-1.log``)."""

    key: Hashable
    name: str
    sock: socket.socket
    port: int
    folder: Path
    family: ProcessFamily
    popen: subprocess.Popen[bytes]
    #: real (monotonic) time it was started
    started: float
    #: real time its first connection was first seen waiting in the backlog (None: not yet seen)
    connected: float | None = None

    def alive(self) -> bool:
        return self.popen.poll() is None

    def held_too_long(self, now: float) -> bool:
        return self.connected is not None and now - self.connected > MAX_HOLD

    def end(self) -> None:
        """SIGKILL its family, close its socket, remove its folder."""
        try:
            self.family.kill()
        finally:
            with contextlib.suppress(OSError):
                self.sock.close()
            remove_folder(self.folder)


def delay(key: Hashable) -> float:
    """Real seconds after its run began that the next run's process is best started: so that its connection comes
    about :data:`LEAD` seconds before that run begins, at once while that is not known. Read from the median of the
    last :data:`RECENT` runs' lengths and spares' start-ups (a run's first in a harness process is slow with the
    harness's own imports; a loaded machine slows both): started too late, the run waits for the rest of the
    start-up; too early, the spare is held too long and ended, and the run starts a fresh process."""
    with _lock:
        runs, connects = _run_seconds.get(key), _connect_seconds.get(key)
        if not runs or not connects:
            return 0.0
        return max(0.0, statistics.median(runs) - statistics.median(connects) - LEAD)


def _remember(table: dict[Hashable, list[float]], key: Hashable, seconds: float) -> None:
    table[key] = [*table.get(key, ())[-(RECENT - 1):], seconds]


def ran(key: Hashable, seconds: float) -> None:
    """A run of ``key``'s process lasted ``seconds`` (real) from its start to its end."""
    with _lock:
        _remember(_run_seconds, key, seconds)


def _all() -> list[Spare]:
    return [s for spares in _spares.values() for s in spares]


def start_spares(key: Hashable, name: str, argv: Sequence[str], environment: Callable[[str], Mapping[str, str]],
                 cwd: str | os.PathLike[str] | None, ca_data: str | None) -> None:
    """Start processes for coming runs until ``key`` has as many ready as it needs (see the module),
    ``environment(kubeconfig)`` their environment. None is started outside a search, nor for a command whose spare
    exited; one that cannot start is left to the run, which starts it fresh and says why."""
    if not runs_follow():
        return
    _sweep()
    while True:
        with _lock:
            if key in _broken or len(_spares.get(key, ())) >= _depth.get(key, 1) or len(_all()) >= MAX_SPARES:
                return
        try:  # (out of ports, descriptors or disk: the next run starts its process itself, and says so if it cannot)
            sock = listening_socket()
        except OSError:
            return
        port = sock.getsockname()[1]
        family = ProcessFamily()
        try:
            folder = make_folder("race-harness-")
        except OSError:
            sock.close()
            return
        try:
            (folder / "kubeconfig").write_text(loopback_kubeconfig(port, ca_data))
            with open(folder / "output-1.log", "wb") as log:
                popen = family.start(argv, environment(str(folder / "kubeconfig")), cwd=cwd,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        except OSError:
            sock.close()
            remove_folder(folder)
            with _lock:
                _broken.add(key)
            return
        on_search_end(end_spares)
        with _lock:
            _spares.setdefault(key, []).append(Spare(key, name, sock, port, folder, family, popen, real_monotonic()))


def take(key: Hashable, name: str) -> Spare | None:
    """The oldest spare for ``key``, now the caller's, if one is not held too long (see the module): alive, or
    exited before it ever connected (the run's verdict on its exit is a fresh process's, with its output); the spares
    of the same operator name with another key are ended."""
    with _lock:
        stale = [s for k, spares in _spares.items() if k != key for s in spares if s.name == name]
        for s in stale:
            _spares[s.key].remove(s)
    for s in stale:
        s.end()
    look()
    _sweep()
    with _lock:
        spares = _spares.get(key)
        spare = spares.pop(0) if spares else None
        if spare is not None and spare.connected is None and spare.alive():
            # still starting when its run begins: start the next sooner, and keep one more ready
            _connect_seconds.pop(key, None)
            _depth[key] = min(MAX_DEPTH, _depth.get(key, 1) + 1)
        elif spare is not None and spare.connected is not None:
            _remember(_connect_seconds, key, spare.connected - spare.started)
    return spare


def look() -> None:
    """Note which spares' first connections now wait in their sockets' backlogs (a listening socket is readable
    then): how long a connection was held is what a client's handshake timeout counts."""
    with _lock:
        waiting = [s for s in _all() if s.connected is None]
    if not waiting:
        return
    try:
        ready, _, _ = select.select([s.sock for s in waiting], [], [], 0)
    except (OSError, ValueError):
        return
    now = real_monotonic()
    for s in waiting:
        if s.sock in ready:
            s.connected = now


def _sweep() -> None:
    """End the spares held too long, and those that exited after they connected (their command is not started ahead
    again). One that exited before it ever connected stays, for its run: it died of its own start-up, as a fresh
    process would, and its run says so with its output."""
    now = real_monotonic()
    with _lock:
        gone = [s for s in _all() if s.connected is not None and (s.held_too_long(now) or not s.alive())]
        for s in gone:
            _spares[s.key].remove(s)
            if not s.alive():  # (it may have given up on its held connection: no verdict of the operator's)
                _broken.add(s.key)
            elif s.connected is not None:  # held too long: start the next later, and one at a time
                _remember(_connect_seconds, s.key, s.connected - s.started)
                _depth[s.key] = 1
    for s in gone:
        s.end()


def end_spares() -> None:
    """End every spare (the search ended, or the harness process leaves), and forget what was learnt of commands."""
    with _lock:
        spares = _all()
        _spares.clear()
        _depth.clear()
        _broken.clear()
        _run_seconds.clear()
        _connect_seconds.clear()
    for s in spares:
        with contextlib.suppress(Exception):
            s.end()


def live_spares() -> list[Spare]:
    """The spares alive now (for tests and the curious)."""
    with _lock:
        return _all()
