"""The sampling searches: random walks, PCT, small plans and the portfolio that takes turns among them.

Each draws choosers for the shared run loop (:class:`~._runner._Runner`) until a
run fails or the budget ends; the Hypothesis strategy (``_hypothesis.py``), the
exhaustive referee (``_exhaustive.py``) and Sieve's patterns (``_patterns.py``)
live in their own modules, and the portfolio calls on them in turn.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any

from ..sim import Entry, FaultPlacement, Hold, Ident, PCTChooser, PlanChooser, RandomChooser, RunOutcome
from ._exhaustive import Plan, _children, _siblings
from ._hypothesis import _hypothesis_chunk, _Pools
from ._patterns import PATTERNS, Aim, pattern_choosers
from ._runner import MAX_FAULTS, _failed, _mix, _Runner
from ._strategies import PCT, Portfolio, Random


def _placement(runner: _Runner, rng: random.Random) -> FaultPlacement:
    return FaultPlacement.draw(rng, runner.fault_kinds_seen, runner.max_fault_points or 16, MAX_FAULTS)


def _random_choosers(runner: _Runner, seed: int, start: int = 0) -> Iterator[RandomChooser]:
    for i in itertools.count(start):
        s = _mix(seed, i)
        yield RandomChooser(s, faults=_placement(runner, random.Random(s ^ 0x5EED)))


def _pct_choosers(runner: _Runner, strat: PCT, seen: dict[str, int], start: int = 0) -> Iterator[PCTChooser]:
    for i in itertools.count(start):
        # k (the step estimate) grows with the longest run so far
        seen["k"] = max(seen["k"], runner.max_steps_seen)
        s = _mix(strat.seed, i)
        chooser = PCTChooser(s, strat.depth, seen["k"], faults=_placement(runner, random.Random(s ^ 0x5EED)))
        yield chooser
        seen["actors"] = max(seen["actors"], chooser.actors_seen)


def _small_plan_choosers(runner: _Runner, seed: int) -> Iterator[PlanChooser]:
    """Plans of one or two entries, drawn from the referee's own tree in a seeded random order.

    A bug that needs two rare things at once (a crash at one request, then a
    LIST served from one old revision) is one plan of two entries, but a
    random walk must hit both in one run: p squared. This member draws the
    plans themselves: a level-1 plan (one hold, fault or pick the canonical
    run offered), without repetition, or a plan that extends a level-1 plan
    already run by one entry its run offered (a child, or a sibling "until"),
    with equal odds once there are some. Every draw takes a group first, then
    a plan of it: the kind of entry (hold, fault, pick), and for an extension
    also whether its point is one the first entry brought about (a restart's
    relist exists only after the crash) -- equal odds among the groups on
    offer, so the few fault points of a run are not drowned by its many holds
    and what an entry made possible is tried as often as what was there
    anyway. No model is special: the points are the run's own, as the
    exhaustive referee takes them, in a random order instead of breadth first
    (the idea of POS, Yuan et al., CAV 2018: randomise over events, not over a
    thread's turns).
    """
    rng = random.Random(_mix(seed, 0x51A1))
    root = PlanChooser(())
    yield root
    before = {i for i, _n in root.decisions} | {i for i, _k in root.fault_points} | {i for i, _n in root.data_points}
    level1 = _grouped(_children((), root), (), before)
    parents: list[dict[tuple[bool, str], list[Plan]]] = []  # per level-1 plan run: its extensions, grouped
    tried: set[frozenset[Entry]] = {frozenset()}
    while True:
        if any(level1.values()) and (not parents or rng.random() < 0.5):
            plan = _draw(rng, level1)
            chooser = PlanChooser(plan)
            tried.add(frozenset(plan))
            yield chooser
            if not chooser.inert:
                siblings, _skipped, _repeats = _siblings(plan, chooser, False)
                more = _grouped([p for p in (*siblings, *_children(plan, chooser)) if frozenset(p) not in tried],
                                plan, before)
                if any(more.values()):
                    parents.append(more)
            continue
        if not parents:  # a model with no choice at all: the canonical run again (the budget ends it)
            yield PlanChooser(())
            continue
        i = rng.randrange(len(parents))
        plan = _draw(rng, parents[i])
        if not any(parents[i].values()):
            parents.pop(i)
        if frozenset(plan) in tried:
            continue
        tried.add(frozenset(plan))
        yield PlanChooser(plan)


def _grouped(plans: list[Plan], base: Plan, before: set[Ident]) -> dict[tuple[bool, str], list[Plan]]:
    """Plans by (whether the entry they add to ``base`` is at a point the canonical run lacked, its kind)."""
    out: dict[tuple[bool, str], list[Plan]] = {}
    for p in plans:
        added = [e for e in p if e not in base] or list(p)
        e = added[0]
        point = e.what if isinstance(e, Hold) else e.at
        out.setdefault((point not in before, e.kind), []).append(p)
    return out


def _draw(rng: random.Random, groups: dict[tuple[bool, str], list[Plan]]) -> Plan:
    """One plan, removed from ``groups``: a group first (equal odds among those left), then a plan of it."""
    keys = sorted(k for k, v in groups.items() if v)
    plans = groups[rng.choice(keys)]
    return plans.pop(rng.randrange(len(plans)))


def _search_random(runner: _Runner, strat: Random) -> RunOutcome | None:
    return runner.run_many(_random_choosers(runner, strat.seed))


def _search_pct(runner: _Runner, strat: PCT) -> tuple[RunOutcome | None, float]:
    seen = {"actors": 1, "k": 50}
    found = runner.run_many(_pct_choosers(runner, strat, seen))
    if found is not None:
        return found, 0.0
    return None, 1.0 / (seen["actors"] * seen["k"] ** (strat.depth - 1))


def _search_portfolio(runner: _Runner, strat: Portfolio) -> tuple[RunOutcome | None, str | None]:
    """Random, PCT, Hypothesis, the patterns and small plans in turns (see :class:`Portfolio`), one budget.

    No single strategy's blind spot is the default's: the random walk finds
    deep interleavings cheaply, PCT finds few-step-ordering bugs with a
    guarantee, Hypothesis finds bugs that need one long postponement, and
    the pattern members and small plans find two rare things at once (a
    crash, then a stale LIST) that a walk needs p squared to hit: the
    patterns where the run's own writes point (an object re-created under
    its name, a write between two of one reconcile), the small plans
    anywhere in the referee's tree. A pattern member whose candidates are
    spent draws small plans for the rest of its turn, and takes no turn after.
    """
    from ._hypothesis import _PlanRun  # a PlanChooser that notes windows (time holds)

    seen = {"actors": 1, "k": 50}
    rand = _random_choosers(runner, strat.seed)
    pct = _pct_choosers(runner, PCT(strat.seed ^ 0x9E37, 3), seen)
    small = _small_plan_choosers(runner, strat.seed)
    aim = Aim()
    patterns: dict[str, Iterator[PlanChooser] | None] = {m: pattern_choosers(m, aim, strat.seed) for m in PATTERNS}
    pools: _Pools | None = None
    hyp_round = 0
    while True:
        for member in ("random", "pct", "hypothesis", *patterns, "small plans"):
            if runner.exhausted():
                return None, None
            if member in patterns and patterns[member] is None:
                continue  # its candidates are spent: its turn is the small plans' again
            turn = strat.chunk if member in ("random", "pct") else strat.chunk // 2
            cap = runner.runs + turn
            if member in patterns:
                found, spent, by_small = _pattern_turn(runner, patterns[member], small, cap)
                if spent:
                    patterns[member] = None
                if found is not None:
                    return found, "small plans" if by_small else member
                continue
            if member == "hypothesis":
                if pools is None:
                    base = _PlanRun()
                    out = runner.run(base)
                    if _failed(out):
                        return out, member
                    pools = _Pools(base)
                    if not (pools.held or pools.faults or pools.data):
                        continue
                limit = min(turn, _remaining(runner))
                if limit <= 0:
                    return None, None
                found = _hypothesis_chunk(runner, pools, _mix(strat.seed, 7919 + hyp_round), limit)
                hyp_round += 1
            else:
                it = {"random": rand, "pct": pct, "small plans": small}[member]
                found = runner.run_many(_take_until(it, functools.partial(_reached, runner, cap)))
            if found is not None:
                return found, member


def _pattern_turn(
    runner: _Runner, member: Iterator[PlanChooser] | None, small: Iterator[PlanChooser], cap: int
) -> tuple[RunOutcome | None, bool, bool]:
    """One turn of a pattern member: its own plans, then (once they are spent) small plans to the turn's end.

    Returns the failing run, if any; whether the member's candidates are spent; and whether the failing
    run was a small plan's (drawn after they were).
    """
    spent = [member is None]

    def draws() -> Iterator[PlanChooser]:
        while runner.runs < cap:
            if not spent[0]:
                assert member is not None
                nxt = next(member, None)
                if nxt is not None:
                    yield nxt
                    continue
                spent[0] = True
            yield next(small)

    # run_many stops at the first failing run, the last one drawn: it is a small plan's when the member was spent
    found = runner.run_many(draws())
    return found, spent[0], spent[0] and found is not None


def _reached(runner: _Runner, cap: int) -> bool:
    return runner.runs >= cap


def _remaining(runner: _Runner) -> int:
    b = runner.budget
    if b.runs is not None:
        return b.runs - runner.runs
    return 1 << 30


def _take_until(it: Iterator[Any], stop: Callable[[], bool]) -> Iterator[Any]:
    while not stop():
        yield next(it)
