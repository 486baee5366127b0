"""The uncontrolled runtime: a scenario as an ordinary Trio program, real scheduler, real clock.

Why it exists
-------------
It is the *peer baseline*: what a controller developer without this harness
does is run the test again and again (pytest-repeat, pytest-flakefinder) and
hope that Trio's scheduling and real timing hit the bad interleaving. It is
also how a user sees a scenario behave outside the harness. :class:`LiveWorld`
offers the public API of :class:`~harness.sim.World`, so the same scenario
function, the same kube models and the same oracles run unchanged, but nobody
decides anything:

* ``world.step()`` is ``await trio.sleep(0)``: a checkpoint; which runnable
  task goes next is Trio's own choice (its run-queue batch, reversed at random
  by Trio itself with probability 1/2; we cannot and do not seed that);
* ``world.sleep(s)`` and ``world.call_later(s, fn)`` are real Trio sleeps of
  ``s * time_scale`` seconds times ``1 ± jitter`` (a per-run
  ``random.Random(seed)``, never the global one), so a virtual second is
  ``time_scale`` real seconds, with the noise of a real clock;
* ``world.choose()`` is always 0: no injected faults (a plain test has none);
* ``Event``/``Queue``/``Lock`` are built on Trio's ``ParkingLot``;
* oracles are the same: invariants and bounds are checked at every yield point
  and after every timer, ``eventually`` deadlines and ``horizon`` are in scaled
  real time, ``at_end`` runs when the program settles (every task blocked, no
  timer or sleep pending) or reaches its horizon.

The result is the same :class:`~harness.sim.RunOutcome` as a controlled run:
the trace of the actions taken (every record has ``choice=0, enabled=1``: there
were no decisions, only what happened) and the violation, if any. A live run is
**not reproducible**: the seed fixes the jitter only. That is the point.

Rejected alternatives: running the scenario under the harness with a random
chooser and real sleeps (that is still the harness deciding every switch);
``trio.testing.MockClock`` (virtual time is exactly what a plain test lacks).
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import trio
import trio.lowlevel as tl
import trio.testing

from ._oracles import first_broken_invariant, first_exceeded_bound, holds, where
from ._trace import Record, Trace
from ._world import Limits, RunOutcome, Violation

T = TypeVar("T")

_RecordTuple = tuple[int, float, str, str, str | None, int | None, int, int, str, str | None]


class _LiveActor:
    __slots__ = ("daemon", "done", "idle", "name", "task", "waiting")

    def __init__(self, name: str, daemon: bool) -> None:
        self.name = name
        self.daemon = daemon
        self.task: tl.Task | None = None
        self.done = False
        self.waiting: str | None = None  # label of the harness wait it is blocked in
        self.idle = False


class LiveTimerHandle:
    """A pending ``call_later`` of a live run: a Trio task sleeping; ``cancel()`` stops it."""

    __slots__ = ("actor", "cancelled", "fired", "fn", "key", "label", "rv", "scope", "when")

    def __init__(
        self, when: float, fn: Callable[[], object], label: str, actor: str, key: str | None, rv: int | None = None
    ) -> None:
        self.when = when
        self.fn = fn
        self.label = label
        self.actor = actor
        self.key = key
        self.rv = rv
        self.cancelled = False
        self.fired = False
        self.scope = trio.CancelScope()

    def cancel(self) -> None:
        self.cancelled = True
        self.scope.cancel()


class LiveWorld:
    """One uncontrolled run: the :class:`~harness.sim.World` API over Trio's own scheduler and clock.

    ``time_scale`` real seconds make one virtual second; every sleep and timer
    is stretched by a factor drawn uniformly from ``[1 - jitter, 1 + jitter]``.
    ``timeout`` (real seconds) ends a run that neither settles nor reaches its
    horizon, as a runaway.
    """

    def __init__(
        self,
        *,
        params: dict[str, Any] | None = None,
        seed: int = 0,
        time_scale: float = 0.01,
        jitter: float = 0.2,
        timeout: float = 60.0,
        limits: Limits = Limits(),
    ) -> None:
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0 (real seconds per virtual second), got {time_scale!r}")
        if not 0 <= jitter < 1:
            raise ValueError(f"jitter must be in [0, 1), got {jitter!r}")
        self.params: dict[str, Any] = dict(params or {})
        self.limits = limits
        self.time_scale = time_scale
        self.jitter = jitter
        self.timeout = timeout
        self.seed = seed
        self._rng = random.Random(seed)
        self._horizon = math.inf
        self._t0 = 0.0
        self._records: list[_RecordTuple] = []
        self._step = 0
        self._violation: Violation | None = None
        self._interrupted = False
        self._stopping = False
        self._ended = False
        self._end_now = 0.0
        self._nursery: trio.Nursery | None = None
        self._actors: list[_LiveActor] = []
        self._by_task: dict[tl.Task, _LiveActor] = {}
        self._names: set[str] = set()
        self._timed = 0  # timers, sleeps and eventually deadlines still pending
        self._tick = tl.ParkingLot()  # unparked whenever a timed thing completes
        self._horizon_scope: trio.CancelScope | None = None
        self._invariants: list[tuple[str, Callable[[], object]]] = []
        self._eventually: list[list[Any]] = []
        self._bounds: list[tuple[str, Callable[[], float], float]] = []
        self._at_end: list[tuple[str, Callable[[], object]]] = []
        #: the model's views (:meth:`expose`), by name
        self.views: dict[str, Callable[[], object]] = {}
        self.peaks: dict[str, float] = {}
        #: free-form per-run state for models (e.g. counters their oracles read)
        self.state: dict[str, Any] = {}

    # ------------------------------------------------------------------ time
    @property
    def now(self) -> float:
        """Virtual seconds since the run started: real elapsed time divided by ``time_scale``."""
        if self._ended:
            return self._end_now
        try:
            return (trio.current_time() - self._t0) / self.time_scale
        except RuntimeError:  # outside trio.run (e.g. an oracle read after the run)
            return self._end_now

    def _real(self, seconds: float) -> float:
        """Real seconds for ``seconds`` of virtual time, with jitter."""
        if seconds <= 0:
            return 0.0
        factor = 1.0 + self._rng.uniform(-self.jitter, self.jitter) if self.jitter else 1.0
        return seconds * self.time_scale * factor

    @property
    def horizon(self) -> float:
        """Virtual seconds at which a periodic scenario ends normally (end oracles run)."""
        return self._horizon

    @horizon.setter
    def horizon(self, value: float) -> None:
        self._horizon = value
        if self._horizon_scope is not None:
            self._horizon_scope.deadline = self._stop_deadline()

    def _stop_deadline(self) -> float:
        hard = min(self.timeout, self.limits.max_time * self.time_scale)
        soft = self._horizon * self.time_scale
        return self._t0 + min(hard, soft)

    # ---------------------------------------------------------------- actors
    def spawn(self, name: str, fn: Callable[..., Awaitable[object]], *args: Any, daemon: bool = False) -> str:
        """Start ``fn(*args)`` as a plain Trio task; ``daemon`` as in :meth:`World.spawn`."""
        if self._nursery is None:
            raise RuntimeError("LiveWorld.spawn() is only available while the world runs")
        base, n = name, 1
        while name in self._names:
            n += 1
            name = f"{base}#{n}"
        self._names.add(name)
        actor = _LiveActor(name, daemon)
        self._actors.append(actor)
        self._nursery.start_soon(self._run_actor, actor, fn, args, name=name)
        return name

    async def _run_actor(self, actor: _LiveActor, fn: Callable[..., Awaitable[object]], args: tuple[Any, ...]) -> None:
        task = tl.current_task()
        actor.task = task
        self._by_task[task] = actor
        try:
            self._record(actor.name, f"start {actor.name}", None, None, "run")
            await fn(*args)
            if not self._stopping:
                self._check_oracles()  # what the actor did after its last yield point
        except trio.Cancelled:
            if not self._stopping:
                msg = f"actor '{actor.name}' was cancelled outside any cancel scope it opened"
                self._fail("actor-raised", actor.name, msg, actor.name)
            raise
        except AssertionError as exc:
            msg = f"assertion failed in actor '{actor.name}' at {where(exc)}: {exc}"
            self._fail("oracle", f"assertion in {actor.name}", msg, actor.name)
        except Exception as exc:
            self._fail(
                "actor-raised",
                f"{type(exc).__name__} in {actor.name}",
                f"actor '{actor.name}' raised {type(exc).__name__}: {exc} (at {where(exc)}). "
                "Fix the model, or catch the error where the upstream code does.",
                actor.name,
            )
        finally:
            actor.done = True
            actor.waiting = None
            self._by_task.pop(task, None)

    def _me(self) -> _LiveActor | None:
        try:
            return self._by_task.get(tl.current_task())
        except RuntimeError:
            return None

    # ----------------------------------------------------------- the trace
    def _record(self, actor: str, label: str, key: str | None, rv: int | None, kind: str) -> None:
        if self._stopping:
            return
        self._step += 1
        self._records.append((self._step, self.now, actor, label, key, rv, 0, 1, kind, None))
        if self._step > self.limits.max_steps:
            self._fail(
                "runaway",
                "step limit",
                f"the live run took more than {self.limits.max_steps:,} steps without settling (t={self.now:.3f}). "
                "If the scenario is periodic, set world.horizon; otherwise raise Limits(max_steps=...).",
                None,
            )
            return
        self._check_oracles()

    async def _wait_in(self, label: str, idle: bool, wait: Callable[[], Awaitable[None]]) -> None:
        me = self._me()
        if me is not None:
            me.waiting = label
            me.idle = idle
        try:
            await wait()
        finally:
            if me is not None:
                me.waiting = None
                me.idle = False

    # ------------------------------------------------------- yield points
    async def step(
        self, label: str, *, key: str | None = None, rv: int | None = None, window: float = 0.0, follows: bool = False
    ) -> None:
        """A checkpoint: Trio's scheduler decides who runs next (``window``/``follows`` mean nothing live)."""
        await trio.sleep(0)
        me = self._me()
        self._record(me.name if me else "main", label, key, rv, "run")

    async def sleep(self, seconds: float, label: str | None = None, *, window: float = 0.0) -> None:
        """A real sleep of ``seconds * time_scale`` (with jitter)."""
        real = self._real(seconds)
        self._timed += 1
        try:
            await self._wait_in(label or f"sleep {seconds:g}s", False, lambda: trio.sleep(real))
        finally:
            self._timed -= 1
            self._tick.unpark_all()
        me = self._me()
        self._record(me.name if me else "main", label or f"wake after sleep {seconds:g}s", None, None, "run")

    def call_later(
        self,
        delay: float,
        fn: Callable[[], object],
        *,
        label: str,
        actor: str = "timer",
        key: str | None = None,
        rv: int | None = None,
        window: float = 0.0,
    ) -> LiveTimerHandle:
        """Run ``fn()`` after ``delay`` virtual seconds, from a Trio task that really sleeps."""
        if self._nursery is None:
            raise RuntimeError("LiveWorld.call_later() is only available while the world runs")
        handle = LiveTimerHandle(self.now + max(0.0, delay), fn, label, actor, key, rv)
        self._timed += 1
        self._nursery.start_soon(self._run_timer, handle, self._real(delay))
        return handle

    async def _run_timer(self, handle: LiveTimerHandle, real: float) -> None:
        try:
            with handle.scope:
                await trio.sleep(real)
                if handle.cancelled or self._violation is not None:
                    return
                handle.fired = True
                handle.cancelled = True
                self._record(handle.actor, handle.label, handle.key, handle.rv, "timer")
                if not self._stopping:
                    self._fire(handle)
        finally:
            self._timed -= 1
            self._tick.unpark_all()

    def _fire(self, handle: LiveTimerHandle) -> None:
        try:
            handle.fn()
        except AssertionError as exc:
            self._fail("oracle", f"assertion in {handle.actor}", f"assertion failed in timer '{handle.label}': {exc}", None)
        except Exception as exc:
            self._fail(
                "actor-raised",
                f"{type(exc).__name__} in {handle.actor}",
                f"timer '{handle.label}' raised {type(exc).__name__}: {exc} (at {where(exc)})",
                None,
            )
        self._check_oracles()

    def choose(self, label: str, n: int) -> int:
        """Always 0: a plain test injects no faults and makes no data choices."""
        return 0

    def call_at(
        self,
        when: float,
        fn: Callable[[], object],
        *,
        label: str,
        actor: str = "timer",
        key: str | None = None,
        rv: int | None = None,
        latest: float | None = None,
    ) -> LiveTimerHandle:
        """``call_later`` at an absolute virtual time; a live run fires at the nominal time (plus real noise)."""
        return self.call_later(max(0.0, when - self.now), fn, label=label, actor=actor, key=key, rv=rv)

    #: a live run injects no faults
    fault_kinds: frozenset[str] | None = frozenset()
    max_window = 0.0

    def fault_enabled(self, kind: str, default: bool = False) -> bool:
        return False

    def share_memory(self, *prefixes: str) -> None:
        """Accepted for models written for :class:`World`; a live run explores nothing, so it needs no processes."""

    def process_of(self, actor: str) -> str | None:
        return None

    def touch(self, *resources: Hashable, write: bool = False) -> None:
        """Footprints feed the exhaustive referee's reduction only; a live run keeps none."""

    #: a live run keeps no trace, so it records no notes
    noting = False

    def note(self, text: str, *, kind: str = "log", key: str | None = None, keys: Any = (), **fields: Any) -> None:
        """A live run keeps no trace: the line is dropped (the same call as in a simulated run)."""

    def observed(self, *refs: str, write: bool = False) -> None:
        """A live run keeps no footprints."""

    def fault(self, kind: str, label: str, *, key: str | None = None, default: bool = False) -> bool:
        """Never: a plain test injects no faults."""
        return False

    def move_on_after(self, seconds: float) -> trio.CancelScope:
        """``trio.move_on_after`` in scaled real time."""
        return trio.move_on_after(max(0.0, seconds) * self.time_scale)

    def fail_after(self, seconds: float) -> Any:
        """``trio.fail_after`` in scaled real time."""
        return trio.fail_after(max(0.0, seconds) * self.time_scale)

    # ------------------------------------------------------------ primitives
    def Event(self) -> LiveEvent:  # noqa: N802 - reads like the class it makes
        return LiveEvent(self)

    def Queue(self) -> LiveQueue[Any]:  # noqa: N802
        return LiveQueue(self)

    def Lock(self) -> LiveLock:  # noqa: N802
        return LiveLock(self)

    # -------------------------------------------------------------- oracles
    def invariant(self, fn: Callable[[], object], name: str) -> None:
        """Checked at every yield point and after every timer."""
        self._invariants.append((name, fn))

    def eventually(self, fn: Callable[[], object], *, within: float, name: str) -> None:
        """``fn`` must hold within ``within`` virtual (= scaled real) seconds from now."""
        # [name, fn, deadline, registered_at, open, watchdog scope]
        ev: list[Any] = [name, fn, self.now + within, self.now, True, trio.CancelScope()]
        if holds(name, fn) is None:
            return
        self._eventually.append(ev)
        if self._nursery is not None:
            self._timed += 1
            self._nursery.start_soon(self._eventually_deadline, ev, within * self.time_scale)

    async def _eventually_deadline(self, ev: list[Any], real: float) -> None:
        try:
            with ev[5]:
                await trio.sleep(real)
            if ev[4] and holds(ev[0], ev[1]) is not None:
                self._fail(
                    "oracle",
                    ev[0],
                    f"'{ev[0]}' did not happen within {ev[2] - ev[3]:g} virtual seconds "
                    f"(expected by t={ev[2]:g}, registered at t={ev[3]:g}; live run, time scale {self.time_scale:g})",
                    None,
                )
            ev[4] = False
        finally:
            self._timed -= 1
            self._tick.unpark_all()

    def bound(self, metric: Callable[[], float], max: float, name: str) -> None:
        """``metric()`` must never exceed ``max`` at a yield point; its peak is reported either way."""
        self._bounds.append((name, metric, max))
        self.peaks.setdefault(name, -math.inf)

    def at_end(self, fn: Callable[[], object], name: str) -> None:
        """Checked once the program settles or reaches its horizon."""
        self._at_end.append((name, fn))

    def expose(self, name: str, fn: Callable[[], object]) -> None:
        """Keep ``fn`` (the model's own memory) as a view, as :meth:`World.expose` does.

        A live run writes no report, so nothing reads the views step by step; they are kept so
        that a model written for the search runs live unchanged (``views`` holds them).
        """
        self.views[name] = fn

    def fail(self, message: str, *, name: str = "scenario assertion") -> None:
        """Declare a violation from model code; the run stops at the next checkpoint."""
        me = self._me()
        self._fail("oracle", name, message, me.name if me else None)

    def _check_oracles(self) -> None:
        if self._violation is not None:
            return
        broken = first_broken_invariant(self._invariants)
        if broken is not None:
            self._fail("oracle", broken[0], broken[1], None)
            return
        if self._eventually:
            for ev in self._eventually:
                if ev[4] and holds(ev[0], ev[1]) is None:
                    ev[4] = False
                    ev[5].cancel()  # discharged: its deadline no longer keeps the run alive
            self._eventually = [ev for ev in self._eventually if ev[4]]
        exceeded = first_exceeded_bound(self._bounds, self.peaks)
        if exceeded is not None:
            self._fail("oracle", exceeded[0], exceeded[1], None)

    def _fail(self, kind: str, name: str, message: str, actor: str | None) -> None:
        if self._violation is None:
            self._violation = Violation(kind, name, message, self._step, self.now, actor)
            self._stop()

    def _stop(self) -> None:
        if not self._stopping:
            self._end_now = self.now
            self._stopping = True
            if self._nursery is not None:
                self._nursery.cancel_scope.cancel()

    # ---------------------------------------------------------------- driver
    async def _main(self, scenario: Callable[..., Awaitable[object]]) -> None:
        self._t0 = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._watch_horizon)
                nursery.start_soon(self._watch_quiescence)
                self.spawn("main", _call_with_params, scenario, self)
        except KeyboardInterrupt:
            self._interrupted = True
            self._fail("interrupted", "KeyboardInterrupt", "KeyboardInterrupt while the live run was in progress", None)
            raise
        finally:
            if not self._ended:
                self._end_now = self._end_now or self.now
            self._ended = True

    async def _watch_horizon(self) -> None:
        with trio.CancelScope(deadline=self._stop_deadline()) as scope:
            self._horizon_scope = scope
            await trio.sleep_forever()
        self._horizon_scope = None
        if self._stopping:
            return
        if self.now >= self._horizon:
            self._end_checks("reached its horizon")
        else:
            limit = min(self.timeout, self.limits.max_time * self.time_scale)
            self._fail(
                "runaway",
                "time limit",
                f"the live run neither settled nor reached a horizon within {limit:g} real seconds "
                f"(t={self.now:.1f} virtual). Set world.horizon, or raise the timeout.",
                None,
            )
        self._stop()

    async def _watch_quiescence(self) -> None:
        """Every task blocked and nothing timed pending: the program settled (or deadlocked)."""
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if self._stopping:
                return
            if self._timed == 0:
                break
            await self._tick.park()
        live = [a for a in self._actors if not a.done]
        outside = [a for a in live if a.waiting is None]
        blocked = [a for a in live if a.waiting is not None and not (a.daemon and a.idle)]
        if outside:
            a = outside[0]
            self._fail(
                "blocked-outside",
                "blocked outside the harness",
                f"actor '{a.name}' is blocked on something that is not a world primitive (a raw trio.Event, "
                f"memory channel or real I/O) and nothing else can run (t={self.now:g}).",
                a.name,
            )
        elif blocked:
            a = blocked[0]
            self._fail(
                "deadlock",
                "deadlock",
                f"actor '{a.name}' waits for '{a.waiting}' at t={self.now:g}, and no task or timer can wake it.",
                a.name,
            )
        else:
            self._end_checks("settled")
        self._stop()

    def _end_checks(self, how: str) -> None:
        self._end_now = self.now
        for ev in self._eventually:
            if ev[4] and how == "settled" and holds(ev[0], ev[1]) is not None:
                self._fail(
                    "oracle",
                    ev[0],
                    f"'{ev[0]}' never happened: the live run settled at t={self.now:g} (it was expected by t={ev[2]:g})",
                    None,
                )
                return
        for name, fn in self._at_end:
            msg = holds(name, fn)
            if msg is not None:
                self._fail("oracle", name, f"at the end of the run: {msg}", None)
                return
        self._check_oracles()

    # ------------------------------------------------------------- results
    def outcome(self) -> RunOutcome:
        trace = Trace(Record(*r) for r in self._records)
        return RunOutcome(trace, self._violation, self._end_now, dict(self.peaks), self._interrupted)


