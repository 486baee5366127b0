"""Any operator process, searched: an OS process pointed at this scenario's apiserver (:class:`ExternalOperator`).

Most operators are not Python (Go, Java, Rust) and cannot run inside the world.
``ExternalOperator(api, "app-operator", ["./manager"]).start()`` runs one as it
ships, as its own OS process, with ``KUBECONFIG`` naming a kubeconfig (in a
temporary directory the harness owns and removes) for this scenario's apiserver,
served on a loopback port by the same TCP server and REST handler as
``python -m harness serve``. What makes it searched rather than merely served:

* **every request is an actor's steps** (``app-operator/POST /api/v1/...``,
  named by the request, not by when it came), so each API call is a yield point
  where the world's choices apply (conflicts, lost responses), and every watch
  event to it is a delivery held in its window like an informer's;
* **quiescence between choices** (``harness.sim._outside``): after a step that
  answered the process or took a request from it, the scheduler waits on the
  real clock until the process is quiet (nothing half sent, nothing new for
  ``quiet`` seconds, and not computing: no thread of its process tree running
  or runnable, its CPU time not growing, ``harness.kube._busy``; at most
  ``bound``; before its first request, up to ``startup``), so the requests it
  sends in reaction are all enabled before the next choice: one plan gives one
  order of API events, as far as the process's own threads allow. The look at
  its CPU is what lets ``quiet`` be short: a process that imports for 0.6 s
  before its next request, or waits for a core, is not mistaken for one that
  waits for the world. The world's time stays virtual;
* **a restart fault** (``crash_faults=True`` or ``--faults crash``): the
  ``ControllerProcess`` crash point before each of its requests kills the
  process (SIGKILL: it loses its memory, its connections close) and starts it
  again after the restart window, a fresh process that lists again;
* **its end**: when the run ends the process is terminated (SIGTERM, SIGKILL
  two seconds later). A process that exits on its own while the run goes on
  is named: before its first request, or unable to run (126, 127), a model
  error (its command or environment is wrong); with another non-zero code after
  it talked to the apiserver, a finding (the operator crashed); exit 0 is a
  note.

Rejected: running the process under the real clock with no choices (that is
``serve``: nothing is explored, and its races show once in many runs), and
stepping the process itself (ptrace, a debugger): the API boundary is where
Sieve (OSDI'22) perturbs real controllers, and it needs nothing of the binary.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._apiserver import APIServer
from ._busy import ProcessLoad
from ._delivery import DEFAULT_MAX_LAG
from ._http._tcp import loopback_kubeconfig
from ._process import ControllerProcess

#: exit codes of a process that never ran: the shell's "cannot execute" and "not found"
_COULD_NOT_RUN = (126, 127)


class ExternalOperator:
    """An operator binary run as its own OS process against this scenario's apiserver, searched (see the module)."""

    def __init__(
        self,
        api: APIServer,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        quiet: float = 0.15,
        bound: float = 5.0,
        startup: float = 20.0,
        crash_faults: bool = False,
        max_crashes: int = 1,
        restart_after: float = 0.0,
        restart_window: float = 2.0,
        max_lag: float = DEFAULT_MAX_LAG,
        latency: float = 0.0,
        watch_drops: bool = False,
        watch_ends: bool = False,
        compactions: bool = False,
    ) -> None:
        """``argv`` runs the operator (``["./manager", "--leader-elect=false"]``); ``env`` adds to the
        harness's own environment (``KUBECONFIG`` is set for it), ``cwd`` is where it runs.

        ``quiet``: real seconds without traffic and without computing after which the process counts as
        waiting for the world (it must outlast the process's own timers between an event and its reaction);
        ``bound``: the longest wait at one choice; ``startup``: the longest wait for its first request.
        The crash settings are :class:`ControllerProcess`'s; ``max_lag``, ``latency`` and the watch fault
        flags are its watch connections' (as ``api.transport()``'s). The namespaces every cluster has
        (``default``, ``kube-system``, ...) are the apiserver's from its start.
        """
        if not argv:
            raise ValueError(f"ExternalOperator {name!r}: argv is empty; give the command that runs the operator")
        if not (quiet > 0 and bound >= quiet and startup > 0):
            raise ValueError(f"ExternalOperator {name!r}: need quiet > 0, bound >= quiet and startup > 0 "
                             f"(got quiet={quiet}, bound={bound}, startup={startup})")
        self.api = api
        self.world = api._world
        self.name = name
        self.argv = [str(a) for a in argv]
        self.env = dict(env or {})
        self.cwd = cwd
        self._quiet, self._bound, self._startup = quiet, bound, startup
        self._options: dict[str, Any] = {"max_lag": max_lag, "latency": latency, "watch_drops": watch_drops,
                                         "watch_ends": watch_ends, "compactions": compactions}
        self.process = ControllerProcess(self.world, name, self._build, crash_faults=crash_faults,
                                         max_crashes=max_crashes, restart_after=restart_after,
                                         restart_window=restart_window)
        #: the running OS process (None before start() and after the run)
        self.popen: subprocess.Popen[bytes] | None = None
        #: every OS process started, in order (one per incarnation)
        self.popens: list[subprocess.Popen[bytes]] = []
        #: requests the process sent, over all its incarnations
        self.requests = 0
        #: how the last process ended: None while it runs, else its exit code (negative: the signal)
        self.exit_code: int | None = None
        # the Outside protocol (harness.sim._outside)
        self.stirred = False
        self._inflight = 0
        self._last = 0.0
        self._load: ProcessLoad | None = None  # whether the running process computes (harness.kube._busy)
        self._requests_of_incarnation = 0
        self._killed: set[int] = set()  # pids the harness itself ended
        self._dir: Path | None = None
        self._port = 0
        self._arrived: list[tuple[str, bytes, int, Any, tuple[Any, ...]]] = []  # requests not yet actors
        #: each process's output (stdout and stderr), by incarnation, once the run ended
        self.logs: dict[int, str] = {}

    # ------------------------------------------------------------------ start and incarnations
    @property
    def crashes(self) -> int:
        return self.process.crashes

    @property
    def restarts(self) -> int:
        return self.process.restarts

    @property
    def kubeconfig(self) -> Path:
        """The kubeconfig the process reads (valid while the run lasts)."""
        if self._dir is None:
            raise RuntimeError(f"{self.name}: start() first")
        return self._dir / "kubeconfig"

    def start(self) -> ExternalOperator:
        """Serve the apiserver on a loopback port, write the kubeconfig, and start the process."""
        import trio

        from ._http import TCPServer
        from ._http._handler import _handler_of
        from ._http._watch import WatchOptions

        world = self.world
        if world._nursery is None:
            raise RuntimeError("ExternalOperator.start() is only available while the world runs (in the scenario)")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self._port = sock.getsockname()[1]
        self._dir = Path(tempfile.mkdtemp(prefix="race-harness-"))
        self.kubeconfig.write_text(loopback_kubeconfig(self._port))
        server = TCPServer(world, _handler_of(self.api), self.name, spawn=self._spawn_request,
                           activity=self._activity, options=WatchOptions(**self._options))
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        world._nursery.start_soon(trio.serve_listeners, server.connection, [listener])
        world._add_outside(self)
        world.on_end(self._end)
        if world.noting:
            # (no port, path or pid: a note is part of the trace, the same in every run)
            world.note(f"{self.name} runs as its own process against this apiserver (real clock between its "
                       "requests)", kind="log", process=self.name)
        self.process.start()
        return self

    def _build(self, process: ControllerProcess) -> subprocess.Popen[bytes]:
        assert self._dir is not None
        n = len(self.popens) + 1
        log = open(self._dir / f"output-{n}.log", "wb")  # noqa: SIM115  # the child writes it; closed below
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "NO_PROXY": "127.0.0.1,localhost",
               "no_proxy": "127.0.0.1,localhost", **self.env}
        try:
            popen = subprocess.Popen(self.argv, env=env, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            log.close()
            self.world._fail("misuse", f"{self.name} could not start",
                             f"{self.name}: {' '.join(self.argv)} could not start: {exc}. Give ExternalOperator "
                             "the command that runs the operator (argv[0] on PATH or a path, cwd= where it runs)",
                             None)
            raise
        log.close()
        self.popen = popen
        self.popens.append(popen)
        self._load = ProcessLoad(popen.pid)
        self.exit_code = None
        self._requests_of_incarnation = 0
        self._activity(0)  # a new process is starting: the scheduler waits for its first request
        process.on_crash(lambda: self._kill(popen))
        return popen

    def _spawn_request(self, name: str, fn: Any, *args: Any) -> str:
        """A request came in: it waits until the process is quiescent (see :meth:`settled`)."""
        self.requests += 1
        self._requests_of_incarnation += 1
        if self.world._real is not None:  # a real-clock run: nothing is chosen, nothing waits
            return self.process.spawn(name, fn, *args, daemon=True)
        self._arrived.append((name, args[3], len(self.popens), fn, args))
        return name

    def settled(self) -> None:
        """The process is quiescent: the requests that came in meanwhile become actors, in order of their names
        (then bodies), not of their arrival, which is the process's threads' and differs from run to run."""
        arrived, self._arrived = self._arrived, []
        for name, _body, incarnation, fn, args in sorted(arrived, key=lambda a: (a[0], a[1])):
            if incarnation != len(self.popens) or self.process.crashed:
                args[5].set()  # (``done``) its process was killed meanwhile: the connection closes unanswered
                continue
            self.process.spawn(name, fn, *args, daemon=True)

    # ------------------------------------------------------------------ the Outside protocol
    def _activity(self, delta: int) -> None:
        self._inflight = max(0, self._inflight + delta)
        self._last = time.monotonic()
        self.stirred = True
        self.world._poke_outside()

    def quiet_for(self) -> float | None:
        """Real seconds since the process last sent or was sent anything, or was seen computing (a thread running
        or runnable, its CPU time grown: ``harness.kube._busy``); None while a request is half read."""
        if self._inflight:
            return None
        now = time.monotonic()
        if self._load is not None and not self._gone() and self._load.busy():
            self._last = now
        return now - self._last

    def quiet(self) -> float:
        """How long it must stay silent to count as waiting for the world: ``quiet``, or before its first request
        ``startup`` (a process's start-up is no quiescence)."""
        return self._quiet if self._requests_of_incarnation or self._gone() else self._startup

    def bound(self) -> float:
        """The longest the scheduler waits for it at one choice: ``bound``, or ``startup`` before its first request."""
        return self._bound if self._requests_of_incarnation or self._gone() else max(self._bound, self._startup)

    def _gone(self) -> bool:
        return self.popen is None or self.popen.poll() is not None

    def check(self) -> None:
        """The process exited on its own while the run goes on: name it (see the module for the verdicts)."""
        popen = self.popen
        if popen is None or self.exit_code is not None:
            return
        code = popen.poll()
        if code is None or popen.pid in self._killed:
            return
        self.exit_code = code
        world = self.world
        said = f"{self.name} ({' '.join(self.argv)}, pid {popen.pid}) exited with code {code}"
        tail = self._output_tail(len(self.popens))
        if code == 0:
            if world.noting:
                world.note(f"{said}: the operator returned", kind="log", process=self.name)
            return
        if code in _COULD_NOT_RUN or self.requests == 0:
            world._fail("misuse", f"{self.name} exited",
                        f"{said} before it sent the apiserver a request: its command or environment is wrong, "
                        f"not the operator{tail}", None)
        else:
            world._fail("actor-raised", self.name, f"{said} while the run went on: the operator crashed{tail}",
                        None)

    def _output_tail(self, n: int, lines: int = 12) -> str:
        if self._dir is None:
            return ""
        try:
            text = (self._dir / f"output-{n}.log").read_text(errors="replace").rstrip().splitlines()[-lines:]
        except OSError:
            return ""
        return "; its last output:\n" + "\n".join(text) if text else ""

    # ------------------------------------------------------------------ ending
    def _kill(self, popen: subprocess.Popen[bytes]) -> None:
        """A crash fault: SIGKILL, as a node's OOM killer or a kubelet's hard stop does (its memory is lost)."""
        self._killed.add(popen.pid)
        if popen.poll() is None:
            try:
                os.killpg(popen.pid, signal.SIGKILL)
            except OSError:
                popen.kill()
        if self.world.noting:
            self.world.note(f"{self.name}: its process killed", kind="crash", process=self.name)

    def _end(self) -> None:
        """The run ended: every process still running is terminated (SIGTERM, then SIGKILL), the files removed."""
        if self.world._violation is None and not self.world._interrupted:
            self.check()
        for popen in self.popens:
            if popen.poll() is None:
                self._killed.add(popen.pid)
                try:
                    os.killpg(popen.pid, signal.SIGTERM)
                except OSError:
                    popen.terminate()
                try:
                    popen.wait(2.0)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(popen.pid, signal.SIGKILL)
                    except OSError:
                        popen.kill()
                    popen.wait()
        self.popen = None
        if self._dir is not None:
            self.logs = {i + 1: self._read(i + 1) for i in range(len(self.popens))}
            shutil.rmtree(self._dir, ignore_errors=True)

    def _read(self, n: int) -> str:
        assert self._dir is not None
        try:
            return (self._dir / f"output-{n}.log").read_text(errors="replace")
        except OSError:
            return ""
