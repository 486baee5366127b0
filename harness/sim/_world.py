"""One run of a scenario: the :class:`World`, its actors and oracles, and the deterministic scheduler.

A world keeps one of two clocks. Under virtual time (below) the harness decides
every switch; under the real clock (``_realtime.py``) Trio does, and the world's
yield points, timers and end go through that module's driver. Everything a model
calls (actors, primitives, oracles, views, notes) is this one class either way.

The class is a facade: this module builds a run (``World.__init__``), keeps its
properties and its task tree (``_main``, the controller's loop) and hands back
its result (``outcome``); each concern lives in a module of its own, whose class
``World`` inherits:

* ``_dispatch``: who runs next (spawn, yield points, hand-off, dispatch, data
  choices and fault points); the actor table itself is ``_actors``;
* ``_time``: when time moves (whole nanoseconds, Trio's view of virtual time,
  timers, sleeps, the controller's advance);
* ``_footprints``: what each step read and wrote (footprints, notes, memory
  sharing);
* ``_oracles``: whether the run is over (invariants, eventually, bounds,
  at_end, the verdict);
* ``_state``: the run's state as those modules see it (declared once).

Around it: ``_driver`` (``run_once``, ``run_batch``, ``run_trio``), ``_choice``
(what a strategy sees), ``_outcome`` (limits, violations, results) and
``_primitives`` (``Event``, ``Queue``, ``Lock``).

How a run is driven under virtual time
--------------------------------------
Every actor is a Trio task spawned by the harness. An actor runs until it reaches
a *yield point* (``world.step``, ``world.sleep``, a wait on a harness ``Event``,
``Queue`` or ``Lock``, or any kube call built on those). There it registers the
action it is about to take and calls :meth:`World._dispatch`, which checks the
oracles, computes the *enabled set*, asks the chooser for an index into it and
hands control **directly** to the chosen actor (``trio.lowlevel.reschedule``).
If the chosen actor is the one that yielded, it simply continues: no Trio switch
at all. Rejected alternative: a controller task that every actor bounces
through costs two Trio switches per step instead of at most one.

The controller task only moves virtual time (when nothing is enabled) and ends
the run. When no Trio deadline lies at or before the target, it sets the clock
(most jumps: the Trio round trip was over a quarter of some runs). Otherwise time
moves by ``trio.sleep_until`` under :class:`VirtualClock`, which
jumps straight to the earliest Trio deadline *only while the controller is
advancing time*; that way ``trio.move_on_after``/``fail_after`` and a raw
``trio.sleep``/``anyio.sleep`` inside an actor expire in virtual time, at the
instant the world moves to when nothing else is enabled (an actor's own Trio
tasks and wake-ups are the world's: ``_tasks``). A task that waits on what only
the real clock ends (real I/O, a worker thread) is a misuse; if anything else
leaves Trio idle while the controller is not advancing, a
``wait_all_tasks_blocked`` watcher turns it into the "blocked outside the
harness" verdict. (``MockClock(autojump_threshold=0)`` was rejected: it
busy-spins when everything is blocked without a deadline.)

Canonical order: the enabled set is sorted oldest-waiting first, ties by
registration order; a choice is an absolute index into it, so choice 0 is the
canonical action and any other choice is a *deviation*. A decision with one
enabled action draws nothing.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio
import trio.lowlevel as tl
import trio.testing

from ._actors import MAIN_ACTOR, _Actor, _call_with_params, waiting_at
from ._asyncio import UNDER_WORLD
from ._choice import Chooser, _Canonical
from ._clocks import real_monotonic
from ._dispatch import _Dispatch
from ._footprints import _Footprints
from ._oracles import _Eventually, _Oracles
from ._outcome import Limits, RunOutcome, Violation
from ._outside import Outside, _Waker, wait_quiescent
from ._primitives import Event, Lock, Queue
from ._primitives import Queue as _Queue  # in the class body of World, "Queue" is its method
from ._tasks import SpawnHook, TaskAdopter, release_held
from ._time import NEVER, TimerHandle, _Time, to_ns
from ._trace import Access, Note, Record, Trace
from ._watchdog import NoYield, Watch, arm, disarm

if TYPE_CHECKING:
    from ._realtime import RealClock, RealTime


#: real seconds between two looks at a program that holds the world while the world has nothing to do
_HELD_LOOK = 0.05


class OutsideProbed(Exception):
    """Raised where a probe's run (:func:`harness.sim._driver.waits_for_outside`) meets its first program outside."""


