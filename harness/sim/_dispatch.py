"""Who runs next: spawning actors, their yield points and registration, the hand-off and the dispatch.

An actor runs until it reaches a *yield point* (``world.step``, ``world.sleep``,
a wait on a harness ``Event``, ``Queue`` or ``Lock``). There it registers the
action it is about to take (:meth:`_Dispatch._register`) and hands off
(:meth:`_Dispatch._handoff`): :meth:`_Dispatch._dispatch` checks the oracles,
computes the enabled set, fires due timers, asks the chooser for an index into
it and resumes the chosen actor directly. Data choices (``choose``) and fault
points (``fault``) ask the same chooser. The actor table's entries are in
``_actors``; what a step costs in time, in ``_time``.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Awaitable, Callable
from typing import Any

import outcome
import trio
import trio.lowlevel as tl
from trio._core._run import GLOBAL_RUN_CONTEXT  # where a held task goes back when the world chooses it

from .._tested import require_tested
from ._actors import _CANCEL, MAIN_ACTOR, MECHANICAL, _Actor, waiting_at
from ._choice import Option
from ._clocks import real_monotonic
from ._footprints import _harness_code
from ._misuse import ending, misuse
from ._oracles import where
from ._plan import Ident, identity_label
from ._state import _RunState
from ._tasks import blocked_outside
from ._time import NEVER, TICKS_PER_SECOND, TimerHandle, ceil_ns, later
from ._trace import Access, _record
from ._watchdog import NoYield

require_tested("trio")  # GLOBAL_RUN_CONTEXT's run queue is Trio's internals: a tested version or a clear error


def _index(actor: _Actor) -> int:
    return actor.index


#: real seconds a replay waits at one decision for a request of a program outside the world that it recorded there
AWAIT_ARRIVAL = 5.0


class _Dispatch(_RunState):
    """The world's scheduler: actors, their yield points, and the choice of who runs next."""

    # ---------------------------------------------------------------- actors
    def spawn(self, name: str, fn: Callable[..., Awaitable[object]], *args: Any, daemon: bool = False) -> str:
        """Start ``fn(*args)`` as an actor; its first step is itself a scheduled action.

        ``daemon=True`` marks loops that may wait forever for work (informers,
        workers); a run may end while they wait. Names must be unique.
        """
        if self._nursery is None:
            raise RuntimeError("World.spawn() is only available while the world runs")
        actor = self._new_actor(name, daemon)
        name = actor.name
        if self._real is None:
            actor.abort_fn = lambda _rc: self._abort(actor)
            self._register(actor, f"start {name}", None, None, None, self._now_ns)
        self._nursery.start_soon(self._run_actor, actor, fn, args, name=name)
        return name

    def _new_actor(self, name: str, daemon: bool) -> _Actor:
        """A new entry in the actor table, under ``name`` or, when taken, ``name#2``, ``name#3``..."""
        base, n = name, 1
        while name in self._by_name:
            n += 1
            name = f"{base}#{n}"
        actor = _Actor(name, len(self._actors), daemon)
        self._actors.append(actor)
        self._by_name[name] = actor
        return actor

    def _adopt(self, task: tl.Task, parent: _Actor, fn_name: str) -> _Actor:
        """A Trio task started in ``parent``'s own nursery or task group becomes an actor (see ``_tasks``).

        Named after its parent and its function (``app-operator/worker``), a daemon when its parent is one.
        """
        actor = self._new_actor(f"{parent.name}/{fn_name}", parent.daemon)
        actor.task = task
        actor.adopted = True
        if self._real is not None:
            return actor  # Trio schedules it: it starts at once
        actor.started = False
        actor.abort_fn = lambda _rc: self._abort(actor)
        assert self._adopter is not None
        self._adopter.of_task[task] = actor
        return actor

    def _blocked_in_trio(self, actor: _Actor) -> None:
        """The running actor stopped at Trio level (a trio/anyio primitive, a raw sleep) or ended: the next one runs."""
        self._current = None
        if not actor.done:
            actor.trio_blocked = True
            assert actor.task is not None
            outside = blocked_outside(actor.task)
            if outside is not None:
                at = waiting_at(actor.task)
                self._fail("misuse", f"misuse in {actor.name}",
                           f"{actor.name} waits on {outside}{f' at {at}' if at else ''}: its wake-up comes on the "
                           "real clock, which the world does not schedule. Talk to the apiserver through a client "
                           "the world serves (api.transport(), an Operator's environment), and do the work in the "
                           "task itself instead of a thread"
                           + ("; the run's end stops the child (SIGTERM, SIGKILL 5 s later). To search an operator "
                              "that runs as its own process, start it with ExternalOperator"
                              if outside.startswith("a child process") else ""), actor)
                self._wake_controller()
                return
        self._handoff(None)

    def _register_woken(self) -> None:
        """Tasks Trio woke since the last decision become enabled actions, in actor order (deterministic)."""
        assert self._adopter is not None
        woken = self._adopter.woken
        if len(woken) > 1:
            woken.sort(key=_index)
        label = self._adopter.wake_label
        for actor in woken:
            if actor.task is not None and actor.task in MECHANICAL:
                MECHANICAL.discard(actor.task)
                if actor.held and not actor.done and not actor.urgent:
                    actor.urgent = True
                    self._adopter.urgent += 1
            if actor.held and not actor.done:
                # (fresh: what a task does after a wait for work or time starts afresh, as after world.sleep or an
                # idle Queue.get; what woke it is a read of the step that did: see TaskAdopter.task_scheduled)
                self._register(actor, label(actor), None, None, None, self._now_ns, fresh=True)
        woken.clear()

    async def _run_actor(self, actor: _Actor, fn: Callable[..., Awaitable[object]], args: tuple[Any, ...]) -> None:
        actor.task = tl.current_task()
        if self._adopter is not None:
            self._adopter.of_task[actor.task] = actor
        real = self._real
        try:
            if real is None:
                await self._wait_turn(actor)
            else:
                real.started(actor)
            await fn(*args)
            if real is not None and not self._stopping:
                self._check_oracles()  # what the actor did after its last yield point
        except trio.Cancelled:
            if not self._stopping:
                msg = f"actor '{actor.name}' was cancelled outside any cancel scope it opened"
                self._fail("actor-raised", actor.name, msg, actor)
            raise
        except AssertionError as exc:
            at = where(exc)
            msg = f"assertion failed in actor '{actor.name}' at {at}: {exc}"
            self._fail("oracle", f"assertion in {actor.name}", msg, actor)
        except Exception as raised:
            self._raised(actor, ending(raised))  # a task group's exception group: the exception that ended it
        except NoYield as exc:  # the watchdog: this actor ran past its bound without a yield point
            self._no_yield(actor.name, where(exc), actor)
        except BaseExceptionGroup as group:  # an own task group's, with cancellations in it
            err = ending(group)
            if isinstance(err, trio.Cancelled):  # every task of it cancelled: as one cancellation
                if not self._stopping:
                    self._fail("actor-raised", actor.name,
                               f"actor '{actor.name}' was cancelled outside any cancel scope it opened", actor)
                raise
            if isinstance(err, Exception):
                self._raised(actor, err)
            elif isinstance(err, NoYield):
                self._no_yield(actor.name, where(err), actor)
            else:
                self._interrupted_by(actor, err)
        except BaseException as exc:
            if real is not None:
                raise  # KeyboardInterrupt: the real-clock driver ends the run
            self._interrupted_by(actor, exc)
        finally:
            actor.done = True
            actor.waiting = False
            if real is not None:
                real.ended(actor)
        if not self._stopping and real is None:
            try:
                self._handoff(actor)
            except BaseException as exc:  # the chooser's own control flow (e.g. StopTest)
                self._reraise = exc
                self._fail("interrupted", type(exc).__name__, f"{type(exc).__name__} while scheduling", actor)
                self._wake_controller()

    def _raised(self, actor: _Actor, err: BaseException) -> None:
        """An actor ended with ``err``: a misuse (a model error at its line), an assertion, or a finding."""
        words = misuse(err, actor.name)
        if words is not None:  # the harness misused: the model's error at its line, never a finding
            self._fail("misuse", f"misuse in {actor.name}", words, actor)
        elif isinstance(err, AssertionError):
            self._fail("oracle", f"assertion in {actor.name}",
                       f"assertion failed in actor '{actor.name}' at {where(err)}: {err}", actor)
        else:
            self._fail(
                "actor-raised",
                f"{type(err).__name__} in {actor.name}",
                f"actor '{actor.name}' raised {type(err).__name__}: {err} (at {where(err)}). "
                "Fix the model, or catch the error where the upstream code does.",
                actor,
            )

    def _interrupted_by(self, actor: _Actor, exc: BaseException) -> None:
        """KeyboardInterrupt, SystemExit, or a control-flow exception of the code driving us (Hypothesis'
        StopTest): end the run cleanly, then re-raise it from run_once() outside Trio."""
        self._reraise = exc
        self._interrupted = isinstance(exc, KeyboardInterrupt)
        self._fail(
            "interrupted",
            type(exc).__name__,
            f"{type(exc).__name__} inside actor '{actor.name}' at step {self._step}; the run stopped there. "
            "Results found before it are kept; re-run with the same seed to continue.",
            actor,
        )

    def _register(
        self,
        actor: _Actor,
        label: str,
        key: str | None,
        rv: int | None,
        guard: Callable[[], bool] | None,
        ready_ns: int,
        idle: bool = False,
        window: float = 0.0,
        keep_order: bool = False,
        fresh: bool = False,
    ) -> None:
        if keep_order:
            # The continuation of the action just taken (an API response): canonically it comes next,
            # so it keeps the place in the canonical order of the action it continues.
            self._register_keep(actor, label, key, rv, window)
            return
        self._seq += 1
        actor.label = label
        actor.key = key
        actor.rv = rv
        actor.guard = guard
        actor.ready_ns = ready_ns
        since = actor.since_ns = self._now_ns if ready_ns <= self._now_ns else ready_ns
        latest = actor.latest_ns = later(since, window)
        actor.seq = self._seq
        actor.waiting = True
        actor.idle = idle
        actor.fresh = idle or fresh
        opt = actor.option = Option(actor.name, label, key, since / TICKS_PER_SECOND,
                                    latest / TICKS_PER_SECOND if latest < NEVER else math.inf)
        if window > self.max_window:
            self.max_window = window
        if self._wants_idents:
            opt.ident = self._ident(actor.name, label, key)

    def _register_keep(self, actor: _Actor, label: str, key: str | None, rv: int | None, window: float) -> None:
        actor.label = label
        actor.key = key
        actor.rv = rv
        actor.guard = None
        now = actor.ready_ns = self._now_ns
        latest = actor.latest_ns = later(now, window)
        actor.waiting = True
        actor.idle = False
        actor.fresh = False
        opt = actor.option = Option(actor.name, label, key, now / TICKS_PER_SECOND,
                                    latest / TICKS_PER_SECOND if latest < NEVER else math.inf)
        if window > self.max_window:
            self.max_window = window
        if self._wants_idents:
            opt.ident = self._ident(actor.name, label, key)

    def _ident(self, actor: str, label: str, key: str | None) -> Ident:
        triple = (actor, identity_label(label), key)
        n = self._occurrences.get(triple, 0) + 1
        self._occurrences[triple] = n
        return Ident(triple[0], triple[1], key, n)

    async def _yield(
        self,
        label: str,
        key: str | None = None,
        rv: int | None = None,
        guard: Callable[[], bool] | None = None,
        ready_ns: int | None = None,
        idle: bool = False,
        window: float = 0.0,
        keep_order: bool = False,
        fresh: bool = False,
    ) -> None:
        if self._real is not None:
            await self._real.wait(label, key, rv, guard, ready_ns, idle)
            return
        actor = self._current
        if actor is None or self._nursery is None or actor.task is not tl.current_task():
            from .._errors import NotInSimulation

            raise NotInSimulation(
                f"'{label}' was awaited outside a harness actor. Await harness primitives only from "
                "code spawned with world.spawn() or from the scenario function itself."
            )
        self._register(actor, label, key, rv, guard, self._now_ns if ready_ns is None else ready_ns, idle, window,
                       keep_order, fresh)
        self._handoff(actor)
        if actor.go:  # chosen again at once: its turn, without a Trio switch
            actor.go = False
            return
        await self._wait_turn(actor)

    async def _wait_turn(self, actor: _Actor) -> None:
        while True:
            if not actor.go:
                actor.task_parked = True
                value = await tl.wait_task_rescheduled(actor.abort_fn)
            else:
                value = None
            actor.go = False
            if value is _CANCEL:
                # A cancel scope around this wait fired: deliver it at a checkpoint.
                await tl.checkpoint()
                # Not cancelled after all (scope left); wait again for our turn.
                self._register(actor, actor.label, actor.key, actor.rv, actor.guard, self._now_ns, actor.idle,
                               fresh=actor.fresh)
                self._handoff(actor)
                continue
            return

    def _abort(self, actor: _Actor) -> tl.Abort:
        if self._stopping or (self._nursery is not None and self._nursery.cancel_scope.cancel_called):
            actor.task_parked = False
            actor.waiting = False
            return tl.Abort.SUCCEEDED
        # Keep control: the cancellation becomes an enabled action of its own.
        actor.cancel_pending = True
        if self._advancing and self._advance_scope is not None:
            self._advance_scope.cancel()
        return tl.Abort.FAILED

    # -------------------------------------------------------------- dispatch
    def _handoff(self, current: _Actor | None) -> None:
        """Pick the next action and resume it; called by the actor that yields."""
        if self._outsides and self._outside_stirred():  # a program outside must go quiet first: the controller
            # waits for it (one list test on the hot path when there is none)
            self._current = None
            self._wake_controller()
            return
        chosen = self._dispatch()
        if chosen is None:
            self._wake_controller()
        else:
            self._resume(chosen)

    def _resume(self, actor: _Actor) -> None:
        actor.waiting = False
        self._current = actor
        value: object = None
        if actor.cancel_pending:
            actor.cancel_pending = False
            value = _CANCEL
        if actor.held:  # woken by Trio and held off its run queue: back on it, with what Trio sent it
            actor.held = False
            actor.started = True
            if self._fp is not None:  # it continues from the step that woke it (see TaskAdopter.task_scheduled)
                self._fp.append(Access(f"wake {actor.name}", False, "woken"))
            assert actor.task is not None
            GLOBAL_RUN_CONTEXT.runner.runq.append(actor.task)
        elif actor.task_parked:
            actor.task_parked = False
            assert actor.task is not None
            tl.reschedule(actor.task, outcome.Value(value))
        else:
            actor.go = True

    def _wake_controller(self) -> None:
        if self._controller_parked and self._controller is not None:
            self._controller_parked = False
            tl.reschedule(self._controller)

    def _enabled(self) -> list[tuple[int, int, object]]:
        now = self._now_ns
        out: list[tuple[int, int, object]] = []
        for a in self._actors:
            if not a.waiting:
                continue
            if a.cancel_pending or (a.ready_ns <= now and (a.guard is None or a.guard())):
                out.append((a.since_ns, a.seq, a))
        timers = self._timers
        while timers and (timers[0].cancelled or timers[0].when_ns <= now):
            t = heapq.heappop(timers)
            if not t.cancelled:
                self._due.append(t)
        if self._due:
            self._due = [t for t in self._due if not t.cancelled]
            for t in self._due:
                out.append((t.when_ns, t.seq, t))
        if len(out) > 1:
            out.sort()  # (since, seq) is unique: the target is never compared
        return out

    def _dispatch(self) -> _Actor | None:
        """Run due timers and choose the next actor; None means 'controller, move time'."""
        chooser = self._chooser
        while True:
            if self._adopter is not None and self._adopter.woken:
                self._register_woken()
            if self._fp:
                self._flush_footprint()
            if self._observer is not None:
                # (self is the World: _Dispatch is one of its concerns)
                self._observer(self, _record(self._records[-1]) if self._records else None)  # type: ignore[arg-type]
            if self._violation is not None or self._ended:
                return None
            if self._invariants or self._eventually or self._bounds:
                self._check_oracles()
                if self._violation is not None:
                    return None
            enabled = self._enabled()
            if not enabled:
                return None
            n = len(enabled)
            now_ns = self._now_ns
            now = now_ns / TICKS_PER_SECOND
            urgent = None
            adopter = self._adopter
            if adopter is not None and adopter.urgent:  # (the hand-off's hot path looks only when one is pending)
                urgent = next((i for i, e in enumerate(enabled) if getattr(e[2], "urgent", False)), None)
            if urgent is not None:  # a mechanical wake-up (see MECHANICAL): no decision, it runs now
                enabled[urgent][2].urgent = False  # type: ignore[attr-defined]
                adopter.urgent -= 1  # type: ignore[union-attr]
                n, enabled = 1, [enabled[urgent]]
            can_wait = urgent is None
            for e in enabled:
                if e[2].latest_ns <= now_ns:  # type: ignore[attr-defined]
                    can_wait = False
                    break
            if n == 1 and not can_wait and not self._wants_idents:
                idx = 0
            else:
                options = [e[2].option for e in enabled]  # type: ignore[attr-defined]
                if self._outsides and urgent is None and self._awaiting(options):
                    return None  # (the controller waits for the program outside, then asks again)
                idx = chooser.schedule(options, now, can_wait)
                if n > 1 or can_wait:
                    self._choices.append(idx)
                if idx == n and can_wait:
                    self._step += 1
                    self._wait_target = ceil_ns(getattr(chooser, "wait_until", math.inf))
                    held = tuple(e[2].option for e in enabled[:3])  # type: ignore[attr-defined]
                    self._records.append(
                        (self._step, now, "scheduler", (held, n > 3), None, None, idx, n + 1, "wait", held[0])
                    )
                    return None
                if not 0 <= idx < n:
                    idx %= n
            target = enabled[idx][2]
            self._step += 1
            if now_ns != self._instant[0]:
                self._instant = (now_ns, self._step)
            elif self._step - self._instant[1] >= self.limits.max_steps_per_instant:
                self._fail(
                    "livelock",
                    "livelock",
                    f"at t={now:.9g}, {self._step - self._instant[1]:,} steps without virtual time passing; "
                    f"looping: {self._looping()}. Something re-triggers itself at once (a requeue after "
                    "a duration that rounds to nothing, two writers undoing each other): fix the loop, or raise "
                    "Limits(max_steps_per_instant=...) if it is meant to settle.",
                    None,
                )
                return None
            if self._step > self.limits.max_steps:
                self._fail(
                    "runaway",
                    "step limit",
                    f"the run took more than {self.limits.max_steps:,} steps without settling (t={now:.3f}); "
                    f"looping: {self._looping()}. If the scenario is periodic, set world.horizon (the virtual time "
                    "at which a run ends and its at_end checks run); otherwise fix the loop, or raise "
                    "Limits(max_steps=...).",
                    None,
                )
                return None
            instead = enabled[0][2].option if idx else None  # type: ignore[attr-defined]
            size = n + 1 if can_wait else n
            self._fp_step = self._step
            if isinstance(target, TimerHandle):
                self._records.append(
                    (self._step, now, target.actor, target.label, target.key, target.rv, idx, size, "timer", instead)
                )
                if self._continues is not None and not _harness_code(target.fn):
                    mem = self.memory_of(target.actor)  # a model's callback: it reads and writes its memory
                    if mem is not None and self._fp is not None:
                        self._fp.append(Access(mem))
                        self._fp.append(Access(mem, True, f"{target.actor}: {target.label}"))
                self._fire(target)
                continue
            actor: _Actor = target  # type: ignore[assignment]
            label = f"cancelled during '{actor.label}'" if actor.cancel_pending else actor.label  # (a deadline, a crash)
            self._records.append((self._step, now, actor.name, label, actor.key, actor.rv, idx, size, "run", instead))
            if self._continues is not None:  # program order, for a story: a step continues what its actor did
                prev = self._last_step_of.get(actor.name)
                if prev is not None and not actor.fresh:
                    self._continues[self._step] = prev
                self._last_step_of[actor.name] = self._step
                mem = self.memory_of(actor.name)
                if mem is not None and self._fp is not None:
                    self._fp.append(Access(mem))  # what it does may come from what its process remembers
            return actor

    def _awaiting(self, options: list[Option]) -> bool:
        """Whether a replay waits for a program outside the world before this decision: its recorded action is a
        request not arrived yet (``ReplayChooser.awaits``). Bounded: after :data:`AWAIT_ARRIVAL` real seconds at one
        decision the replay goes on without it (it diverges there, and says so), and awaits nothing more."""
        awaits = getattr(self._chooser, "awaits", None)
        if awaits is None or self._await_deadline < 0:
            return False
        if not awaits(options):
            self._await_deadline = 0.0
            return False
        now = real_monotonic()
        if not self._await_deadline:
            self._await_deadline = now + AWAIT_ARRIVAL
        elif now >= self._await_deadline:
            self._await_deadline = -1.0
            return False
        self._awaiting_outside = True
        return True

    def _looping(self) -> str:
        """The actors of the last 200 steps, busiest first, with their most frequent action: what loops."""
        counts: dict[str, dict[str, int]] = {}
        for rec in self._records[-200:]:
            actor, label = rec[2], rec[3]
            if isinstance(label, str):
                per = counts.setdefault(actor, {})
                per[label] = per.get(label, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:3]
        return "; ".join(f"{actor} ({max(per.items(), key=lambda kv: (kv[1], kv[0]))[0]!r}, "
                         f"{sum(per.values())} of the last 200 steps)" for actor, per in ranked) or "nothing"

    def _fire(self, timer: TimerHandle) -> None:
        """Run a due timer's callback (synchronously, as no actor: ``_who()`` is the timer's actor)."""
        timer.fired = True
        timer.cancelled = True
        previous, self._current = self._current, None
        self._current_timer = timer
        try:
            self._run_callback(timer)
        finally:
            self._current = previous
            self._current_timer = None

    def _run_callback(self, timer: TimerHandle) -> None:
        try:
            timer.fn()
        except AssertionError as exc:
            self._fail("oracle", f"assertion in {timer.actor}", f"assertion failed in timer '{timer.label}': {exc}", None)
        except Exception as exc:
            self._fail(
                "actor-raised",
                f"{type(exc).__name__} in {timer.actor}",
                f"timer '{timer.label}' raised {type(exc).__name__}: {exc} (at {where(exc)})",
                None,
            )
    def step(
        self, label: str, *, key: str | None = None, rv: int | None = None, window: float = 0.0, follows: bool = False,
        delay: float = 0.0,
    ) -> Awaitable[None]:
        """A yield point (``await world.step(...)``): the harness may run any other enabled action before this one.

        ``window`` > 0 lets a strategy postpone this step in virtual time by up to
        ``window`` seconds (an API response that comes late, for instance).
        ``follows=True`` marks the continuation of the step just taken (the
        response to a request): it keeps that step's place in the canonical
        order, so the canonical run continues at once, and any other order is
        a deviation. ``delay`` > 0: the step takes that long (it is enabled
        ``delay`` seconds from now; work that takes time, such as a request in a
        loop, see :attr:`steps_at_instant`). (A plain function returning the
        yield itself: one coroutine fewer per step on the hottest path.)
        """
        if delay > 0:
            return self._yield(label, key, rv, ready_ns=later(self._clock_ns(), delay), window=window,
                               keep_order=follows)
        return self._yield(label, key, rv, window=window, keep_order=follows)

    def _me(self) -> _Actor | None:
        """The actor whose code runs now (None in a timer's callback)."""
        return self._current if self._real is None else self._real.me()

    def _who(self) -> str:
        me = self._me()
        if me is not None:
            return me.name
        return self._current_timer.actor if self._current_timer is not None else "timer"

    def _point(self, label: str, key: str | None) -> Option:
        who = self._who()
        now = self._now_ns / TICKS_PER_SECOND
        opt = Option(who, label, key, now, now)
        if self._wants_idents:
            opt.ident = self._ident(who, label, key)
        return opt

    def choose(self, label: str, n: int) -> int:
        """A data choice in ``range(n)`` (a user operation, a rule); 0 is the default."""
        if n <= 1:
            return 0
        point = self._point(label, None)
        point.kind = "data"
        idx = self._chooser.choose(n, point)
        if not 0 <= idx < n:
            idx %= n
        self._choices.append(idx)
        self._step += 1
        self._records.append((self._step, self.now, self._who(), label, None, None, idx, n, "choose", None))
        return idx

    def fault_enabled(self, kind: str, default: bool = False) -> bool:
        """Whether faults of ``kind`` may be injected in this run (``default``: the component's own flag)."""
        kinds = self.fault_kinds
        return default if kinds is None else (kind in kinds or "*" in kinds)

    def fault(self, kind: str, label: str, *, key: str | None = None, default: bool = False) -> bool:
        """A fault point: True when the strategy injects the fault here.

        ``kind`` names the fault (``crash``, ``watch_drop``, ``ambiguous_write``,
        ...); the run's :attr:`fault_kinds` (or, when that is None, ``default``,
        the component's own flag) decides whether this point exists at all.
        ``label`` says in words what happens ("controller crashes before delete
        StatefulSet ns/x"); it names the fault in plans and reports. Strategies
        place faults under a budget, so a late fault point is as likely as an
        early one.

        The scenario's own actor (``main``: the test that builds the cluster and
        plays the user) gets no fault points: a fault in the test's setup is a
        broken test, not a controller bug. A model that wants the user's
        requests to fail spawns the user as an actor of its own.
        """
        kinds = self.fault_kinds
        if not (default if kinds is None else (kind in kinds or "*" in kinds)):
            return False
        if self._who() == MAIN_ACTOR:
            return False
        self._fault_points[kind] = self._fault_points.get(kind, 0) + 1
        point = self._point(label, key)
        point.kind = kind
        fired = bool(self._chooser.fault(point))
        self._choices.append(1 if fired else 0)
        if fired:
            self._faults_injected[kind] = self._faults_injected.get(kind, 0) + 1
            self._step += 1
            self._records.append((self._step, self.now, point.actor, label, key, None, 1, 2, "fault", None))
        return fired