async def _call_with_params(scenario: Callable[..., Awaitable[object]], world: LiveWorld) -> None:
    await scenario(world, **world.params)


# ---------------------------------------------------------------- primitives
class LiveEvent:
    """``world.Event()`` of a live run: ``wait()`` is a checkpoint, then a real wait."""

    __slots__ = ("_lot", "_set", "_world")

    def __init__(self, world: LiveWorld) -> None:
        self._world = world
        self._set = False
        self._lot = tl.ParkingLot()

    def set(self) -> None:
        self._set = True
        self._lot.unpark_all()

    def is_set(self) -> bool:
        return self._set

    async def wait(self, label: str = "wait for event", *, idle: bool = False) -> None:
        async def wait() -> None:
            await trio.sleep(0)
            while not self._set:
                await self._lot.park()

        await self._world._wait_in(label, idle, wait)
        me = self._world._me()
        self._world._record(me.name if me else "main", label, None, None, "run")


class LiveQueue(Generic[T]):
    """``world.Queue()`` of a live run: an unbounded FIFO; ``get()`` parks while it is empty."""

    __slots__ = ("_items", "_lot", "_world")

    def __init__(self, world: LiveWorld) -> None:
        self._world = world
        self._items: deque[T] = deque()
        self._lot = tl.ParkingLot()

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        self._lot.unpark(count=1)

    def __len__(self) -> int:
        return len(self._items)

    async def get(self, label: str = "get", *, key: str | None = None) -> T:
        async def wait() -> None:
            await trio.sleep(0)
            while not self._items:
                await self._lot.park()

        await self._world._wait_in(label, True, wait)
        item = self._items.popleft()
        if self._items:
            self._lot.unpark(count=1)  # a getter woken for an item another one took
        me = self._world._me()
        self._world._record(me.name if me else "main", label, key, None, "run")
        return item


