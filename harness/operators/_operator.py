"""An operator as written: its own ``main``, run unmodified as a process of the world (:class:`Operator`).

A production operator is an async entry point: it builds its client from the
environment (lightkube's ``AsyncClient()``), opens its own task group (a
list-and-watch loop per resource, a worker), waits on ``anyio.Event`` and backs
off with ``anyio.sleep``. ``Operator(api, "app-operator", main).start()`` runs
that ``main`` as it ships:

* its client reaches this apiserver (``_http/_environment.py``): ``KUBECONFIG``
  names the harness's kubeconfig while the run lasts, and every request of the
  operator's tasks goes through a :class:`Transport` of its own, so each request
  and each watch delivery is the same choice it is for ``api.transport()``;
* every task it starts is an actor of the world and every Trio/anyio wait a
  yield point on the virtual clock (``harness.sim._tasks``); every clock it
  reads (``time.time``, ``time.monotonic``, ``datetime.now``...) is the world's
  (``harness.sim._clocks``);
* it is a process (:class:`ControllerProcess`): a ``crash`` fault point before
  each of its requests; a crash cancels every task of the operator (its task
  groups included), closes its watch connections and drops its memory (its
  clients, caches and tasks: what ``main`` built), and runs ``main`` again after
  the restart window, a new incarnation with a fresh client;
* its standard ``logging`` records are notes of the step that logged them (on by
  default; kept in the trace and the report, never printed).

Given as a function, the operator's module stays imported across runs and
restarts, as it would not in a new process: its globals survive a restart, and
configuration it reads at import was read before the run gave it ``env``. Named
by its file or module instead (``Operator(api, name, "operator.py", ...)``, or
``"operator.py:run"``), it is imported afresh for each incarnation, inside the
run and under ``env`` (``_modules.py``), as a new process imports it.
"""

from __future__ import annotations

import inspect
import logging
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from harness.sim import WorldLoop, ending, misuse, model_line, read_world_clocks

from .._errors import HarnessError, UsageError
from ..kube import APIServer, ControllerProcess, ProcessCrashed
from ..kube._http._aio import ClusterNetwork
from ..kube._http._environment import ROUTE, install, kubeconfig_path, point_clients_at, skip_system_certificates
from ..kube._http._httpx import Transport

#: loggers of the HTTP stack that log every request at INFO: kept to warnings, so notes are the operator's own
_TRANSPORT_LOGGERS = ("httpx", "httpx2", "httpcore", "hpack", "h11", "h2", "aiohttp", "asyncio")


def _is_async(main: object) -> bool:
    """Whether calling ``main`` gives a coroutine: an ``async def`` (a partial or bound method of one too), or an
    object whose ``__call__`` is one."""
    call = type(main).__call__ if callable(main) and not inspect.isroutine(main) else None
    return inspect.iscoroutinefunction(main) or (call is not None and inspect.iscoroutinefunction(call))


