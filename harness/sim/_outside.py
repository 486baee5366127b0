"""Programs outside the world: the scheduler waits for them to go quiet before it makes its next choice.

An operator that runs as its own OS process (``harness.operators.ExternalOperator``)
talks to the world over a socket, on its own schedule: its next request comes
when its own code gets there, in real time. The world cannot step it, but it
can **wait for it**. Such a program registers an :class:`Outside` with the
world; whenever a step sent it something (a response, a watch event) or it sent
the world something (a request), the outside is *stirred*, and before the next
choice the scheduler waits, on the real clock, until every stirred outside is
*quiescent*: nothing in flight and nothing new for ``quiet`` seconds, within a
bound. The requests it sent in the meantime are enabled actions like any
other, so the choice that follows sees them all, and one plan gives one order
of API events as far as the program's own scheduling allows. What counts as
new is the outside's to say (``quiet_for``): an OS process's also counts its
computing, so a process busy on its CPU between two requests is not taken
for one waiting for the world (``harness.operators._busy``).

The world's time stays virtual: the outside's waits are real, the world's
timers and windows are the search's. Layering: the runtime knows nothing of
processes or HTTP; an outside is any object with this protocol.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import trio
import trio.lowlevel as tl

from ._clocks import real_monotonic  # (it may run in an operator's task, whose time.monotonic is virtual)


class Outside(Protocol):
    """What the scheduler needs of a program outside the world."""

    #: something happened since the last wait (a request came in, a reply or watch event went out)
    stirred: bool

    #: how often the wait looks at it (real seconds; ``inf``: when its ``quiet`` may have passed)
    look_every: float

    def quiet_for(self) -> float | None:
        """Real seconds since its last activity, or None while something is in flight (a request half read)."""
        ...

    def quiet(self) -> float:
        """How long it must stay quiet (real seconds) to count as quiescent now."""
        ...

    def bound(self) -> float:
        """The longest the scheduler waits for it at one choice (real seconds): a program that never goes quiet."""
        ...

    def check(self) -> None:
        """Called while waiting: may fail the run (the program exited)."""
        ...

    def settled(self) -> None:
        """The wait is over: what it sent meanwhile may become enabled actions now, in an order of its own."""
        ...

    def holds(self) -> bool:
        """Whether the world must wait for it when the world has nothing left to do: a program whose end the
        scenario awaits (a test command) holds; an operator, which never ends by itself, does not (the run ends
        when its scenario does)."""
        ...


class _Waker:
    """What ends one look of the wait early: the timer thread, or activity of an outside (:meth:`poke`)."""

    def __init__(self) -> None:
        self.event: trio.Event | None = None

    def poke(self) -> None:
        if self.event is not None:
            self.event.set()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of real time whatever Trio's clock is (the world's is virtual), or until poked."""
        token = tl.current_trio_token()
        done = self.event = trio.Event()

        def wake() -> None:
            try:
                token.run_sync_soon(done.set)
            except trio.RunFinishedError:
                pass

        timer = threading.Timer(seconds, wake)
        timer.daemon = True
        timer.start()
        try:
            await done.wait()
        finally:
            timer.cancel()
            self.event = None


async def wait_quiescent(outsides: list[Outside], stopped: Callable[[], bool], tick: Callable[[], None],
                         waker: _Waker) -> float:
    """Wait until every stirred outside is quiescent (or its bound passed); the real seconds it took.

    ``stopped()`` ends the wait early (the run failed meanwhile); ``tick()`` is called at every look (the
    watchdog counts a wait for a process as progress, not as an actor that never yields); ``waker.poke()``,
    called on an outside's activity, makes it look again at once.
    """
    start = real_monotonic()
    stirred = [o for o in outsides if o.stirred]
    if not stirred:
        return 0.0
    while True:
        for o in stirred:
            o.check()
        tick()
        if stopped():
            break
        waits = []
        for o in stirred:
            q = o.quiet_for()
            need = o.quiet()
            if q is None or q < need:
                waits.append(min(need - (q or 0.0), o.look_every))
        left = max(o.bound() for o in stirred) - (real_monotonic() - start)
        if not waits or left <= 0:
            break
        await waker.sleep(max(0.002, min(min(waits), left, 0.5)))
    for o in stirred:
        o.stirred = False
        o.settled()
    return real_monotonic() - start
