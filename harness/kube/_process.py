"""Controller processes that can crash at a yield point and restart with empty memory.

The sim has no way to kill an actor from outside, so a crash is **cooperative**:
each :class:`ControllerProcess` runs in *incarnations*. Actors spawned through
:meth:`ControllerProcess.spawn` carry their incarnation in a context variable
(each Trio task has its own context, so this is per actor, not global). Every
API request calls :func:`checkpoint` right after its yield point and before its
effect; there the actor of a crashed incarnation raises :class:`ProcessCrashed`
and returns, and, when crash faults are enabled, a live one passes the fault point
``world.fault("crash", "<process> crashes before <request>")``: crash points
are placed by the strategy under a budget (uniform over the run's points),
and labelled so a finding reads "operator crashes before delete StatefulSet".

A crash shuts down the incarnation's work queues and stops its informers (the
components register themselves with ``process=``), so everything it held in
memory (queue contents, caches, expectations) is lost; a timer then builds a
fresh incarnation with the same ``build`` function, whose informers start with
a fresh LIST, as a restarted kube-controller-manager does. When it comes is the
search's choice: ``restart_after`` seconds after the crash at the earliest
(default 0: the kubelet restarts a crashed container at once the first time),
up to ``restart_window`` seconds later (a slower restart: image pull, leader
election, CrashLoopBackOff's 10 s), so a finding never depends on a restart
delay fixed by hand.

Identities (how a plan names what a process does): a crash point is
``"<process> crashes before <request>"`` in the actor that made the request;
its occurrence counts across incarnations. After a restart, actors spawned by
the new incarnation are named by the model (``process.spawn(name, ...)``): a
model that wants the two incarnations told apart names them with
``process.incarnation``; informers keep their name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from harness.sim import World

from ._errors import ProcessCrashed


class _Incarnation:
    __slots__ = ("crashed", "number", "process", "stoppers")

    def __init__(self, process: ControllerProcess, number: int) -> None:
        self.process = process
        self.number = number
        self.crashed = False
        self.stoppers: list[Callable[[], None]] = []


_CURRENT: ContextVar[_Incarnation | None] = ContextVar("harness_kube_incarnation", default=None)


def checkpoint(world: World, label: str) -> None:
    """Called by every API request after its yield point; may end a crashed actor."""
    inc = _CURRENT.get()
    if inc is None:
        return
    if inc.crashed:
        raise ProcessCrashed(f"{inc.process.name} crashed")
    proc = inc.process
    if proc.crashes < proc.max_crashes and world.fault(
        "crash", f"{proc.name} crashes before {label}", default=proc.crash_faults
    ):
        proc.crash()
        raise ProcessCrashed(f"{proc.name} crashed before {label}")


class ControllerProcess:
    """A controller binary: ``build(process)`` wires informers, queues and workers.

    ``build`` is a plain function, called at :meth:`start` and again at every
    restart; whatever it returns is :attr:`current`. Components it creates
    should be given ``process=process`` so a crash stops them, and its actors
    should be started with :meth:`spawn`.
    """

    def __init__(
        self,
        world: World,
        name: str,
        build: Callable[[ControllerProcess], Any],
        *,
        crash_faults: bool = False,
        max_crashes: int = 1,
        restart_after: float = 0.0,
        restart_window: float = 2.0,
    ) -> None:
        self.world = world
        self.name = name
        self.crash_faults = crash_faults
        self.max_crashes = max_crashes
        #: the earliest restart after a crash, in seconds
        self.restart_after = restart_after
        #: how much later than ``restart_after`` the search may place the restart
        self.restart_window = restart_window
        self.crashes = 0
        self.restarts = 0
        self.current: Any = None
        self._build = build
        self._inc: _Incarnation | None = None
        self._count = 0

    @property
    def incarnation(self) -> int:
        """1 for the first run, 2 after the first restart, ..."""
        return self._count

    @property
    def crashed(self) -> bool:
        return self._inc is None or self._inc.crashed

    def start(self) -> Any:
        """Build the first (or a fresh) incarnation and return what ``build`` returned."""
        self._count += 1
        self._inc = _Incarnation(self, self._count)
        self.current = self._build(self)
        return self.current

    def on_crash(self, stop: Callable[[], None]) -> None:
        """Register what a crash must stop for the incarnation being built or running."""
        if self._inc is not None:
            self._inc.stoppers.append(stop)

    def spawn(self, name: str, fn: Callable[..., Awaitable[object]], *args: Any, daemon: bool = False) -> str:
        """``world.spawn`` for an actor that belongs to the current incarnation."""
        inc = self._inc
        if inc is None:
            raise RuntimeError(f"{self.name}: spawn() before start()")

        async def run() -> None:
            _CURRENT.set(inc)
            try:
                await fn(*args)
            except ProcessCrashed:
                return

        return self.world.spawn(name, run, daemon=daemon)

    def check(self) -> None:
        """An explicit crash point for model code between requests (raises if crashed)."""
        checkpoint(self.world, "checkpoint")

    def crash(self) -> None:
        """Crash now: stop every component of this incarnation and schedule the restart."""
        inc = self._inc
        if inc is None or inc.crashed:
            return
        inc.crashed = True
        self.crashes += 1
        if self.world.noting:
            self.world.note(f"{self.name} crashes (incarnation {inc.number}): its memory is lost; it restarts "
                            f"{self.restart_after:g} to {self.restart_after + self.restart_window:g} s later",
                            kind="crash", process=self.name, incarnation=inc.number)
        for stop in inc.stoppers:
            stop()
        self.world.call_later(self.restart_after, self._restart, label=f"restart {self.name}", actor=self.name,
                              window=self.restart_window)

    def _restart(self) -> None:
        self.restarts += 1
        if self.world.noting:
            self.world.note(f"{self.name} restarts (incarnation {self._count + 1}) with empty memory",
                            kind="crash", process=self.name, incarnation=self._count + 1)
        self.start()
