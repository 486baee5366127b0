"""Choosers: the per-run decision makers behind the strategies.

Two encodings of a run live here, and one converts into the other:

* **positional** (:class:`RandomChooser`, :class:`PCTChooser`,
  :class:`ReplayChooser`): every decision is an index into the enabled set
  (``len(options)`` = let time pass), every fault point a 0/1. Cheap to draw,
  exact to replay, but a deviation's meaning depends on all the ones before it.
* **plans** (:class:`PlanChooser`): the canonical run plus named entries
  (:mod:`harness.sim._plan`), which survive deletion and count one late
  delivery once. :class:`ConvertingChooser` replays a positional run and writes
  down the plan that reproduces it, so whatever strategy found a failure, it is
  shrunk and judged as a plan.

The random walk postpones deliveries by drawing, per run, how likely an action
with a window is to be late, and then a *release time* inside its window for
each such action: a watch event can fall seconds behind while a controller's
timers fire, without needing one coin per step to keep it waiting. Faults are
placed under a budget: a run draws how many faults it gets and at which of its
fault points (uniform over the points, estimated from earlier runs), and which
fault kinds are on at all (swarm testing, Groce et al. ISSTA 2012), instead of
a 50/50 coin at every point that nearly always fires at the first one.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._choice import Option
from ._plan import Entry, Fault, Hold, Ident, Pick, canonical_plan


class FaultPlacement:
    """Which fault points of one run fire: by index among the points of the chosen kinds."""

    __slots__ = ("_i", "kinds", "targets")

    def __init__(self, kinds: frozenset[str] | None, targets: Iterable[int]) -> None:
        self.kinds = kinds  # None = every kind
        self.targets = frozenset(targets)
        self._i = 0

    def fires(self, kind: str) -> bool:
        if self.kinds is not None and kind not in self.kinds:
            return False
        self._i += 1
        return self._i in self.targets

    @classmethod
    def draw(
        cls, rng: random.Random, kinds_seen: Sequence[str], points_seen: int, max_faults: int
    ) -> FaultPlacement:
        """A swarm subset of kinds and 0..max_faults fault indexes, uniform over the points seen so far."""
        if max_faults <= 0 or not kinds_seen or rng.random() < 0.5:
            return cls(frozenset(), ())
        kinds = frozenset(k for k in kinds_seen if rng.random() < 0.5) or frozenset([rng.choice(list(kinds_seen))])
        n = max(1, points_seen)
        count = rng.randint(1, max_faults)
        return cls(kinds, (rng.randint(1, n) for _ in range(count)))


class _Perturbed:
    """Release times inside windows and fault placement, shared by the random walk and PCT."""

    def __init__(self, rng: random.Random, faults: FaultPlacement | None, lag: float | None) -> None:
        self._rng = rng
        self._faults = faults
        # Swarm over lateness too: some runs keep every delivery on time, some make many late.
        self._lag = lag if lag is not None else rng.choice((0.0, 0.1, 0.3, 0.7))
        self._release: dict[Option, float] = {}

    def _released(self, o: Option, now: float) -> bool:
        if o.latest <= now or o.latest <= o.nominal:
            return True
        r = self._release.get(o)
        if r is None:
            r = o.nominal
            if self._lag and self._rng.random() < self._lag:
                r = o.nominal + self._rng.random() * (o.latest - o.nominal)
            self._release[o] = r
        return r <= now

    def _candidates(self, options: Sequence[Option], now: float) -> list[int] | None:
        """Indices of the released options; None when every option is (no window open: the common case)."""
        for o in options:
            if o.latest > now and o.latest > o.nominal:
                break
        else:
            return None
        return [i for i, o in enumerate(options) if self._released(o, now)]

    def choose(self, n: int, point: Option) -> int:
        return self._rng.randrange(n)

    def fault(self, point: Option) -> bool:
        return self._faults is not None and self._faults.fires(point.kind)


class RandomChooser(_Perturbed):
    """Uniform over the released enabled actions; time passes when none is released."""

    def __init__(self, seed: int, *, faults: FaultPlacement | None = None, lag: float | None = None) -> None:
        super().__init__(random.Random(seed), faults, lag)

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        cands = self._candidates(options, now)
        if cands is None:
            n = len(options)
            return self._rng.randrange(n) if n > 1 else 0
        if not cands:
            return len(options) if can_wait else 0
        return cands[self._rng.randrange(len(cands))] if len(cands) > 1 else cands[0]


class PCTChooser(_Perturbed):
    """Probabilistic Concurrency Testing (Burckhardt et al., ASPLOS 2010).

    Each actor gets a random priority above ``depth``; ``depth - 1`` change
    points are drawn uniformly in ``[1, k]`` steps. The highest-priority released
    actor runs; at the i-th change point the running actor's priority drops to
    ``i``. A bug of depth ``d`` is found with probability at least
    ``1 / (n * k**(d-1))`` per run (``n`` actors, ``k`` steps). Fault points are
    placed like change points (uniform over the run's points), and deliveries
    are late as in the random walk.
    """

    def __init__(
        self, seed: int, depth: int, k: int, *, faults: FaultPlacement | None = None, lag: float | None = None
    ) -> None:
        rng = random.Random(seed)
        self._depth = max(1, depth)
        self._k = max(1, k)
        self._changes = sorted(rng.randint(1, self._k) for _ in range(self._depth - 1))
        super().__init__(rng, faults, lag)
        self._prio: dict[str, float] = {}
        self._step = 0
        self.actors_seen = 0

    def _priority(self, actor: str) -> float:
        p = self._prio.get(actor)
        if p is None:
            p = self._depth + 1 + self._rng.random() * 1_000_000
            self._prio[actor] = p
            self.actors_seen += 1
        return p

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        cands = self._candidates(options, now)
        if cands is None:
            cands = list(range(len(options)))
        elif not cands:
            return len(options) if can_wait else 0
        self._step += 1
        best = max(cands, key=lambda i: self._priority(options[i].actor))
        for j, cp in enumerate(self._changes):
            if cp == self._step:
                self._prio[options[best].actor] = float(j + 1)
                best = max(cands, key=lambda i: self._priority(options[i].actor))
        return best


class ReplayChooser:
    """Replays a list of positional decisions; past its end every decision is canonical (0).

    Given the ``trace`` the choices were recorded with, it follows the recorded *actions*: where the recorded
    position now holds another action but the recorded one is offered elsewhere, that one runs. In a run inside the
    world the two never differ; with operator processes outside it (``harness.operators``) they do, since which of
    their requests have arrived by a decision is the OS's timing, and an index alone would then replay another
    action. Data choices and faults stay positional (their meaning does not depend on arrivals).
    """

    def __init__(self, choices: Sequence[int], trace: Iterable[Any] | None = None) -> None:
        self._choices = list(choices)
        self._i = 0
        self.clamped = 0  #: how many recorded choices were out of range on replay
        #: decisions where the recorded action was offered at another position, and taken there
        self.followed = 0
        self._expected: list[Any] | None = None
        self._at = 0
        if trace is not None:
            self._expected = [r for r in trace if r.kind in _DECISION_RECORDS]
            self.wants_identities = True  # the world then asks at every step, so the records stay in step

    def _next(self, n: int) -> int:
        i = self._i
        self._i += 1
        if i >= len(self._choices):
            return 0
        c = self._choices[i]
        if c >= n:
            self.clamped += 1
            return c % n
        return c

    def _record(self) -> Any:
        """The next recorded decision, or None past the trace (or without one)."""
        expected = self._expected
        if expected is None or self._at >= len(expected):
            return None
        self._at += 1
        return expected[self._at - 1]

    def awaits(self, options: Sequence[Option]) -> bool:
        """Whether the next recorded decision ran an action that is not among ``options`` (yet): with a program
        outside the world, its request may still be on the way (the world then waits for it, a bounded while)."""
        expected = self._expected
        if expected is None or self._at >= len(expected):
            return False
        was = expected[self._at]
        return was.kind == "run" and not any(_is(o, was) for o in options)

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        n = len(options)
        was = self._record()
        if n == 1 and not can_wait:  # no decision (the world records none)
            return 0
        c = self._next(n + (1 if can_wait else 0))
        if was is None:
            return c
        if was.kind == "wait":
            return n if can_wait else c
        if c < n and _is(options[c], was):
            return c
        for i, o in enumerate(options):
            if _is(o, was):
                self.followed += 1
                return i
        return c

    def choose(self, n: int, point: Option) -> int:
        self._record()
        return self._next(n)

    def fault(self, point: Option) -> bool:
        fired = self._next(2) == 1
        if fired:
            self._record()
        return fired


def _is(option: Option, record: Any) -> bool:
    """Whether ``option`` is the action a trace ``record`` ran (its actor and label)."""
    return bool(option.actor == record.actor and option.label == record.label)


#: the kinds of trace records a decision of a chooser makes, one each (a fault point only when it fired)
_DECISION_RECORDS = frozenset({"run", "timer", "wait", "choose", "fault"})


class PlanChooser:
    """Runs the canonical order except where a plan entry says otherwise.

    At each decision the first enabled action that no active hold covers runs;
    when every enabled action is held, the first one whose window has closed
    runs (a hold never stalls a run), else virtual time passes. It also records
    what a search needs to extend the plan: the actions chosen at decisions,
    the fault points and data choices passed, and, per hold, what ran while it
    held its action. With ``footprints=True`` (the exhaustive referee's
    reduction) it also keeps what each action read and wrote of shared state;
    every other user leaves it off, and the world then records none.
    """

    wants_identities = True

    def __init__(self, plan: Iterable[Entry] = (), *, footprints: bool = False) -> None:
        #: the world records footprints (``World.touch``) only for a chooser that asks
        self.wants_footprints = footprints
        self.plan = canonical_plan(plan)
        self._holds: dict[Ident, Hold] = {}
        self._faults: set[Ident] = set()
        self._picks: dict[Ident, int] = {}
        for e in self.plan:
            if isinstance(e, Hold):
                self._holds[e.what] = e
            elif isinstance(e, Fault):
                self._faults.add(e.at)
            else:
                self._picks[e.at] = e.value
        self._ran: set[Ident] = set()
        self.wait_until = math.inf
        #: entries that changed something in this run (the others were inert)
        self.applied: set[Entry] = set()
        #: (chosen action, number of alternatives incl. waiting) at every decision with a choice
        self.decisions: list[tuple[Ident, int]] = []
        #: actions in the order they ran (every step)
        self.ran: list[Ident] = []
        self.fault_points: list[tuple[Ident, str]] = []
        self.data_points: list[tuple[Ident, int]] = []
        #: hold target -> actions that ran while it was held
        self.during: dict[Ident, list[Ident]] = {}
        #: per action in ``ran``: the shared state it read and wrote, ((resource, wrote?), ...)
        self.footprints: list[tuple[tuple[object, bool], ...]] = []
        #: actor name -> its process (None: may share memory with any), as the world saw it
        self.process_of: Callable[[str], str | None] = _one_process
        #: process -> whether it records every access to its memory (``World.share_memory(..., recorded=True)``)
        self.recorded: Callable[[str | None], bool] = _nothing_recorded
        #: with footprints: per action in ``ran``, the virtual time it ran at, and per held
        #: action, the time it was first passed over (a reordering that also moves an
        #: action across a time jump is not a swap of two actions)
        self.times: list[float] = []
        self.held_at: dict[Ident, float] = {}
        #: with footprints: positions in ``ran`` before which the run waited for time to pass
        self.waited: set[int] = set()

    def _active(self, h: Hold, now: float) -> bool:
        u = h.until
        if u is None:
            return True
        if isinstance(u, float):
            return now < u
        return u not in self._ran

    def _pick(self, options: Sequence[Option], now: float, can_wait: bool, held: list[Ident]) -> int:
        forced = -1
        holds = self._holds
        for i, o in enumerate(options):
            h = holds.get(o.ident) if holds else None  # type: ignore[arg-type]
            if h is None or not self._active(h, now):
                return i
            held.append(o.ident)  # type: ignore[arg-type]
            if forced < 0 and o.latest <= now:
                forced = i
        if forced >= 0:
            return forced
        if can_wait:
            return len(options)
        return 0

    def _ran_one(self, options: Sequence[Option], idx: int, held: list[Ident], can_wait: bool) -> None:
        n = len(options)
        if idx >= n:
            return
        ident = options[idx].ident
        assert ident is not None
        if n > 1 or can_wait:
            self.decisions.append((ident, n + (1 if can_wait else 0)))
        for x in held:
            if x != ident:
                self.applied.add(self._holds[x])
                self.during.setdefault(x, []).append(ident)
        self._ran.add(ident)
        self.ran.append(ident)
        self.footprints.append(())

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        held: list[Ident] = []
        idx = self._pick(options, now, can_wait, held)
        if idx == len(options):
            self.wait_until = min(
                (h.until for x in held if isinstance((h := self._holds[x]).until, float)),
                default=math.inf,
            )
            for x in held:
                self.applied.add(self._holds[x])
            if self.wants_footprints:
                self._timed(held, now, ran=False)
                self.waited.add(len(self.ran))
            return idx
        self._ran_one(options, idx, held, can_wait)
        if self.wants_footprints:
            self._timed(held, now, ran=True)
        return idx

    def _timed(self, held: list[Ident], now: float, ran: bool) -> None:
        """For the reducing referee: when the chosen action ran, and when each held one was first passed over."""
        if ran:
            self.times.append(now)
        for x in held:
            self.held_at.setdefault(x, now)

    def footprint(self, touched: tuple[tuple[object, bool], ...], process_of: Callable[[str], str | None],
                  recorded: Callable[[str | None], bool] | None = None) -> None:
        """What the last action read and wrote of shared state (called by the world before the next decision)."""
        self.process_of = process_of
        if recorded is not None:
            self.recorded = recorded
        if self.footprints:
            self.footprints[-1] = self.footprints[-1] + touched

    def choose(self, n: int, point: Option) -> int:
        assert point.ident is not None
        self.data_points.append((point.ident, n))
        v = self._picks.get(point.ident, 0)
        if v:
            self.applied.add(Pick(point.ident, v))
        return v % n

    def fault(self, point: Option) -> bool:
        assert point.ident is not None
        self.fault_points.append((point.ident, point.kind))
        if point.ident in self._faults:
            self.applied.add(Fault(point.ident))
            return True
        return False

    @property
    def inert(self) -> list[Entry]:
        """Entries of the plan that never changed anything in this run."""
        return [e for e in self.plan if e not in self.applied]


def _one_process(actor: str) -> str | None:
    return None


class PlanReplayChooser(PlanChooser):
    """A plan's run replayed: the plan's chooser inside the world, the recorded run's actions once a program outside it
    takes part.

    In a run inside the world the plan and the run it recorded are one (the plan picks, at every decision, the
    action the record holds). With operator processes (``harness.operators``) which of their requests have
    arrived by a decision is the OS's timing: a plan picks the first action not held among those arrived, so a
    request that arrives before another one did in the recorded run is taken first, and the run leaves its trace
    (a test process's POST overtaken by its operator's first LIST). From the first decision the world makes with
    a program outside it (the world then asks :meth:`awaits`), this follows the recorded run as
    :class:`ReplayChooser` does: its actions where they now stand, a request not arrived yet waited for. A
    :class:`ReplayChooser` is kept in step from the start, so it takes over at the right record.
    """

    def __init__(self, plan: Iterable[Entry], choices: Sequence[int], trace: Iterable[Any]) -> None:
        super().__init__(plan)
        self._replay = ReplayChooser(choices, trace)
        self._following = False

    def awaits(self, options: Sequence[Option]) -> bool:
        self._following = True
        return self._replay.awaits(options)

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        recorded = self._replay.schedule(options, now, can_wait)
        planned = super().schedule(options, now, can_wait)
        if not self._following:
            return planned
        self.wait_until = math.inf  # (a recorded wait lasts until the next action is due, as in ReplayChooser)
        return recorded

    def choose(self, n: int, point: Option) -> int:
        recorded = self._replay.choose(n, point)
        planned = super().choose(n, point)
        return recorded if self._following else planned

    def fault(self, point: Option) -> bool:
        recorded = self._replay.fault(point)
        planned = super().fault(point)
        return recorded if self._following else planned


class ConvertingChooser(PlanChooser):
    """Replays positional decisions and writes down the plan that makes the same run.

    Each time the actual choice is not what the plan so far would pick, the
    action the plan would pick is held until the chosen one runs (a later
    pass-over of the same action replaces its hold, so a delivery passed over
    six times is one entry). Letting time pass opens holds on everything
    enabled; the next action that runs closes them.
    """

    def __init__(self, choices: Sequence[int], trace: Iterable[Any] | None = None) -> None:
        super().__init__(())
        self._replay = ReplayChooser(choices, trace)
        self._open: list[Ident] = []

    def _active(self, h: Hold, now: float) -> bool:
        return h.what in self._open or super()._active(h, now)

    def awaits(self, options: Sequence[Option]) -> bool:
        """:meth:`ReplayChooser.awaits` of the run it writes down."""
        return self._replay.awaits(options)

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        n = len(options)
        actual = self._replay.schedule(options, now, can_wait)
        if actual == n:
            for o in options:
                assert o.ident is not None
                if o.ident not in self._holds or not self._active(self._holds[o.ident], now):
                    self._holds[o.ident] = Hold(o.ident, None)
                    self._open.append(o.ident)
            return n
        chosen = options[actual].ident
        assert chosen is not None
        if self._open:
            for x in self._open:
                self._holds[x] = Hold(x, chosen) if x != chosen else Hold(x, float(now))
            self._open = []
        for _ in range(n + 1):
            held: list[Ident] = []
            p = self._pick(options, now, can_wait, held)
            if p == actual:
                break
            if p >= n:  # the chosen action is itself held: its hold is over by now
                self._holds.pop(chosen, None)
                continue
            other = options[p].ident
            assert other is not None
            self._holds[other] = Hold(other, chosen)
        self._ran_one(options, actual, [], can_wait)
        return actual

    def choose(self, n: int, point: Option) -> int:
        v = self._replay.choose(n, point)
        if v:
            assert point.ident is not None
            self._picks[point.ident] = v
        return v

    def fault(self, point: Option) -> bool:
        fired = self._replay.fault(point)
        if fired:
            assert point.ident is not None
            self._faults.add(point.ident)
        return fired

    def result(self) -> tuple[Entry, ...]:
        """The plan written down so far (call after the run)."""
        entries: list[Entry] = [h for h in self._holds.values() if h.what not in self._open]
        entries += [Fault(f) for f in self._faults]
        entries += [Pick(k, v) for k, v in self._picks.items()]
        return canonical_plan(entries)


__all__ = [
    "ConvertingChooser", "FaultPlacement", "PCTChooser", "PlanChooser", "RandomChooser", "ReplayChooser",
]


def _nothing_recorded(_process: str | None) -> bool:
    return False
