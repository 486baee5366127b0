"""Any operator process, searched: an OS process pointed at this scenario's apiserver (:class:`ExternalOperator`).

Most operators are not Python (Go, Java, Rust) and cannot run inside the world.
``ExternalOperator(api, "app-operator", ["./manager"]).start()`` runs one as it
ships, as its own OS process, with ``KUBECONFIG`` naming a kubeconfig (in a
temporary directory the harness owns and removes) for this scenario's apiserver,
served on a loopback port by the same TCP server and REST handler as
``python -m harness serve``, over TLS with the CA in the kubeconfig as
kube-apiserver's (``tls=False``: plain HTTP). What makes it searched rather
than merely served:

* **every request is an actor's steps** (``app-operator/POST /api/v1/...``,
  named by the request, not by when it came), so each API call is a yield point
  where the world's choices apply (conflicts, lost responses), and every watch
  event to it is a delivery held in its window like an informer's. Reads of
  discovery and OpenAPI documents (``/api``, ``/apis/<group>/<version>``,
  ``/version``, ``/openapi/v3``) are the exception: a function of the kinds
  served, answered where the world waits, not steps (:meth:`_spawn_request`);
* **quiescence between choices** (``harness.sim._outside``): after a step that
  answered the process or took a request from it, the scheduler waits on the
  real clock until the process is quiet (nothing half sent, nothing new for
  ``quiet`` seconds, and not computing: no thread of its process tree running
  or runnable, its CPU time not growing, ``harness.operators._busy``; at most
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
* **its start ahead** (``harness.operators._ahead``): in a search, once the
  process has sent its first request, the process for the next run is started
  on a socket and kubeconfig of its own, its first request held in the
  socket's backlog until that run begins and adopts it: its start-up overlaps
  this run instead of delaying the next (``ahead=False`` or
  ``RACE_HARNESS_AHEAD=0`` turn it off);
* **its end**: when the run ends the process is terminated (SIGTERM, SIGKILL
  two seconds later), and with it every process it started: its group, its
  session, and the daemons that left both (each carries the process's marker
  in its environment, ``harness._processes``; without ``/proc``, as on macOS,
  its process group only). A second Ctrl-C or SIGTERM, which stops the hunt
  at once, kills them all and removes the temporary folder before the harness
  exits. A process that exits on its own while the run goes on
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

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.sim import real_monotonic  # (the process's quiet time is real, whoever reads it)

from .._processes import ProcessFamily, make_folder, remove_folder
from ..kube import APIServer, ControllerProcess
from ..kube._delivery import DEFAULT_MAX_LAG
from ..kube._http._tcp import loopback_kubeconfig
from . import _ahead
from ._busy import ProcessLoad

if TYPE_CHECKING:
    from ..kube._http._handler import APIHandler

_LEVELS = (("CRITICAL", "CRITICAL"), ("ERROR", "ERROR"), ("Traceback", "ERROR"), ("Exception", "ERROR"),
           ("Error:", "ERROR"), ("WARNING", "WARNING"), ("WARN", "WARNING"))

#: zap's level names (``zapcore/level.go``) as ``logging``'s: what a story weighs (``harness.explore._story``)
_ZAP_LEVELS = {"DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARNING", "ERROR": "ERROR", "DPANIC": "CRITICAL",
               "PANIC": "CRITICAL", "FATAL": "CRITICAL"}
#: klog's header, ``Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg`` (``klog.go``, ``formatHeader``)
_KLOG = re.compile(r"([IWEF])\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ (.*)")
_KLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "CRITICAL"}
#: zap's console encoder: time, level, then the logger's name, message and fields, tab-separated
#: (``zapcore/console_encoder.go``; controller-runtime's ``zap.New`` in development mode uses it, ISO 8601 times)
_ZAP_CONSOLE = re.compile(r"[0-9][0-9eT:.+\-Z]*\t([A-Z]+)\t(.*)")
#: the keys of zap's JSON encoder (and logr's other JSON sinks) that hold the line's time, left out of a note
_TIME_KEYS = ("ts", "time", "timestamp")
#: a random UUID the process drew (controller-runtime logs each reconcile's ``reconcileID``, a new UUID, in
#: ``pkg/internal/controller/controller.go``): the harness's own uids are ``uid-0001``, so a UUID in the output is the
#: process's randomness, said as ``<uuid>``
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")


def _spoken(line: str) -> tuple[str, str]:
    """An output line's level and its words without its time (and klog's thread id; the caller also masks UUIDs):
    a note is the same in every run, and the process's clock is not. Understood: zap's console lines
    (``<time>\\t<LEVEL>\\t...``) and JSON lines (``"level"``, ``"msg"``), as controller-runtime's logger writes
    them; klog's ``E1128 ...`` headers; else ``logging``'s words anywhere in the line, INFO when none."""
    m = _ZAP_CONSOLE.fullmatch(line)
    if m is not None and m.group(1) in _ZAP_LEVELS:
        return _ZAP_LEVELS[m.group(1)], f"{m.group(1)} " + m.group(2).replace("\t", "  ")
    if line.startswith("{") and '"level"' in line:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if isinstance(entry, dict) and isinstance(entry.get("level"), str):
            word = entry.pop("level").upper()
            for key in _TIME_KEYS:
                entry.pop(key, None)
            said = " ".join(str(entry.pop(k)) for k in ("logger", "msg") if k in entry)
            rest = json.dumps(entry, sort_keys=True) if entry else ""
            return _ZAP_LEVELS.get(word, _level_of(word)), " ".join(w for w in (word, said, rest) if w)
    m = _KLOG.fullmatch(line)
    if m is not None:
        return _KLOG_LEVELS[line[0]], f"{line[0]} {m.group(2)}"
    return _level_of(line), line


def _level_of(line: str) -> str:
    """The level an output line says of itself (``logging``'s words, a klog-like ``E1128``/``W1128`` prefix), INFO
    otherwise."""
    if len(line) > 5 and line[0] in "EW" and line[1:5].isdigit():
        return "ERROR" if line[0] == "E" else "WARNING"
    return next((level for word, level in _LEVELS if word in line), "INFO")


#: real seconds after a process's last traffic before its threads' waits may end a quiescence wait early
SETTLE_MARGIN = 0.006
#: how often the quiescence wait looks at a process's threads (real seconds)
LOOK_EVERY = 0.004

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
        tls: bool = True,
        settle: bool = True,
        ahead: bool | None = None,
    ) -> None:
        """``argv`` runs the operator (``["./manager", "--leader-elect=false"]``); ``env`` adds to the
        harness's own environment (``KUBECONFIG`` is set for it), ``cwd`` is where it runs.

        ``quiet``: real seconds without traffic and without computing after which the process counts as
        waiting for the world (it must outlast the process's own timers between an event and its reaction);
        ``bound``: the longest wait at one choice; ``startup``: the longest wait for its first request.
        The crash settings are :class:`ControllerProcess`'s; ``max_lag``, ``latency`` and the watch fault
        flags are its watch connections' (as ``api.transport()``'s). The namespaces every cluster has
        (``default``, ``kube-system``, ...) are the apiserver's from its start.
        ``tls``: serve HTTPS as kube-apiserver does, the CA in the kubeconfig (``certificate-authority-data``; one CA
        and certificate per harness process, ``harness/kube/_http/_tls.py``); ``False`` serves plain ``http://``,
        which some clients refuse (``@kubernetes/client-node`` 1.x sends nothing).
        ``settle``: end a quiescence wait as soon as every thread of the process waits for the world with no timer
        of its own that fires before ``quiet`` of silence would have passed (``harness.operators._waits``), rather
        than after ``quiet`` of silence;
        ``False`` keeps the silence rule alone.
        ``ahead``: in a search, start the next run's process during this one (``harness.operators._ahead``); None
        (the default) is on unless ``RACE_HARNESS_AHEAD=0`` is in the environment.
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
        self.tls = tls
        self.ahead = _ahead.enabled(ahead)
        self._options: dict[str, Any] = {"max_lag": max_lag, "latency": latency, "watch_drops": watch_drops,
                                         "watch_ends": watch_ends, "compactions": compactions}
        self.process = ControllerProcess(self.world, name, self._build, crash_faults=crash_faults,
                                         max_crashes=max_crashes, restart_after=restart_after,
                                         restart_window=restart_window)
        #: the running OS process (None before start() and after the run)
        self.popen: subprocess.Popen[bytes] | None = None
        #: every OS process started, in order (one per incarnation)
        self.popens: list[subprocess.Popen[bytes]] = []
        #: each incarnation's process and all it started (``harness._processes``), in order
        self.families: list[ProcessFamily] = []
        #: requests the process sent, over all its incarnations
        self.requests = 0
        #: how the last process ended: None while it runs, else its exit code (negative: the signal)
        self.exit_code: int | None = None
        # the Outside protocol (harness.sim._outside)
        self.stirred = False
        self._inflight = 0
        self._last = 0.0
        self._load: ProcessLoad | None = None  # whether the running process computes (harness.operators._busy)
        #: whether its threads' waits may end a quiescence wait before ``quiet`` (``harness.operators._waits``)
        self.settle = settle
        self.look_every = LOOK_EVERY if settle else float("inf")
        #: quiescence waits for the process (and of them, ended by its threads' waits, not ``quiet``), all runs
        self.waits = 0
        self.settled_waits = 0
        self._ended_settled = False
        self._requests_of_incarnation = 0
        self._killed: set[int] = set()  # pids the harness itself ended
        self._dir: Path | None = None
        self._port = 0
        self._arrived: list[tuple[str, bytes, int, Any, tuple[Any, ...]]] = []  # requests not yet actors
        self._handler: APIHandler | None = None  # the REST handler serving it (start())
        self._documents: list[tuple[int, tuple[Any, ...]]] = []  # discovery reads not yet answered (incarnation)
        #: discovery and OpenAPI reads answered without a step (see :meth:`_spawn_request`), all runs
        self.documents_read = 0
        self._output_read: dict[int, int] = {}  # incarnation -> bytes of its output already noted
        #: each process's output (stdout and stderr), by incarnation, once the run ended
        self.logs: dict[int, str] = {}
        #: whether this run's first process was started ahead, during an earlier run (``_ahead``)
        self.adopted = False
        #: real (monotonic) time the first process started: before this run began when it was adopted
        self.started_at: float | None = None
        self._spare: _ahead.Spare | None = None  # the spare start() adopted, taken over by the first _build
        self._ca_data: str | None = None
        self._began = 0.0  # real time start() was called
        self._ahead_due: float | None = None  # real time the next run's process is to be started (``_ahead``)

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

        from ..kube._http import TCPServer
        from ..kube._http._handler import _handler_of
        from ..kube._http._tls import serving_cert, tls_listeners
        from ..kube._http._watch import WatchOptions

        world = self.world
        if world._nursery is None:
            raise RuntimeError("ExternalOperator.start() is only available while the world runs (in the scenario)")
        # (made once per harness process and reused by every run: the first costs its imports, the later nothing)
        cert = serving_cert() if self.tls else None
        self._began = real_monotonic()
        self._ca_data = None if cert is None else cert.ca_data
        spare = _ahead.take(self._ahead_key(), self.name) if self.ahead else None
        if spare is not None:  # its socket, folder and kubeconfig are this run's; its process is the first incarnation
            sock, self._port, self._dir, self._spare = spare.sock, spare.port, spare.folder, spare
            world.on_end(self._end)
        else:
            sock = _ahead.listening_socket()
            self._port = sock.getsockname()[1]
            self._dir = make_folder("race-harness-")
            world.on_end(self._end)  # (first: the folder is removed however what follows ends)
            self.kubeconfig.write_text(loopback_kubeconfig(self._port, self._ca_data))
        self._handler = _handler_of(self.api)
        server = TCPServer(world, self._handler, self.name, spawn=self._spawn_request,
                           activity=self._activity, options=WatchOptions(**self._options))
        listeners: list[Any] = [trio.SocketListener(trio.socket.from_stdlib_socket(sock))]
        if self.tls:
            listeners = tls_listeners(listeners)
        world._nursery.start_soon(trio.serve_listeners, server.connection, listeners)
        world._add_outside(self)
        world.on_end(self._never_reached)  # (before _end: called in reverse order, while its output is still there)
        if world.noting:
            # (no port, path or pid: a note is part of the trace, the same in every run)
            world.note(f"{self.name} runs as its own process against this apiserver (real clock between its "
                       "requests)", kind="log", process=self.name)
        self.process.start()
        return self

    def _environment(self, kubeconfig: str) -> dict[str, str]:
        """The process's environment (the family's marker is added by ``ProcessFamily``)."""
        return {**os.environ, "KUBECONFIG": kubeconfig, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost", **self.env}

    def _ahead_key(self) -> tuple[object, ...]:
        """All a process sees of its start but its port and paths: two runs with one key start the same process."""
        env = self._environment("<kubeconfig>")
        return (self.name, tuple(self.argv), tuple(sorted(env.items())), None if self.cwd is None else str(self.cwd),
                self._ca_data)

    def _start_ahead(self, *, at_end: bool = False) -> None:
        """Start the next run's process when it is due (see ``_ahead``): not before this one has sent its first
        request, then as long before the next run as that process's start-up takes; at the run's end if it came
        first."""
        due = self._ahead_due
        if due is None or (real_monotonic() < due and not at_end):
            return
        self._ahead_due = None
        _ahead.start_spares(self._ahead_key(), self.name, self.argv, self._environment, self.cwd, self._ca_data)

    def _build(self, process: ControllerProcess) -> subprocess.Popen[bytes]:
        assert self._dir is not None
        spare, self._spare = self._spare, None
        if spare is not None:  # started ahead (``_ahead``): its first request waits in the socket's backlog
            family, popen = spare.family, spare.popen
            self.adopted, self.started_at = True, spare.started
        else:
            n = len(self.popens) + 1
            log = open(self._dir / f"output-{n}.log", "wb")  # noqa: SIM115  # the child writes it; closed below
            env = self._environment(str(self.kubeconfig))
            family = ProcessFamily()
            try:
                popen = family.start(self.argv, env, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT)
            except OSError as exc:
                log.close()
                self.world._fail("misuse", f"{self.name} could not start",
                                 f"{self.name}: {' '.join(self.argv)} could not start: {exc}. Give ExternalOperator "
                                 "the command that runs the operator (argv[0] on PATH or a path, cwd= where it runs)",
                                 None)
                raise
            log.close()
            if self.started_at is None:
                self.started_at = real_monotonic()
        self.popen = popen
        self.popens.append(popen)
        self.families.append(family)
        self._load = ProcessLoad(popen.pid)
        self.exit_code = None
        self._requests_of_incarnation = 0
        self._activity(0)  # a new process is starting: the scheduler waits for its first request
        process.on_crash(lambda: self._kill(family))
        return popen

    def _spawn_request(self, name: str, fn: Any, *args: Any) -> str:
        """A request came in: it waits until the process is quiescent (see :meth:`settled`)."""
        self.requests += 1
        self._requests_of_incarnation += 1
        if self.requests == 1 and self.ahead:
            self._ahead_due = self._began + _ahead.delay(self._ahead_key())
            self._start_ahead()
        if self.world._real is not None:  # a real-clock run: nothing is chosen, nothing waits
            return self.process.spawn(name, fn, *args, daemon=True)
        from ..kube._http._handler import is_document

        if is_document(args[0], args[1]):
            # A discovery or OpenAPI read is a function of the kinds served, which only a step changes: answered
            # while the world waits (no step runs), or where the wait settles, never a step itself. A client reads
            # a few in turn at its start (client-go: /api, then /apis; kopf: each group's), and a step each cost a
            # quiescence wait each (Go: 0.2 s, its start-up's timers) for no choice: where one is answered changes
            # nothing another actor sees. Its answer is traffic (the process reacts to it).
            self._documents.append((len(self.popens), args))
            if self.world._outside_waiting:
                self._answer_documents()
            return name
        self._arrived.append((name, args[3], len(self.popens), fn, args))
        return name

    def _answer_documents(self) -> None:
        documents, self._documents = self._documents, []
        for incarnation, (_method, target, headers, _body, box, done, _send) in documents:
            if incarnation == len(self.popens) and not self.process.crashed:
                assert self._handler is not None
                box["reply"] = self._handler.document(target, headers, self.name)
                self.documents_read += 1
            done.set()  # (no reply: its process was killed meanwhile, the connection closes unanswered)

    def settled(self) -> None:
        """The process is quiescent: the requests that came in meanwhile become actors, in order of their names
        (then bodies), not of their arrival, which is the process's threads' and differs from run to run."""
        self.waits += 1
        self.settled_waits += self._ended_settled
        self._ended_settled = False
        _ahead.look()  # (how long a spare's first connection has waited: see ``_ahead``)
        self._start_ahead()
        if self.world.noting:
            self._note_output()
        self._answer_documents()
        arrived, self._arrived = self._arrived, []
        # (then by target, query included: a list and a watch of one path share a name, numbered in this order)
        for name, _body, incarnation, fn, args in sorted(arrived, key=lambda a: (a[0], a[4][1], a[1])):
            if incarnation != len(self.popens) or self.process.crashed:
                args[5].set()  # (``done``) its process was killed meanwhile: the connection closes unanswered
                continue
            self.process.spawn(name, fn, *args, daemon=True)

    def _note_output(self) -> None:
        """The lines the process wrote since the last look, each a note of the step it was answering (the one that
        just ran: the process was waited for until quiet after it), so its own words are in the story and the
        trace. A line that says ERROR, WARNING, a traceback or an exception carries that level (zap's and klog's
        by their own fields, their times left out: :func:`_spoken`): a story prefers what the operator said went
        wrong. Only in a run that tells a story (notes are never a search's)."""
        n = len(self.popens)
        if self._dir is None or not n:
            return
        try:
            with open(self._dir / f"output-{n}.log", "rb") as f:
                f.seek(self._output_read.get(n, 0))
                chunk = f.read()
        except OSError:
            return
        end = chunk.rfind(b"\n") + 1  # whole lines only: the rest is read with its end
        self._output_read[n] = self._output_read.get(n, 0) + end
        for raw in chunk[:end].decode(errors="replace").splitlines():
            line = raw.rstrip()
            if line:
                level, said = _spoken(line)
                said = _UUID.sub("<uuid>", said)
                self.world.note(f"{self.name}: {said[:300]}", kind="log", process=self.name, level=level,
                                output=True)

    # ------------------------------------------------------------------ the Outside protocol
    def _activity(self, delta: int) -> None:
        self._ended_settled = False
        self._inflight = max(0, self._inflight + delta)
        self._last = real_monotonic()
        self.stirred = True
        self.world._poke_outside()

    def quiet_for(self) -> float | None:
        """Real seconds since the process last sent or was sent anything, or was seen computing (a thread running
        or runnable, its CPU time grown: ``harness.operators._busy``); None while a request is half read."""
        return self._quiet_for(look=True)

    def _quiet_for(self, *, look: bool) -> float | None:
        """:meth:`quiet_for`, the process looked at (its CPU, its threads' waits) only when ``look``."""
        if self._inflight:
            return None
        now = real_monotonic()
        if look and self._load is not None and not self._gone():
            if self._load.busy():
                self._last = now
            elif self._settled(now):
                self._ended_settled = True
                return max(now - self._last, self._quiet)
        return now - self._last

    def _settled(self, now: float) -> bool:
        """Whether the process, idle now, waits for the world with no timer of its own that fires before ``quiet``
        after its last activity (its threads' blocking calls and their deadlines: ``harness.operators._waits``),
        when the rule of silence would end the wait: then the wait ends without
        sitting out the rest of ``quiet``. Only after its first request (a process starting up may wait on
        anything) and :data:`SETTLE_MARGIN` after its last traffic (the loopback's delivery of what it was sent)."""
        assert self._load is not None
        if not (self.settle and self._requests_of_incarnation > 0):
            return False
        # (looked at before the margin too: the next look compares)
        settled = self._load.settled(self._last + self._quiet, (self._port,) if self._port else ())
        return settled and now - self._last >= SETTLE_MARGIN

    def quiet(self) -> float:
        """How long it must stay silent to count as waiting for the world: ``quiet``, or before its first request
        ``startup`` (a process's start-up is no quiescence)."""
        return self._quiet if self._requests_of_incarnation or self._gone() else self._startup

    def bound(self) -> float:
        """The longest the scheduler waits for it at one choice: ``bound``, or ``startup`` before its first request."""
        return self._bound if self._requests_of_incarnation or self._gone() else max(self._bound, self._startup)

    def holds(self) -> bool:
        """An operator never holds the world: the run ends when its scenario does (``harness.sim._outside``)."""
        return False

    def _gone(self) -> bool:
        return self.popen is None or self.popen.poll() is not None

    def _exited(self) -> int | None:
        """The code of the running process if it has just exited on its own (not killed by the harness), kept in
        :attr:`exit_code`; None while it runs, or once said."""
        popen = self.popen
        if popen is None or self.exit_code is not None:
            return None
        code = popen.poll()
        if code is None or popen.pid in self._killed:
            return None
        self.exit_code = code
        return code

    def check(self) -> None:
        """The process exited on its own while the run goes on: name it (see the module for the verdicts)."""
        code = self._exited()
        if code is None:
            return
        popen = self.popen
        assert popen is not None
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
            world._fail("crashed", f"exit {code} of {self.name}",
                        f"the operator crashed: {said} while the run went on{tail}", None)

    def _never_reached(self) -> None:
        """The run ended and no incarnation of the process sent a request: it never reached the API (it could not
        connect, it waits on something else, it exited first), so the run says nothing of the operator: a model
        error naming it and what it printed last, never clean and never found."""
        if self.requests or not self.popens:
            return
        code = self.popens[-1].poll()
        how = (f"it exited with code {code} before its first request" if code is not None and self.popens[-1].pid
               not in self._killed else f"it ran {len(self.popens)} time(s) and sent nothing")
        tail = self._output_tail(len(self.popens)) or "; it printed nothing"
        self.world._not_a_result(
            f"{self.name} never reached the API",
            f"{self.name} ({' '.join(self.argv)}) made no request to the apiserver in this run: {how}, so the run says "
            "nothing of the operator. Check that it reads the kubeconfig KUBECONFIG names and connects to its server "
            f"(run it by hand against `python -m harness serve`){tail}")

    def _output_tail(self, n: int, lines: int = 12) -> str:
        if self._dir is None:
            return ""
        try:
            text = (self._dir / f"output-{n}.log").read_text(errors="replace").rstrip().splitlines()[-lines:]
        except OSError:
            return ""
        return "; its last output:\n" + "\n".join(text) if text else ""

    # ------------------------------------------------------------------ ending
    def _kill(self, family: ProcessFamily) -> None:
        """A crash fault: SIGKILL, as a node's OOM killer or a kubelet's hard stop does (its memory is lost), to the
        process and every process it started (a container's processes die with it)."""
        if family.popen is not None:
            self._killed.add(family.popen.pid)
        family.kill()
        if self.world.noting:
            self.world.note(f"{self.name}: its process killed", kind="crash", process=self.name)

    def _end(self) -> None:
        """The run ended: every process still running is terminated with all it started (SIGTERM, then SIGKILL), the
        files removed."""
        try:
            if self.world._violation is None and not self.world._interrupted:
                self.check()
        finally:
            try:
                if not self.world._interrupted:
                    self._start_ahead(at_end=True)  # (before this one's stop, which its start then overlaps)
                for family in self.families:
                    if family.popen is not None and family.popen.returncode is None:
                        self._killed.add(family.popen.pid)
                    family.end_soon()  # (in a search, the next run starts while this one's process shuts down)
            finally:
                self.popen = None
                if self._dir is not None:
                    self.logs = {i + 1: self._read(i + 1) for i in range(len(self.popens))}
                    remove_folder(self._dir)
                if self.ahead and self.requests:
                    _ahead.ran(self._ahead_key(), real_monotonic() - self._began)

    def _read(self, n: int) -> str:
        assert self._dir is not None
        try:
            return (self._dir / f"output-{n}.log").read_text(errors="replace")
        except OSError:
            return ""