class Operator:
    """An operator's own async ``main``, run unmodified as a process of the world (see the module)."""

    def __init__(
        self,
        api: APIServer,
        name: str,
        main: Callable[..., Awaitable[object]] | str | os.PathLike[str],
        *args: Any,
        entry: str = "main",
        env: Mapping[str, str] | None = None,
        crash_faults: bool = False,
        max_crashes: int = 1,
        restart_after: float = 0.0,
        restart_window: float = 2.0,
        log: bool = True,
        log_level: int = logging.INFO,
        loggers: tuple[str, ...] = (),
        max_lag: float | None = None,
        latency: float = 0.0,
        watch_drops: bool = False,
        watch_ends: bool = False,
        compactions: bool = False,
        asyncio: bool = False,
    ) -> None:
        """``main(*args)`` is the operator's entry point; ``env`` adds environment variables for its run.

        ``main`` may instead name the operator's code: a ``.py`` file's path or a module's importable name, whose
        ``entry`` (``"main"``; or ``"operator.py:run"``) is the entry point. Then the module is imported afresh for
        each incarnation, inside the run and under ``env`` (``harness.operators._modules``): configuration read at import
        sees the operator's environment, and a restart forgets the module's globals, as a new process does.

        ``crash_faults`` and the restart settings are :class:`ControllerProcess`'s
        (``--faults crash`` enables crash points whatever the flag says);
        ``max_lag``, ``latency`` and the watch fault flags are its watch
        connections' (as ``api.transport()``'s). ``log``: its ``logging`` records
        at ``log_level`` and above, of ``loggers`` (default: every logger),
        become notes. ``asyncio``: ``main`` is asyncio code (``asyncio.run(main())``
        as it ships), run on a loop the world drives (``harness.sim._asyncio``),
        its aiohttp connections reaching this apiserver in process.
        """
        self._source: str | None = None
        self.entry = entry
        if isinstance(main, str | os.PathLike):
            source = os.fspath(main)
            path, colon, named = source.rpartition(":")
            if colon and named.isidentifier() and path and not (len(path) == 1 and path.isalpha()):  # (C:\ on Windows)
                source, entry = path, named
            self._source, self.entry = source, entry
        elif not _is_async(main):
            what = getattr(main, "__qualname__", None) or type(main).__name__
            raise UsageError(f"Operator {name!r}: main must be the operator's async entry point (async def main(): "
                             f"...), and {what} is not async. A synchronous operator runs as its own process: "
                             "ExternalOperator(api, name, [sys.executable, 'operator.py'])")
        self.api = api
        self.world = api._world
        self.name = name
        self.main: Callable[..., Awaitable[object]] = self._load_main if isinstance(main, str | os.PathLike) else main
        self.args = args
        self.env = dict(env or {})
        self.log = log
        self.asyncio = asyncio
        if asyncio:
            WorldLoop.install_lockstep()  # before the scenario or the operator's module makes a lock its threads share
        self.log_level = log_level
        self.loggers = loggers
        self._transport_options: dict[str, Any] = {
            "max_lag": max_lag, "latency": latency, "watch_drops": watch_drops, "watch_ends": watch_ends,
            "compactions": compactions,
        }
        #: the transport of the running incarnation (a fresh one per incarnation: a new process, new connections)
        self.transport: Transport | None = None
        self.process = ControllerProcess(self.world, name, self._build, crash_faults=crash_faults,
                                         max_crashes=max_crashes, restart_after=restart_after,
                                         restart_window=restart_window)
        #: how ``main`` ended last: None while it runs (or never ran), "returned", "crashed"
        self.ended: str | None = None

    @property
    def crashes(self) -> int:
        return self.process.crashes

    @property
    def restarts(self) -> int:
        return self.process.restarts

    @property
    def incarnation(self) -> int:
        return self.process.incarnation

    def start(self) -> Operator:
        """Set the operator's environment for the run and start ``main`` (an actor named after the operator)."""
        install()
        state = random.getstate()
        self.world.on_end(lambda: random.setstate(state))
        self._set_env({"KUBECONFIG": kubeconfig_path(), **self.env})
        self.world.on_end(point_clients_at(kubeconfig_path()))
        self.world.on_end(skip_system_certificates())
        if self.log:
            self.world.capture_logging(*self.loggers, level=self.log_level)
            self.world.capture_logging(*_TRANSPORT_LOGGERS, level=max(self.log_level, logging.WARNING))
        self.world.on_end(self._never_reached)
        self.process.start()
        return self

    def _load_main(self, *args: Any) -> Awaitable[object]:
        """This incarnation's entry point, from its module imported afresh (``main`` named a file or module)."""
        from ._modules import load_fresh

        assert self._source is not None
        module = load_fresh(self._source, f"the operator {self.name!r}")
        fn = getattr(module, self.entry, None)
        if fn is None or not _is_async(fn):
            from .._errors import OperatorNotLoaded

            state = "is not async" if fn is not None else "is not defined there"
            raise OperatorNotLoaded(f"the operator {self.name!r}: {self.entry} in {self._source} {state}; give "
                                    "Operator the name of the operator's async entry point (entry='main', or "
                                    "'operator.py:main')")
        result: Awaitable[object] = fn(*args)
        return result

    def _is_crash(self, err: BaseException) -> bool:
        """Whether ``err`` ending ``main`` is the operator's own crash: an exception of its code or its libraries, not
        the harness misused (a model error at its line), an assertion (an oracle), a cancellation or an interrupt."""
        return (isinstance(err, Exception) and not isinstance(err, AssertionError | HarnessError)
                and misuse(err, self.name) is None)

    def _crashed_by(self, err: Exception) -> None:
        """``main`` ended on an unhandled exception: the operator crashed, as its process would (on a cluster its pod
        restarts), a finding about the operator (never "fix the model"), named at its innermost frame of the
        operator's own code; the harness's frames and the libraries' are left out."""
        at = model_line(err) or "a frame of its libraries"
        text = str(err).strip().splitlines()[0][:300] if str(err).strip() else ""
        self.world._fail("crashed", f"{type(err).__name__} in {self.name}",
                         f"the operator crashed: {type(err).__name__} at {at}{f': {text}' if text else ''}; "
                         f"{self.name}'s main ended on an exception it did not handle, as its process would end (on "
                         "a cluster: a restart, then CrashLoopBackOff)", self.world._current)

    def _never_reached(self) -> None:
        """The run ended and the operator sent the apiserver nothing: whatever the run says, it says nothing of the
        operator (its client reached another server or none, it waited on something the world never gives, it
        returned at once), so the run is a model error naming it, never clean and never found."""
        from ..kube._http._handler import _handler_of

        if _handler_of(self.api).requests[self.name]:
            return
        how = {"returned": "its main returned", "crashed": "it crashed"}.get(self.ended or "", "its main never returned")
        notes = self.world._notes or []  # (recorded in a story's run only)
        last = [n.text for n in notes if n.kind == "log" and n.actor.split("/", 1)[0].split("#", 1)[0] == self.name]
        said = f"; the last it logged: {last[-1]!r}" if last else ""
        self.world._not_a_result(
            f"{self.name} never reached the API",
            f"{self.name} made no request to the apiserver in this run ({how}{said}), so the run says nothing of the "
            "operator. Check that it builds its client from KUBECONFIG (lightkube's AsyncClient(), "
            "config.load_kube_config()) or from api.transport(), and that it watches what the scenario creates")

    def _set_env(self, env: dict[str, str]) -> None:
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)

        def restore() -> None:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

        self.world.on_end(restore)

    def _build(self, process: ControllerProcess) -> Transport:
        transport = self.transport = Transport(self.api, self.name, **self._transport_options)
        process.on_crash(transport.close)
        actor = process.spawn(self.name, self._run, daemon=True)
        # One process: its tasks (``app-operator/...``, a restart's ``app-operator#2/...``) and its watch streams
        # (``app-operator/watch/<Kind>``) share memory, and talk to every other actor through the apiserver alone,
        # so the referee may commute their steps with another process's that touch no common object.
        self.world.share_memory(self.name, actor.split("/", 1)[0])
        return transport

    async def _run(self) -> None:
        transport = self.transport
        # the global ``random`` (kopf picks handlers and credentials with it) starts each incarnation alike
        random.seed(f"{self.name}#{self.process.incarnation}")
        ROUTE.set(transport)  # every task main starts inherits it: their requests are this operator's
        read_world_clocks(self.world)  # and every clock they read is the world's (``harness.sim._clocks``)
        self.ended = None
        crashed = False
        with trio.CancelScope() as scope:
            self.process.on_crash(scope.cancel)  # a crash ends every task of the operator where it waits
            try:
                if self.asyncio and transport is not None:
                    loop = WorldLoop(self.world, ClusterNetwork(transport))
                    await loop.run(self.main(*self.args))
                else:
                    await self.main(*self.args)
            except BaseException as exc:
                err = ending(exc)
                if isinstance(err, ProcessCrashed):
                    crashed = True
                elif not self._is_crash(err):
                    raise  # a cancellation, an interrupt, an assertion, the harness misused: not the operator's crash
                else:
                    assert isinstance(err, Exception)
                    self._crashed_by(err)
                    self.ended = "crashed"
                    return
        if crashed or scope.cancelled_caught:
            self.ended = "crashed"
            return
        self.ended = "returned"
        if self.world.noting:
            self.world.note(f"{self.name}: main returned", kind="log", process=self.name)