class World(_Dispatch, _Time, _Footprints, _Oracles):
    """One run of a scenario: actors, time, oracles and the trace.

    Scenarios receive the world as their first argument. Everything an actor
    waits on goes through the world, and the world runs under one of two clocks:

    * **virtual time** (the default, ``clock=None``): the deterministic scheduler
      decides every switch and asks ``chooser`` at every branch, time moves only
      when the scheduler moves it, and the same choices give the same run;
    * **the real clock** (``clock=RealClock(...)``): Trio's own scheduler decides
      who runs, sleeps and timers are real sleeps scaled by ``time_scale``, no
      fault is injected: what a plain test of the same model sees (``python -m
      harness live``).

    The API is the same under both (the same actors, primitives, oracles,
    views and notes); only who decides and what a second is differ.
    """

    #: move time by setting the clock when no Trio deadline intervenes (False: always through
    #: ``trio.sleep_until``, the older and slower path; the bench compares the two, tests pin that
    #: both give the same traces)
    _direct_time = True
    #: adopt the actors' own Trio tasks and hold their Trio wake-ups (``_tasks``); False only for the bench's ratio
    #: of what the instrument costs a model that starts no task of its own
    _adopt_tasks = True

    def __init__(
        self,
        chooser: Chooser | None = None,
        *,
        limits: Limits = Limits(),
        params: dict[str, Any] | None = None,
        observer: Callable[[World, Record | None], None] | None = None,
        clock: RealClock | None = None,
    ) -> None:
        self.params: dict[str, Any] = dict(params or {})
        self.limits = limits
        self._horizon = math.inf
        self._horizon_ns = NEVER
        self._max_ns = to_ns(limits.max_time)
        if chooser is None:
            chooser = _Canonical()
        self._chooser = chooser
        #: called before each dispatch with the record of the step that just completed
        #: (None before the first); reports use it to snapshot model state per step
        self._observer = observer
        self._wants_idents = bool(getattr(chooser, "wants_identities", False))
        self._occurrences: dict[tuple[str, str, str | None], int] = {}
        self._choices: list[int] = []
        self._fault_points: dict[str, int] = {}
        self._faults_injected: dict[str, int] = {}
        #: fault kinds this run may inject; None = each component's own default (a real-clock run: none)
        self.fault_kinds: frozenset[str] | None = None if clock is None else frozenset()
        self._wait_target = NEVER
        self._current_timer: TimerHandle | None = None
        #: the widest window any action of this run had (verdicts state the explored space)
        self.max_window = 0.0
        #: the clock: whole nanoseconds since the run started (``now`` shows it in seconds)
        self._now_ns = 0
        self._seq = 0
        self._actors: list[_Actor] = []
        self._by_name: dict[str, _Actor] = {}
        self._timers: list[TimerHandle] = []  # heap of future timers
        self._due: list[TimerHandle] = []  # timers whose time has come, in (when, seq) order
        # raw tuples in Record field order, deviation words unformatted (see _trace._record); a Trace
        # builds Records only when someone reads them (hot path: random and PCT read only counts)
        self._records: list[tuple[Any, ...]] = []
        self._step = 0
        self._instant = (0, 0)  # (virtual time, the first step taken at it): livelock detection
        self._violation: Violation | None = None
        self._interrupted = False
        self._reraise: BaseException | None = None
        #: the watchdog's watch over this run (None: off, or a real-clock run)
        self._watch: Watch | None = None
        self._current: _Actor | None = None
        self._controller: tl.Task | None = None
        self._controller_parked = False
        self._advancing = False
        self._advance_scope: trio.CancelScope | None = None
        self._stopping = False
        self._ended = False
        self._nursery: trio.Nursery | None = None
        self._invariants: list[tuple[str, Callable[[], object]]] = []
        self._eventually: list[_Eventually] = []
        self._bounds: list[tuple[str, Callable[[], float], float]] = []
        self._at_end: list[tuple[str, Callable[[], object]]] = []
        self.peaks: dict[str, float] = {}
        #: named views of the model's own memory (``expose``), for reports and violations
        self.views: dict[str, Callable[[], object]] = {}
        #: free-form per-run state for models (e.g. counters their oracles read)
        self.state: dict[str, Any] = {}
        #: actor-name prefix -> process, from share_memory()
        self._processes: dict[str, str] = {}
        #: processes that record every access to their memory (share_memory(..., recorded=True))
        self._recorded: set[str] = set()
        # The current step's footprint: what it read and wrote (Access tuples), kept only when someone asks: a
        # chooser that reduces (the exhaustive referee) or a run that tells its story. None else, and touch()
        # is one test. During an oracle check it points at the oracle's reads (or is None: a referee's run).
        self._fp_chooser = bool(getattr(chooser, "wants_footprints", False))
        self._fp: list[Access] | None = [] if self._fp_chooser else None
        #: the run or timer step the accesses being made belong to (a fault inside it has a step of its own)
        self._fp_step = 0
        # notes (what happened inside steps) and each step's footprint, for a run that tells its
        # story (run_once(notes=True)); None in a search's runs, where note() and touch() are one test
        self._notes: list[Note] | None = None
        self._footprints: dict[int, list[Access]] | None = None
        self._continues: dict[int, int] | None = None
        self._last_step_of: dict[str, int] = {}
        self._oracle_reads: list[Access] | None = None
        self._last_oracle_reads: tuple[Access, ...] = ()
        self._eventually_reads: dict[str, tuple[Access, ...]] = {}
        # loggers whose records are this run's notes (capture_logging): each with the handlers, propagation and
        # level it had before, put back when the run ends; the thread whose records may be notes
        self._log_handler: logging.Handler | None = None
        self._log_saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []
        self._log_thread = threading.get_ident()
        #: the real clock's driver, or None: the deterministic scheduler with virtual time drives the run
        self._real: RealTime | None = None
        #: the instrument that makes the actors' own Trio tasks and wake-ups the world's (None: the real clock)
        self._adopter: TaskAdopter | None = None
        self._on_end: list[Callable[[], object]] = []
        #: programs outside the world (an operator's OS process) the scheduler waits for between choices
        self._outsides: list[Outside] = []
        self._outside_waiting = False
        #: a replay's wait for a recorded request of a program outside: its deadline (real clock; 0: none; -1:
        #: one passed, the run awaits no more), and whether the controller is to wait now (``_awaiting``)
        self._await_deadline = 0.0
        self._awaiting_outside = False
        self._outside_looks = 0  # the watchdog's progress while the scheduler waits outside
        self._outside_waker = _Waker()  # an outside's activity pokes it: the wait looks again
        self._outside_lot = tl.ParkingLot()  # the block watcher parks here while the scheduler waits outside
        #: real seconds the scheduler spent waiting for programs outside (``ExternalOperator``)
        self._outside_seconds = 0.0
        #: a probe's run (:func:`harness.sim._driver.waits_for_outside`): stop where a program outside first joins
        self._probe_outside = False
        #: the kind of the first program outside the probe met (``"ExternalOperator"``), None: none
        self._probed_outside: str | None = None
        #: called when a primitive's state changes (an Event set, a Queue put, a Lock released): the real
        #: clock's waiters re-check their guards; the deterministic scheduler re-checks them at every step
        self._wake: Callable[[], None] | None = None
        if clock is not None:
            from ._realtime import RealTime

            self._real = RealTime(self, clock)
            self._wake = self._real.wake

    @property
    def clock(self) -> RealClock | None:
        """The real clock this run keeps (:class:`RealClock`), or None: virtual time under the harness's scheduler."""
        return self._real.clock if self._real is not None else None

    @property
    def horizon(self) -> float:
        """Virtual seconds at which a periodic scenario ends normally (its ``at_end`` checks run).

        A scenario whose controllers resync or poll for ever never settles; set
        ``world.horizon = 600`` in it so a run ends at t=600 instead of as a
        runaway. With the real clock it is ``horizon * time_scale`` real seconds.
        """
        return self._horizon

    @horizon.setter
    def horizon(self, value: float) -> None:
        self._horizon = value
        self._horizon_ns = to_ns(value)
        if self._real is not None:
            self._real.horizon_moved()

    # ------------------------------------------------------------ primitives
    def Event(self) -> Event:  # noqa: N802 - reads like the class it makes
        return Event(self)

    def Queue(self) -> _Queue[Any]:  # noqa: N802 - the alias: in the class body "Queue" is this method
        return Queue(self)

    def Lock(self) -> Lock:  # noqa: N802
        return Lock(self)

    # ---------------------------------------------------------------- driver
    async def _main(self, scenario: Callable[..., Awaitable[object]]) -> None:
        if self._real is not None:
            try:
                await self._real.main(scenario)
            finally:
                self._release_logging()
                self._run_on_end()
            return
        UNDER_WORLD.set(self)  # (asyncio.run from an actor is refused: _asyncio.py)
        self._controller = tl.current_task()
        self._watch = arm(self._progress, self._running)
        adopter = self._adopter = TaskAdopter(self) if self._adopt_tasks else None
        spawns = SpawnHook(adopter) if adopter is not None else None
        if spawns is not None:
            tl.add_instrument(spawns)
        try:
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._watch_outside_blocks)
                    self.spawn(MAIN_ACTOR, _call_with_params, scenario, self)
                    try:
                        await self._control()
                    finally:
                        self._stopping = True
                        release_held(adopter)
                        nursery.cancel_scope.cancel()
            except KeyboardInterrupt:
                self._interrupted = True
                self._fail("interrupted", "KeyboardInterrupt", "KeyboardInterrupt while the run was in progress", None)
                raise
        except* NoYield:  # landed outside an actor (an oracle the scheduler checked): charged to the running one
            self._no_yield(self._running(), "an oracle or timer callback", None)
        finally:
            disarm(self._watch)
            if adopter is not None and spawns is not None:
                adopter.remove()
                with contextlib.suppress(KeyError, RuntimeError):  # (as TaskAdopter.remove)
                    tl.remove_instrument(spawns)
            self._release_logging()  # the loggers it captured, as it found them, however the run ended
            self._run_on_end()
        if adopter is not None and adopter.failed is not None and self._reraise is None:
            self._reraise = adopter.failed  # the harness's own error, never a verdict about the model

    def on_end(self, fn: Callable[[], object]) -> None:
        """Call ``fn()`` when the run ends, however it ends (a verdict, a stop, an error), after every actor stopped.

        For what a run borrows from the process and must give back: an
        environment variable an operator reads, a patched setting. Called in
        the reverse order of registration, as ``contextlib.ExitStack`` does.
        """
        self._on_end.append(fn)

    def _run_on_end(self) -> None:
        while self._on_end:
            self._on_end.pop()()

    def _progress(self) -> int:
        """The watchdog's measure of progress: the step counter (and the looks of a wait for a program outside)."""
        return self._step + self._outside_looks

    def _running(self) -> str | None:
        return self._current.name if self._current is not None else None

    def _no_yield(self, name: str | None, at: str, actor: _Actor | None) -> None:
        """The watchdog stopped ``name`` at ``at``: a model error (the bound passed) or a stop (Ctrl-C)."""
        tripped = self._watch.tripped if self._watch is not None else None
        seconds = tripped.seconds if tripped is not None else 0.0
        who = name or "an actor"
        if tripped is not None and tripped.stop:
            self._interrupted = True
            self._fail("interrupted", "stopped without a yield point",
                       f"{who} was stopped at {at} when the stop was requested: it had run {seconds:.1f} s "
                       "without a yield point", actor)
            return
        self._fail("no-yield", f"{who} never yielded",
                   f"{who} ran {seconds:.0f} s without a yield point at {at}: a model must await the harness "
                   "(world.step, world.sleep, an API call, a queue's get); a CPU loop never yields. The bound is "
                   "hunt --yield-timeout (wall seconds)", actor)

    async def _control(self) -> None:
        chosen = self._dispatch()
        while True:
            if chosen is not None:
                self._resume(chosen)
                self._controller_parked = True
                await tl.wait_task_rescheduled(lambda _rc: tl.Abort.SUCCEEDED)
            if self._violation is not None or self._ended:
                return
            if self._awaiting_outside:  # a replay's recorded request is still on its way: wait for it, then choose
                self._awaiting_outside = False
                await self._wait_outside(_HELD_LOOK)
                if self._violation is not None:
                    return
                chosen = self._dispatch()
                continue
            if self._outsides and self._real is None:
                if not self._outside_stirred():
                    # nothing is enabled and virtual time is about to move: a program outside gets its quiet
                    # interval first (it may be slower to answer than the last wait allowed; once it is silent
                    # that long, this costs nothing)
                    for o in self._outsides:
                        o.stirred = True
                await self._wait_outside()
                if self._violation is not None:
                    return
                chosen = self._dispatch()
                if chosen is not None or self._awaiting_outside:
                    continue
                if self._nothing_scheduled() and any(o.holds() for o in self._outsides):
                    # a program the scenario waits for still runs (a test command), and the world has nothing
                    # of its own to do: it waits for the program in real time, never ending the run under it
                    await self._wait_outside(_HELD_LOOK)
                    if self._violation is not None:
                        return
                    chosen = self._dispatch()
                    continue
            if not await self._advance():
                return
            chosen = self._dispatch()

    def _add_outside(self, outside: Outside) -> None:
        """Wait for ``outside`` (a program beyond the world, see ``_outside``) to be quiescent between choices.

        In a probe's run it raises :class:`OutsideProbed` instead, before the program is started: the probe
        wanted to know that one would run, and the run ends there."""
        if self._probe_outside:
            self._probed_outside = type(outside).__name__
            raise OutsideProbed(f"{type(outside).__name__} would run a program outside the world: the probe stops here")
        self._outsides.append(outside)

    def _poke_outside(self) -> None:
        """An outside program did something (a request came in, a reply went out): a wait for it looks again."""
        self._outside_waker.poke()

    def _outside_tick(self) -> None:
        self._outside_looks += 1

    def _outside_stirred(self) -> bool:
        return self._real is None and any(o.stirred for o in self._outsides)

    async def _wait_outside(self, held: float = 0.0) -> None:
        """Wait for the stirred outsides to go quiet; ``held``: first sleep that long (real seconds, or until one
        stirs), the world having nothing to do while a program it waits for runs."""
        from .._interrupt import stop_requested

        # A stop (Ctrl-C, SIGTERM) ends the run in hand at the wait's next look: a wait for a process lasts up to
        # its bound (seconds; its start-up 20), and the user was promised an answer within seconds.
        self._outside_waiting = True
        try:
            if held:
                start = real_monotonic()
                await self._outside_waker.sleep(held)
                self._outside_seconds += real_monotonic() - start
                for o in self._outsides:
                    o.stirred = True
            self._outside_seconds += await wait_quiescent(
                self._outsides, lambda: self._violation is not None or stop_requested(), self._outside_tick,
                self._outside_waker)
        finally:
            self._outside_waiting = False
            self._outside_lot.unpark_all()
        if self._violation is None and stop_requested():
            self._interrupted = True
            self._fail("interrupted", "stopped while waiting for a process",
                       "the stop was requested while the scheduler waited for a process outside the world (an "
                       "operator process); the run stopped there", None)

    async def _watch_outside_blocks(self) -> None:
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if self._outside_waiting:  # the scheduler waits, on the real clock, for a program outside the world
                await self._outside_lot.park()
                continue
            if self._advancing or self._stopping:
                await trio.sleep(0)
                continue
            current, adopter = self._current, self._adopter
            if adopter is not None and not adopter.installed and current is not None and current.task is not None \
                    and not (current.done or current.waiting or current.task_parked or current.go):
                # the run's first block at Trio level (a raw sleep, an event): from now on the adopter holds
                # every Trio wake-up, and the blocked actor hands the turn on as if it had yielded
                adopter.install()
                self._blocked_in_trio(current)
                continue
            who = self._current.name if self._current is not None else MAIN_ACTOR
            task = self._current.task if self._current is not None else None
            where = waiting_at(task)
            self._fail(
                "blocked-outside",
                "blocked outside the harness",
                f"actor '{who}' is blocked on something the harness does not control (real I/O, a thread, a "
                f"wait the world cannot see){f' at {where}' if where else ''} at t={self.now:g}. Talk to the "
                "apiserver through a client the world serves, and wait on trio/anyio primitives or the world's "
                "(world.sleep, world.Event(), world.Queue()) so the harness can schedule it.",
                self._current,
            )
            self._wake_controller()
            return

    # ------------------------------------------------------------- results
    def outcome(self) -> RunOutcome:
        self._flush_footprint(last=True)
        trace = Trace._lazy(self._records)
        if self._notes is not None:
            trace.notes = tuple(self._notes)
            trace.noted = True
            assert self._footprints is not None and self._continues is not None
            trace.footprints = {s: tuple(a) for s, a in self._footprints.items()}
            trace.oracle_reads = tuple(dict.fromkeys(self._last_oracle_reads))
            trace.continues = dict(self._continues)
        return RunOutcome(
            trace,
            self._violation,
            self.now,
            dict(self.peaks),
            self._interrupted,
            self._choices,
            dict(self._fault_points),
            self.max_window,
            self._outside_seconds,
            dict(self._faults_injected),
        )