class LiveLock:
    """``world.Lock()`` of a live run: may be released by any task, like the harness lock."""

    __slots__ = ("_lot", "_owner", "_world")

    def __init__(self, world: LiveWorld) -> None:
        self._world = world
        self._owner: str | None = None
        self._lot = tl.ParkingLot()

    def locked(self) -> bool:
        return self._owner is not None

    async def acquire(self, label: str = "acquire lock") -> None:
        async def wait() -> None:
            await trio.sleep(0)
            while self._owner is not None:
                await self._lot.park()

        await self._world._wait_in(label, False, wait)
        me = self._world._me()
        self._owner = me.name if me else "?"
        self._world._record(self._owner, label, None, None, "run")

    def release(self) -> None:
        self._owner = None
        self._lot.unpark(count=1)

    async def __aenter__(self) -> LiveLock:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


# ------------------------------------------------------------------ running
def run_live(
    scenario: Callable[..., Awaitable[object]],
    *,
    params: dict[str, Any] | None = None,
    seed: int = 0,
    time_scale: float = 0.01,
    jitter: float = 0.2,
    timeout: float = 60.0,
    limits: Limits = Limits(),
) -> RunOutcome:
    """Run ``scenario(world, **params)`` once as a plain Trio program; never raises for a verdict.

    Trio schedules, the real clock runs (``time_scale`` real seconds per virtual
    second, sleeps jittered by ``±jitter`` from ``random.Random(seed)``), and no
    fault is ever injected. Same oracles, same :class:`RunOutcome` as
    :func:`run_once`; not reproducible.
    """
    world = LiveWorld(params=params, seed=seed, time_scale=time_scale, jitter=jitter, timeout=timeout, limits=limits)
    try:
        trio.run(world._main, scenario, strict_exception_groups=True)
    except BaseExceptionGroup as group:
        exc: BaseException = group
        while isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        raise exc from None
    return world.outcome()


