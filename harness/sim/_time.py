"""When time moves: virtual time in whole nanoseconds, timers and sleeps, and the controller's advance of the clock.

Virtual time is whole nanoseconds (as Go's ``time.Duration``), and
:class:`VirtualClock` shows it to Trio in seconds. A timer
(:class:`TimerHandle`) and a sleep are actions enabled at an instant; when
nothing is enabled, the controller moves the clock (:meth:`_Time._advance`) to
the next timer, window end, ``eventually`` deadline or the horizon, or ends
the run (settled, deadlocked, runaway).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio
import trio.lowlevel as tl

from ._actors import MAIN_ACTOR, waiting_at
from ._choice import Option
from ._clocks import real_monotonic
from ._state import _RunState

if TYPE_CHECKING:
    from ._world import World

#: virtual time's resolution: Go's ``time.Duration`` counts whole nanoseconds, and so does the world's clock
TICKS_PER_SECOND = 1_000_000_000
#: "never" in nanoseconds (an unset horizon, a window without end): Go's largest Duration, 292 years
NEVER = (1 << 63) - 1


def to_ns(seconds: float) -> int:
    """``seconds`` as whole nanoseconds, rounded to the nearest (infinity is :data:`NEVER`)."""
    if seconds == math.inf:
        return NEVER
    return round(seconds * TICKS_PER_SECOND)


def ceil_ns(seconds: float) -> int:
    """The first whole nanosecond at or after ``seconds`` (a deadline is never reached early)."""
    if seconds == math.inf:
        return NEVER
    t = round(seconds * TICKS_PER_SECOND)  # an instant on the grid comes back as itself
    return t + 1 if t / TICKS_PER_SECOND < seconds else t


def to_seconds(ns: int) -> float:
    """Nanoseconds as the seconds the public API shows (:data:`NEVER` is infinity)."""
    return math.inf if ns >= NEVER else ns / TICKS_PER_SECOND


def later(now: int, delay: float) -> int:
    """``now`` (nanoseconds) plus ``delay`` seconds as a Go Duration: whole nanoseconds, a positive one at least 1.

    Why: in float seconds ``5 - (10.005 - 5.005)`` is 1e-15, and a controller
    that requeues after that fires again at the same instant for ever (a
    livelock Go cannot have: its durations are whole nanoseconds, and a
    positive one moves the clock). The clock is an integer count of
    nanoseconds, and a positive delay moves it by at least one.
    """
    if delay <= 0:
        return now
    if delay == math.inf or now >= NEVER:
        return NEVER
    d = round(delay * TICKS_PER_SECOND)
    t = now + d if d > 0 else now + 1  # (no min/max: this runs at every step with a window)
    return t if t < NEVER else NEVER


class VirtualClock(trio.abc.Clock):
    """Trio's view of the world's virtual time; jumps only when the world advances."""

    def __init__(self, world: World | None) -> None:
        #: the world whose time this is; :func:`run_batch` moves it from run to run
        self._world = world
        #: (world, real instant): when that world began to stop; from then on Trio's time is the real clock's
        self._teardown: tuple[World, float] | None = None

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        w = self._world
        if w is None:
            return 0.0
        return w._now_ns / TICKS_PER_SECOND + self._late(w)

    def _late(self, w: World) -> float:
        """Real seconds since ``w`` began to stop (0 while it runs)."""
        if not w._stopping:
            return 0.0
        if self._teardown is None or self._teardown[0] is not w:
            self._teardown = (w, real_monotonic())
        return real_monotonic() - self._teardown[1]

    def deadline_to_sleep_time(self, deadline: float) -> float:
        w = self._world
        if w is None:
            return 86_400.0
        if w._stopping:
            # The run is over and its tasks are being cancelled: a wait in cleanup code (Trio's run_process gives a
            # child 5 s between SIGTERM and SIGKILL) runs on the real clock, on Trio's side only; the world's own
            # clock, and so its trace, stays where the run ended. Left to the world's clock it never ended.
            return min(86_400.0, max(0.0, deadline - self.current_time()))
        if w._advancing and deadline != math.inf:
            t = ceil_ns(deadline)  # the deadline's nanosecond: Trio sees it reached, never passed early
            if t > w._now_ns:
                w._now_ns = t
            return 0.0
        # Not ours to move: let Trio idle so the watcher can report the block.
        return 0.0 if deadline <= w._now_ns / TICKS_PER_SECOND else 86_400.0


class TimerHandle:
    """A pending ``call_later``/``call_at``; ``cancel()`` removes it before it fires.

    It fires at ``when`` (its nominal time, in seconds) in the canonical run; a
    strategy may let it wait until ``latest`` (the end of its window). The world
    keeps both in whole nanoseconds (``when_ns``, ``latest_ns``).
    """

    __slots__ = ("actor", "cancelled", "fired", "fn", "key", "label", "latest_ns", "option", "rv", "scope", "seq",
                 "when_ns")

    def __init__(
        self,
        when_ns: int,
        seq: int,
        fn: Callable[[], object],
        label: str,
        actor: str,
        key: str | None,
        rv: int | None = None,
        latest_ns: int | None = None,
    ) -> None:
        self.when_ns = when_ns
        self.latest_ns = when_ns if latest_ns is None or latest_ns < when_ns else latest_ns
        self.seq = seq
        self.fn = fn
        self.label = label
        self.actor = actor
        self.key = key
        self.rv = rv
        self.cancelled = False
        self.fired = False
        self.option = Option(actor, label, key, to_seconds(when_ns), to_seconds(self.latest_ns))
        #: the real clock's sleeping task (None under virtual time, where the scheduler holds the timer)
        self.scope: trio.CancelScope | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()

    @property
    def when(self) -> float:
        """Its nominal time, in virtual seconds."""
        return to_seconds(self.when_ns)

    @property
    def latest(self) -> float:
        """The end of its window, in virtual seconds."""
        return to_seconds(self.latest_ns)

    def __lt__(self, other: TimerHandle) -> bool:
        return (self.when_ns, self.seq) < (other.when_ns, other.seq)


class _Time(_RunState):
    """The world's clock: ``now``, timers, sleeps, Trio cancel scopes in virtual time, and moving time."""

    @property
    def now(self) -> float:
        """Virtual seconds since the run started (with the real clock: real seconds elapsed / ``time_scale``)."""
        return self._now_ns / TICKS_PER_SECOND if self._real is None else self._real.now()

    # ------------------------------------------------------- timers & sleep
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
    ) -> TimerHandle:
        """Run ``fn()`` (synchronously) ``delay`` virtual seconds from now, as a scheduled action.

        ``window`` > 0 lets a strategy fire it up to ``window`` seconds late (jitter).
        """
        when = later(self._clock_ns(), delay)
        return self._call_at(when, later(when, window), fn, label, actor, key, rv)

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
    ) -> TimerHandle:
        """Run ``fn()`` at virtual time ``when`` (its nominal time), or as late as ``latest``.

        The canonical run fires it at ``when``; a strategy may postpone it to any
        time up to ``latest`` (its window), which is how informer lag and timer
        jitter become part of the explored space.
        """
        return self._call_at(max(to_ns(when), self._clock_ns()), None if latest is None else to_ns(latest), fn, label,
                             actor, key, rv)

    def _clock_ns(self) -> int:
        """The clock in nanoseconds (the real clock's reading, under the real clock)."""
        if self._real is not None:
            self._real.now()  # reads the real clock into _now_ns
        return self._now_ns

    def _call_at(
        self, when_ns: int, latest_ns: int | None, fn: Callable[[], object], label: str, actor: str, key: str | None,
        rv: int | None,
    ) -> TimerHandle:
        self._seq += 1
        handle = TimerHandle(when_ns, self._seq, fn, label, actor, key, rv, latest_ns)
        if self._real is not None:
            self._real.start_timer(handle)
            return handle
        if handle.latest_ns - handle.when_ns > self.max_window * TICKS_PER_SECOND:
            self.max_window = to_seconds(handle.latest_ns - handle.when_ns)
        if self._wants_idents:
            handle.option.ident = self._ident(actor, label, key)
        heapq.heappush(self._timers, handle)
        return handle

    @property
    def steps_at_instant(self) -> int:
        """Steps taken since virtual time last moved (0 on the real clock, where time always moves).

        A loop that takes many steps at one instant is a loop a real cluster
        spreads over time (every request takes some); a kube structure reads this
        to charge its work a nominal latency once an instant gets busy, so such a
        loop heals as it would on a cluster instead of starving the timers.
        """
        if self._real is not None or self._now_ns != self._instant[0]:
            return 0
        return self._step - self._instant[1]

    async def sleep(self, seconds: float, label: str | None = None, *, window: float = 0.0) -> None:
        """Sleep in virtual time (a yield point that becomes enabled after ``seconds``, or up to ``window`` later)."""
        await self._yield(
            label or f"wake after sleep {seconds:g}s", None, None, None, later(self._clock_ns(), seconds), window=window,
            fresh=True,
        )

    def move_on_after(self, seconds: float) -> trio.CancelScope:
        """A cancel scope that expires after ``seconds`` of virtual time (real clock: scaled real time)."""
        return trio.move_on_after(seconds if self._real is None else self._real.real(seconds, jitter=False))

    def fail_after(self, seconds: float) -> Any:
        """Like ``trio.fail_after``, in virtual time (real clock: scaled real time)."""
        return trio.fail_after(seconds if self._real is None else self._real.real(seconds, jitter=False))

    def _nothing_scheduled(self) -> bool:
        """No timer, no postponed action's window and no ``eventually`` deadline lies ahead: moving time now would
        end the run (settled, or a deadlock), not reach anything."""
        now = self._now_ns
        if any(not t.cancelled for t in self._timers) or any(not t.cancelled for t in self._due):
            return False
        if any(now < a.ready_ns or now < a.latest_ns for a in self._actors if a.waiting):
            return False
        return not self._eventually and self._wait_target == NEVER

    async def _advance(self) -> bool:
        """Nothing is enabled: move virtual time, or end the run. False = run over.

        Every instant here is a whole nanosecond (an int), so two instants are
        equal or at least a nanosecond apart, and a jump always moves the clock.
        """
        now = self._now_ns
        t_next = NEVER
        timers = self._timers
        while timers and timers[0].cancelled:
            heapq.heappop(timers)
        if timers:
            t_next = timers[0].when_ns
        waiting_actors = [a for a in self._actors if a.waiting]
        for a in waiting_actors:
            if now < a.ready_ns < t_next:
                t_next = a.ready_ns
            elif now < a.latest_ns < t_next:
                t_next = a.latest_ns  # the end of a postponed action's window
        for ev in self._eventually:
            if ev.deadline_ns < t_next:
                t_next = ev.deadline_ns
        # A strategy chose to let time pass: stop at the next window end, or earlier if it asked.
        if self._wait_target < t_next:
            t_next = self._wait_target
        self._wait_target = NEVER
        for t in self._due:
            if not t.cancelled and now < t.latest_ns < t_next:
                t_next = t.latest_ns
        target = max(now, min(t_next, self._horizon_ns, self._max_ns))
        before = now
        if self._direct_time and target < NEVER \
                and tl.current_statistics().seconds_to_next_deadline > (target - now) / TICKS_PER_SECOND:
            # No Trio deadline (an actor's move_on_after/fail_after) lies at or before the target, so
            # nothing in Trio can fire on the way: set the clock. The comparison is in seconds from now
            # because that is what Trio reports; rounding can only make it refuse a jump it could have
            # made (then the exact path below runs), never accept one past a deadline.
            self._now_ns = target
        else:
            # A deadline may expire on the way: let Trio move time, so the clock stops at that deadline
            # and the actor's cancel scope fires at its own instant (see VirtualClock).
            self._advancing = True
            try:
                with trio.CancelScope() as scope:
                    self._advance_scope = scope
                    await trio.sleep_until(to_seconds(target))
            finally:
                self._advancing = False
                self._advance_scope = None
        if self._now_ns > before and self._invariants and self._violation is None and target < NEVER \
                and (t_next != NEVER or target == self._horizon_ns):  # a real jump, not the probe for settling
            self._check_invariants_over_jump(before)
            if self._violation is not None:
                return False
        if any(a.cancel_pending for a in self._actors) or (self._adopter is not None and self._adopter.woken):
            return True  # a Trio deadline inside an actor expired on the way (a cancel scope, a raw sleep)
        # eventually deadlines that passed
        for ev in self._eventually:
            if ev.deadline_ns <= self._now_ns:
                self._now_ns = ev.deadline_ns
                self._last_oracle_reads = self._eventually_reads.get(ev.name, ())
                self._fail("oracle", ev.name, ev.missed(), None)
                return False
        if t_next != NEVER and self._now_ns < self._horizon_ns and self._now_ns < self._max_ns:
            return True
        if self._now_ns >= self._horizon_ns:
            self._now_ns = self._horizon_ns
            self._end_checks("reached its horizon")
            return False
        if t_next == NEVER:
            self._now_ns = before
            blocked = [a for a in waiting_actors if not a.done and not (a.daemon and a.idle)]
            blocked += [a for a in self._actors if a.trio_blocked and not a.done and not a.daemon]
            if blocked:
                # the scenario's own actor first: when it waits forever, the model is what is broken
                a = next((b for b in blocked if b.name == MAIN_ACTOR), blocked[0])
                where = waiting_at(a.task)
                self._fail(
                    "deadlock",
                    "deadlock",
                    f"actor '{a.name}' waits for '{a.label}'{f' at {where}' if where else ''} at t={self.now:g}, "
                    "and no enabled action or timer can wake it. Make sure every wait has a producer, or spawn "
                    "long-lived loops with daemon=True and wait for work with Queue.get().",
                    a,
                )
                return False
            self._end_checks("settled")
            return False
        self._fail(
            "runaway",
            "time limit",
            f"virtual time passed the limit of {self.limits.max_time:g} s without the run settling. "
            "If the scenario is periodic, set world.horizon; otherwise raise Limits(max_time=...).",
            None,
        )
        return False
