"""The real clock: the same :class:`~harness.sim.World`, driven by Trio's own scheduler and a scaled real clock.

Why it exists
-------------
It is the *peer baseline*: what a controller developer without this harness
does is run the test again and again (pytest-repeat, pytest-flakefinder) and
hope that Trio's scheduling and real timing hit the bad interleaving. It is
also how a user sees a scenario behave outside the harness. The world is the
same object as under virtual time (same actors, primitives, oracles, views,
kube models); only who decides and what a second is change:

* a yield point (``world.step()``, a wait on an ``Event``/``Queue``/``Lock``)
  is ``await trio.sleep(0)`` and then a real wait: which runnable task goes
  next is Trio's own choice (its run-queue batch, reversed at random by Trio
  itself; we cannot and do not seed that);
* ``world.sleep(s)`` and ``world.call_later(s, fn)`` are real Trio sleeps of
  ``s * time_scale`` seconds times ``1 ± jitter`` (a per-run
  ``random.Random(seed)``, never the global one), so a virtual second is
  ``time_scale`` real seconds, with the noise of a real clock;
* no fault is injected (``fault_kinds`` is empty) and data choices go to the
  world's chooser (the canonical one unless given: always 0);
* oracles are the same: invariants and bounds are checked at every yield point
  and after every timer, ``eventually`` deadlines and ``horizon`` are in scaled
  real time, ``at_end`` runs when the program settles (every task blocked, no
  timer or sleep pending) or reaches its horizon.

The result is the same :class:`~harness.sim.RunOutcome` as a controlled run:
the trace of the actions taken (every step record has ``choice=0, enabled=1``:
there were no decisions, only what happened) and the violation, if any. A
real-clock run is **not reproducible**: the seed fixes the jitter only. That is
the point.

Rejected alternatives: a second world class with the same methods (it drifted:
models that ran in the search crashed live on a method it lacked); running the
scenario under the harness with a random chooser and real sleeps (that is
still the harness deciding every switch); ``trio.testing.MockClock`` (virtual
time is exactly what a plain test lacks).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import trio
import trio.lowlevel as tl
import trio.testing

from .._errors import NotInSimulation, UsageError
from ._actors import MAIN_ACTOR, _Actor, _call_with_params, waiting_at
from ._driver import run_trio
from ._oracles import _Eventually, holds
from ._outcome import Limits, RunOutcome, Violation
from ._tasks import awaits_own_tasks, sleeping, task_name
from ._time import TICKS_PER_SECOND, TimerHandle, to_ns
from ._world import World


@dataclass(frozen=True)
class RealClock:
    """How a world keeps real time: ``time_scale`` real seconds make one virtual second.

    Every sleep and timer is stretched by a factor drawn uniformly from
    ``[1 - jitter, 1 + jitter]`` with ``random.Random(seed)``; ``timeout`` (real
    seconds) ends a run that neither settles nor reaches its horizon, as a
    runaway.
    """

    time_scale: float = 0.01
    jitter: float = 0.2
    seed: int = 0
    timeout: float = 60.0

    def __post_init__(self) -> None:
        if not self.time_scale > 0:
            raise UsageError(f"time_scale must be > 0 (real seconds per virtual second), got {self.time_scale!r}")
        if not 0 <= self.jitter < 1:
            raise UsageError(f"jitter must be in [0, 1), got {self.jitter!r}")
        if not self.timeout > 0:
            raise UsageError(f"timeout must be > 0 real seconds, got {self.timeout!r}")


class RealTime:
    """The driver of a world on the real clock: its yield points, timers, watchers and end.

    It holds what only the real clock needs (the start instant, the jitter's
    random stream, the count of pending sleeps and timers) and works on the
    world's own state (actors, records, oracles), so there is one world.
    """

    def __init__(self, world: World, clock: RealClock) -> None:
        self.world = world
        self.clock = clock
        self._rng = random.Random(clock.seed)
        self._t0 = 0.0
        self._frozen = False  # the run stopped: now() is the world's last instant
        self._by_task: dict[tl.Task, _Actor] = {}
        self._timed = 0  # sleeps, timers and eventually deadlines still pending
        self._tick = tl.ParkingLot()  # unparked whenever a timed thing completes
        self._changed = tl.ParkingLot()  # unparked whenever a primitive's state changes
        self._horizon_scope: trio.CancelScope | None = None

    # ------------------------------------------------------------------ time
    def now(self) -> float:
        w = self.world
        if not self._frozen:
            try:
                t = (trio.current_time() - self._t0) / self.clock.time_scale
            except RuntimeError:  # outside trio.run (an oracle read after the run)
                pass
            else:
                w._now_ns = to_ns(t)
        return w._now_ns / TICKS_PER_SECOND

    def real(self, seconds: float, *, jitter: bool = True) -> float:
        """Real seconds for ``seconds`` of virtual time (stretched by the jitter unless ``jitter=False``)."""
        if seconds <= 0:
            return 0.0
        if seconds == math.inf:
            return math.inf
        j = self.clock.jitter
        factor = 1.0 + self._rng.uniform(-j, j) if jitter and j else 1.0
        return seconds * self.clock.time_scale * factor

    def horizon_moved(self) -> None:
        if self._horizon_scope is not None:
            self._horizon_scope.deadline = self._stop_deadline()

    def _stop_deadline(self) -> float:
        scale = self.clock.time_scale
        hard = min(self.clock.timeout, self.world.limits.max_time * scale)
        return self._t0 + min(hard, self.world._horizon * scale)

    # ---------------------------------------------------------------- actors
    def started(self, actor: _Actor) -> None:
        assert actor.task is not None
        self._by_task[actor.task] = actor
        self.record(actor.name, f"start {actor.name}", None, None, "run")

    def ended(self, actor: _Actor) -> None:
        if actor.task is not None:
            self._by_task.pop(actor.task, None)

    def me(self) -> _Actor | None:
        try:
            task = tl.current_task()
        except RuntimeError:
            return None
        actor = self._by_task.get(task)
        return actor if actor is not None else self._adopted(task)

    def _adopted(self, task: tl.Task) -> _Actor | None:
        """A task an actor started in its own nursery or task group is an actor here too (Trio schedules it)."""
        nursery = task.parent_nursery
        parent = self._by_task.get(nursery.parent_task) if nursery is not None else None
        if parent is None and nursery is not None and nursery.parent_task is not task:
            parent = self._adopted(nursery.parent_task)
        if parent is None:
            return None
        actor = self.world._adopt(task, parent, task_name(task))
        self._by_task[task] = actor
        return actor

    def wake(self) -> None:
        self._changed.unpark_all()

    # ----------------------------------------------------------- the trace
    def record(self, actor: str, label: str, key: str | None, rv: int | None, kind: str) -> None:
        w = self.world
        if w._stopping:
            return
        w._step += 1
        w._records.append((w._step, self.now(), actor, label, key, rv, 0, 1, kind, None))
        if w._step > w.limits.max_steps:
            w._fail(
                "runaway",
                "step limit",
                f"the real-clock run took more than {w.limits.max_steps:,} steps without settling (t={self.now():.3f}). "
                "If the scenario is periodic, set world.horizon; otherwise raise Limits(max_steps=...).",
                None,
            )
            return
        w._check_oracles()

    # ------------------------------------------------------- yield points
    async def wait(
        self,
        label: str,
        key: str | None,
        rv: int | None,
        guard: Callable[[], bool] | None,
        ready_ns: int | None,
        idle: bool,
    ) -> None:
        """A yield point: a checkpoint (Trio decides who runs next), then a real wait until it is enabled."""
        me = self.me()
        if me is None or self.world._nursery is None:
            raise NotInSimulation(
                f"'{label}' was awaited outside a harness actor. Await harness primitives only from "
                "code spawned with world.spawn() or from the scenario function itself."
            )
        me.waiting = True
        me.label = label
        me.idle = idle
        try:
            await trio.sleep(0)
            if ready_ns is not None and ready_ns / TICKS_PER_SECOND > self.now():
                self._timed += 1
                try:
                    await trio.sleep(self.real(ready_ns / TICKS_PER_SECOND - self.now()))
                finally:
                    self._timed -= 1
                    self._tick.unpark_all()
            while guard is not None and not guard():
                await self._changed.park()
        finally:
            me.waiting = False
            me.idle = False
        self.record(me.name, label, key, rv, "run")

    def start_timer(self, handle: TimerHandle) -> None:
        w = self.world
        if w._nursery is None:
            raise RuntimeError("World.call_later() is only available while the world runs")
        handle.scope = trio.CancelScope()
        self._timed += 1
        # an absolute deadline, taken now: the timer fires at its time however late its task starts
        deadline = trio.current_time() + self.real(handle.when - self.now())
        w._nursery.start_soon(self._run_timer, handle, deadline)

    async def _run_timer(self, handle: TimerHandle, deadline: float) -> None:
        w = self.world
        try:
            assert handle.scope is not None
            with handle.scope:
                await trio.sleep_until(deadline)
                if handle.cancelled or w._violation is not None or w._stopping:
                    return
                self.record(handle.actor, handle.label, handle.key, handle.rv, "timer")
                if w._stopping:
                    return
                w._fire(handle)
                w._check_oracles()
        finally:
            self._timed -= 1
            self._tick.unpark_all()

    def eventually_deadline(self, ev: _Eventually, within: float) -> None:
        w = self.world
        if w._nursery is None:
            return
        ev.scope = trio.CancelScope()
        self._timed += 1
        w._nursery.start_soon(self._eventually_deadline, ev, self.real(within, jitter=False))

    async def _eventually_deadline(self, ev: _Eventually, real: float) -> None:
        w = self.world
        try:
            assert ev.scope is not None
            with ev.scope:
                await trio.sleep(real)
            if ev.scope.cancelled_caught or w._stopping or not any(e is ev for e in w._eventually):
                return
            if holds(ev.name, ev.fn) is not None:
                w._fail("oracle", ev.name, ev.missed(f"; real clock, time scale {self.clock.time_scale:g}",
                                                     because=False), None)
        finally:
            self._timed -= 1
            self._tick.unpark_all()

    # ---------------------------------------------------------------- driver
    def stop(self) -> None:
        w = self.world
        if not w._stopping:
            self.now()
            self._frozen = True
            w._stopping = True
            if w._nursery is not None:
                w._nursery.cancel_scope.cancel()

    async def main(self, scenario: Callable[..., Awaitable[object]]) -> None:
        w = self.world
        self._t0 = trio.current_time()
        try:
            async with trio.open_nursery() as nursery:
                w._nursery = nursery
                nursery.start_soon(self._watch_horizon)
                nursery.start_soon(self._watch_quiescence)
                w.spawn(MAIN_ACTOR, _call_with_params, scenario, w)
        except KeyboardInterrupt:
            w._interrupted = True
            w._fail("interrupted", "KeyboardInterrupt", "KeyboardInterrupt while the real-clock run was in progress",
                    None)
            raise
        finally:
            self.now()
            self._frozen = True
            w._ended = True

    async def _watch_horizon(self) -> None:
        w = self.world
        with trio.CancelScope(deadline=self._stop_deadline()) as scope:
            self._horizon_scope = scope
            await trio.sleep_forever()
        self._horizon_scope = None
        if w._stopping:
            return
        if self.now() >= w._horizon:
            w._end_checks("reached its horizon")
        else:
            limit = min(self.clock.timeout, w.limits.max_time * self.clock.time_scale)
            w._fail(
                "runaway",
                "time limit",
                f"the real-clock run neither settled nor reached a horizon within {limit:g} real seconds "
                f"(t={self.now():.1f} virtual). Set world.horizon, or raise the timeout.",
                None,
            )
        self.stop()

    async def _watch_quiescence(self) -> None:
        """Every task blocked and nothing timed pending: the program settled (or deadlocked)."""
        w = self.world
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if w._stopping:
                return
            if self._timed == 0:
                if not any(a.task is not None and not (a.done or a.waiting) and sleeping(a.task) for a in w._actors):
                    break
                await trio.sleep(0.01)  # an actor's raw trio/anyio sleep is pending: it will wake
                continue
            await self._tick.park()
        live = [a for a in w._actors if not a.done]
        # (an operator's own task that waits at Trio level for ever, a daemon's loop, waits for work like an idle one)
        # (an actor that waits at its own task group's end for the tasks it started waits on them: they are actors)
        outside = [a for a in live if not a.waiting and not (a.adopted and a.daemon)
                   and not (a.task is not None and awaits_own_tasks(a.task))]
        blocked = [a for a in live if a.waiting and not (a.daemon and a.idle)]
        if outside:
            a = next((b for b in outside if b.name == MAIN_ACTOR), outside[0])
            where = waiting_at(a.task)
            w._fail(
                "blocked-outside",
                "blocked outside the harness",
                f"actor '{a.name}' is blocked on something that is not a world primitive (a raw trio.Event, "
                f"memory channel or real I/O){f' at {where}' if where else ''} and nothing else can run "
                f"(t={self.now():g}).",
                a,
            )
        elif blocked:
            a = next((b for b in blocked if b.name == MAIN_ACTOR), blocked[0])
            where = waiting_at(a.task)
            w._fail(
                "deadlock",
                "deadlock",
                f"actor '{a.name}' waits for '{a.label}'{f' at {where}' if where else ''} at t={self.now():g}, "
                "and no task or timer can wake it.",
                a,
            )
        else:
            self.now()
            w._end_checks("settled")
        self.stop()


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
    """Run ``scenario(world, **params)`` once on the real clock; never raises for a verdict.

    Trio schedules, the real clock runs (``time_scale`` real seconds per virtual
    second, sleeps jittered by ``±jitter`` from ``random.Random(seed)``), and no
    fault is ever injected. Same world, same oracles, same :class:`RunOutcome`
    as :func:`run_once`; not reproducible.
    """
    world = World(clock=RealClock(time_scale, jitter, seed, timeout), params=params, limits=limits)
    run_trio(world._main, scenario)
    return world.outcome()


@dataclass
class LiveRepeat:
    """What re-running a scenario on the real clock, pytest-repeat style, came to."""

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
    """Re-run ``scenario`` on the real clock until it fails, ``runs`` runs or ``seconds`` wall seconds pass.

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
        out = run_live(scenario, params=params, seed=seed + n, time_scale=time_scale, jitter=jitter, timeout=left,
                       limits=limits)
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


__all__ = ["LiveRepeat", "RealClock", "RealTime", "repeat_live", "run_live"]