@dataclass
class LiveRepeat:
    """What re-running a scenario live, pytest-repeat style, came to."""

    runs: int
    seconds: float
    failure: RunOutcome | None
    other_failures: int = 0
    max_runs: int | None = None
    max_seconds: float | None = None

    @property
    def found(self) -> bool:
        return self.failure is not None

    @property
    def outcome(self) -> str:
        if self.failure is not None and self.failure.violation is not None:
            return f"failed on run {self.runs:,} after {self.seconds:.2f} s: {self.failure.violation.describe()}"
        return f"not found in {self.runs:,} runs / {self.seconds:.1f} s"


def repeat_live(
    scenario: Callable[..., Awaitable[object]],
    *,
    params: dict[str, Any] | None = None,
    runs: int | None = 100,
    seconds: float | None = None,
    seed: int = 0,
    time_scale: float = 0.01,
    jitter: float = 0.2,
    timeout: float = 60.0,
    target: Violation | None = None,
    limits: Limits = Limits(),
) -> LiveRepeat:
    """Re-run ``scenario`` live until it fails, ``runs`` runs or ``seconds`` wall seconds pass.

    This is what ``pytest --count=N`` (pytest-repeat) or pytest-flakefinder do: a
    fresh program per run, the same oracle, and hope. Run ``i`` uses jitter seed
    ``seed + i``. With ``target``, only a violation of the same oracle counts as
    found (others are counted in ``other_failures``: a plain test would report
    them too, but they are not this race).
    """
    started = time.perf_counter()
    n = 0
    others = 0
    while True:
        if runs is not None and n >= runs:
            break
        if seconds is not None and n and time.perf_counter() - started >= seconds:
            break
        left = timeout if seconds is None else max(0.1, min(timeout, seconds - (time.perf_counter() - started)))
        out = run_live(scenario, params=params, seed=seed + n, time_scale=time_scale, jitter=jitter, timeout=left, limits=limits)
        n += 1
        v = out.violation
        if v is None or v.kind == "interrupted":
            if out.interrupted:
                break
            continue
        if target is None or target.same_bug(v):
            return LiveRepeat(n, time.perf_counter() - started, out, others, runs, seconds)
        if v.kind == "runaway" and v.name == "time limit" and seconds is not None:
            continue  # the wall budget cut the last run short
        others += 1
    return LiveRepeat(n, time.perf_counter() - started, None, others, runs, seconds)


__all__ = ["LiveEvent", "LiveLock", "LiveQueue", "LiveRepeat", "LiveTimerHandle", "LiveWorld", "repeat_live", "run_live"]
