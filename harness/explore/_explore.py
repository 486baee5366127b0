"""Searching the space of runs: strategies, plans, shrinking, the minimality referee.

``explore(scenario, strategy=..., budget=..., faults=..., **params) -> Result``.

What is explored
----------------
Order (which enabled action runs next), **time** (an informer event, a timer
or an API response may come anywhere inside its window, so "let virtual time
pass" is a choice too), **faults** (crash points, watch drops, ambiguous
writes, stale lists, ...: see ``faults``) and data choices (user operations).

Strategies
----------
``portfolio``   the default: random, PCT, Hypothesis, Sieve's three patterns
                (stale, unobserved and intermediate state: plans aimed by the
                canonical run's own writes and fault points) and small plans
                (plans of one or two entries drawn from the referee's tree)
                interleaved within the budget; the result names the member
                that found it.
``random``      a random walk: uniform among released actions, deliveries late
                inside their windows with a per-run probability, faults placed
                uniformly over the run's fault points for a swarm subset of kinds.
``pct``         PCT (Burckhardt et al. 2010) with the same lateness and faults.
``hypothesis``  Hypothesis draws a *plan* (a short list of named holds, faults
                and picks over the actions of the canonical run, or of a run
                that met something new), so a late delivery is as cheap to
                draw as an early one; all examples run in one ``trio.run``.
``exhaustive``  every plan with 0, 1, ..., k entries, breadth first, extended
                from the runs it has seen: the referee that proves a
                counterexample minimal and a fixed model clean up to ``k``.
``canonical``   the canonical run only (every choice 0).
``replay``      one run under a given list of positional choices.

Whatever found a failure, the harness writes it down as a plan
(:class:`~harness.sim.ConvertingChooser`), shrinks the plan (faults first, then
holds, then shorter holds), and asks the ``exhaustive`` referee for the first
failing plan in its order with the fewest entries: the *canonical minimum*,
the same counterexample whichever seed or strategy found the bug.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from .._options import STRATEGY_FORMS as _STRATEGY_FORMS
from .._options import parse_fault_spec, parse_strategy
from ..sim import (
    RUNAWAY_KINDS,
    VERDICTS,
    ConvertingChooser,
    Entry,
    Fault,
    FaultPlacement,
    Hold,
    Ident,
    Limits,
    PCTChooser,
    Pick,
    PlanChooser,
    RandomChooser,
    ReplayChooser,
    RunOutcome,
    Violation,
    canonical_plan,
    entry_from_json,
)
from ._counterexample import Counterexample, Scenario, scenario_ref
from ._exhaustive import Plan, ShardRunner, _children, _dedup, _PlanSearch, _search_exhaustive, _siblings
from ._hypothesis import _hypothesis_chunk, _Pools, _search_hypothesis
from ._patterns import PATTERNS, Aim, pattern_choosers
from ._runner import (
    MAX_FAULTS,
    Budget,
    LevelProgress,
    _failed,
    _mix,
    _plural,
    _Runner,
    describe_faults,
    model_error_of,
)


# ------------------------------------------------------------- strategies
@dataclass(frozen=True)
class Strategy:
    """Base of the strategy values; ``name`` is what the CLI and plugin accept."""

    name = "strategy"

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True)
class Random(Strategy):
    seed: int = 0
    name = "random"

    def describe(self) -> str:
        return f"random(seed={self.seed})"


@dataclass(frozen=True)
class PCT(Strategy):
    seed: int = 0
    depth: int = 3
    name = "pct"

    def describe(self) -> str:
        return f"pct(seed={self.seed}, depth={self.depth})"


@dataclass(frozen=True)
class Hypothesis(Strategy):
    seed: int = 0
    name = "hypothesis"

    def describe(self) -> str:
        return f"hypothesis(seed={self.seed})"


@dataclass(frozen=True)
class Exhaustive(Strategy):
    """Every plan of up to ``max_deviations`` entries; ``reduce=False`` also runs every reordering of
    actions the reduction finds independent (see ``World.share_memory``)."""

    max_deviations: int = 2
    reduce: bool = True
    name = "exhaustive"

    def describe(self) -> str:
        off = "" if self.reduce else ", reduce=False"
        return f"exhaustive(max_deviations={self.max_deviations}{off})"


@dataclass(frozen=True)
class Portfolio(Strategy):
    """Random, PCT, Hypothesis, Sieve's patterns and small plans in turns, within one budget.

    A round is ``chunk`` runs of random, ``chunk`` of PCT, half a chunk of
    Hypothesis, half a chunk of each pattern member whose candidates are not
    spent (``harness/explore/_patterns.py``: a few dozen plans at most, so
    they take turns in the first rounds only), and half a chunk of small
    plans; once the patterns are spent, a round is what it was before they
    joined, and the two walks that find most races first keep their share.
    """

    seed: int = 0
    chunk: int = 40
    name = "portfolio"

    def describe(self) -> str:
        return f"portfolio(seed={self.seed})"


@dataclass(frozen=True)
class Canonical(Strategy):
    name = "canonical"


@dataclass(frozen=True)
class Replay(Strategy):
    """One run of a stored counterexample: its plan when it has one, else its positional choices.

    What the stored file says about minimality carries over (``proved``, ``proof``): a replay
    reruns a counterexample, it does not search or shrink it again.
    """

    choices: tuple[int, ...] = ()
    plan: tuple[Entry, ...] | None = None
    proved: bool | None = None
    proof: str = ""
    #: the trace file replayed and its counterexample: the run is checked against it step by step, and
    #: the result reads "replayed trace FILE: same violation" or "... diverged at step N because ..."
    source: str | None = None
    expected: Counterexample | None = field(default=None, compare=False)
    name = "replay"

    @classmethod
    def of(cls, cx: Counterexample, source: str) -> Replay:
        """A replay of ``cx`` (loaded from ``source``) that checks the run against it."""
        return cls(tuple(cx.choices), cx.plan, cx.proved_minimal, cx.proof, source, cx)


STRATEGIES = ("portfolio", "random", "pct", "hypothesis", "exhaustive", "canonical")
DEFAULT_STRATEGY = "portfolio"
STRATEGY_FORMS = _STRATEGY_FORMS  # harness/_options.py: the one list, shared with the CLI and the plugin


def make_strategy(spec: str | Strategy, *, seed: int = 0) -> Strategy:
    """``"portfolio"``, ``"random"``, ``"pct"``, ``"pct:4"``, ``"hypothesis"``, ``"exhaustive:3"``, ``"canonical"``."""
    if isinstance(spec, Strategy):
        return spec
    parse_strategy(spec)  # the one validation (harness/_options.py): a UsageError naming the accepted forms
    name, _, arg = spec.strip().partition(":")
    try:
        if name == "portfolio" and not arg:
            return Portfolio(seed)
        if name == "random" and not arg:
            return Random(seed)
        if name == "pct" and (not arg or int(arg) >= 1):
            return PCT(seed, int(arg) if arg else 3)
        if name == "hypothesis" and not arg:
            return Hypothesis(seed)
        if name == "exhaustive" and (not arg or int(arg) >= 0):
            return Exhaustive(int(arg) if arg else 2)
        if name == "canonical" and not arg:
            return Canonical()
    except ValueError:
        pass
    raise UsageError(f"unknown strategy {spec!r}; use one of {STRATEGY_FORMS}")


# ------------------------------------------------------------------ faults
def parse_faults(spec: str | Sequence[str] | frozenset[str] | None) -> frozenset[str] | None:
    """``"default"``/None (each component's own flags), ``"all"``, ``"none"``, or ``"crash,watch_drop"``.

    A frozenset is taken as it is (a model may place kinds of its own); text and
    lists are checked against the kinds this project places.
    """
    if spec is None:
        return None
    if isinstance(spec, frozenset):
        return spec
    return parse_fault_spec(spec if isinstance(spec, str) else list(spec))


# ----------------------------------------------------------------- result
@dataclass
class Result:
    """The outcome of a search; ``outcome`` reads as a sentence."""

    scenario: str
    params: dict[str, Any]
    strategy: str
    verdict: str  # "found" | "proved-clean" | "none-found" | "interrupted" | "runaway"
    runs: int
    steps: int
    seconds: float
    counterexample: Counterexample | None = None
    proved_bound: int | None = None
    pct_bound: float | None = None
    #: the run that first failed and the seconds until then (search only, before shrinking)
    first_found_run: int | None = None
    first_found_seconds: float | None = None
    #: runs the shrinker and the minimality proof took after the search found it (None: nothing found or shrunk)
    shrink_runs: int | None = None
    proof_runs: int | None = None
    notes: list[str] = field(default_factory=list)
    #: the portfolio member (or strategy) whose run first failed
    found_by: str | None = None
    #: what was explored, in words: fault kinds and the widest lag window seen
    space: str = ""
    #: for a replay of a trace file: the file, and where the run left it (None: it did not)
    replayed: str | None = None
    divergence: str | None = None
    #: plans the exhaustive referee's reduction left out (reorderings of independent actions)
    skipped: int = 0
    #: a run that never ended (step limit, livelock), in words with the phase that met it; its own finding
    runaway: str | None = None
    #: plan entries (``--plan``, :func:`run_plan`) that never applied, each with the closest identities the run
    #: had: a plan that did not apply is not a clean run
    unapplied: list[str] = field(default_factory=list)
    #: fault kinds asked for that no run met a point of, each with what would place one
    faults_without_points: list[str] = field(default_factory=list)
    #: the model's own failure that stopped the search (``main`` raised or waited forever, an actor blocked
    #: outside the harness: see :func:`model_error_of`), in words; never the race
    model_error: str | None = None

    @property
    def found(self) -> bool:
        """A violation of the model's oracles was found (a runaway or a model error is not one)."""
        return self.counterexample is not None and self.verdict not in ("runaway", "model-error")

    @property
    def outcome(self) -> str:
        if self.replayed is not None:
            # a replay is one run of a stored trace, not a search: no run count, no seed
            if self.divergence is not None:
                return f"replayed trace {self.replayed}: {self.divergence}"
            cx = self.counterexample
            assert cx is not None  # a trace that did not diverge ended with its violation
            return (
                f"replayed trace {self.replayed}: same violation: {cx.violation.describe()} in {cx.deviations} "
                f"{_plural(cx.deviations, 'deviation')}, {cx.steps} steps"
            )
        where = f"explored {self.runs:,} {_plural(self.runs, 'run')} in {self.seconds:.2f} s"
        if self.verdict == "model-error" and self.counterexample is not None:
            return (f"{where}: model error: {self.model_error} (run {self.runs:,}, step "
                    f"{self.counterexample.steps:,}; not the race, not shrunk: replay it to see where)")
        if self.verdict == "runaway" and self.counterexample is not None:
            cx = self.counterexample
            return (f"{where}: {cx.violation.describe()}: a run that never ends is its own finding, not the race "
                    f"(step {cx.steps:,}; replay it to see the loop)")
        if self.counterexample is not None:
            cx = self.counterexample
            proof = f" ({cx.proof})" if cx.proof else ""
            pre = f"{where}, interrupted" if self.verdict == "interrupted" else where
            by = f" by {self.found_by}" if self.found_by else ""
            return (
                f"{pre}: found{by} {cx.violation.describe()} in {cx.deviations} "
                f"{_plural(cx.deviations, 'deviation')}{proof}, {cx.steps} steps"
            )
        if self.verdict == "proved-clean":
            return (
                f"proved clean up to {self.proved_bound} {_plural(self.proved_bound or 0, 'deviation')} "
                f"(holds and faults; {self.space}; {self.runs:,} {_plural(self.runs, 'run')}, {self.seconds:.2f} s"
                f"{_skipped(self.skipped)})"
            )
        if self.verdict == "interrupted":
            cut = f"; {self.notes[0]}" if self.notes and "exhaustive search was interrupted" in self.notes[0] else ""
            return f"{where}: interrupted before any violation was found{cut}"
        bound = f"; PCT bound per run >= {self.pct_bound:.2e}" if self.pct_bound else ""
        early = f"; {self.notes[0]}" if self.notes and "exhaustive search stopped" in self.notes[0] else ""
        space = f" ({self.space})" if self.space else ""
        return f"{where}{space}: no violation (not a proof){bound}{early}"

    def __str__(self) -> str:
        return self.outcome


def _skipped(n: int) -> str:
    return f"; {n:,} {_plural(n, 'reordering')} of independent actions skipped" if n else ""


# --------------------------------------------------------------- searches
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
                siblings, _skipped = _siblings(plan, chooser, False)
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


# --------------------------------------------------------------- shrinking
#: what a counterexample says when it was shrunk but its minimality was left for later (``prove_minimal=False``)
UNCHECKED = "minimality not checked"

@dataclass
class _Minimum:
    out: RunOutcome
    plan: tuple[Entry, ...] | None  # None: positional only (the plan did not reproduce the run)
    proved: bool | None = None
    proof: str = ""
    #: the runner's run count when the shrinker ended (the rest, up to the end of minimize, is the proof)
    shrunk_at: int | None = None


def to_plan(runner: _Runner, out: RunOutcome) -> tuple[RunOutcome, tuple[Entry, ...]] | None:
    """Write a positional run down as a plan, and check the plan makes the same failure."""
    conv = ConvertingChooser(out.choices)
    runner.run(conv)
    plan = conv.result()
    again = runner.run(PlanChooser(plan))
    if out.violation is not None and out.violation.same_bug(again.violation):
        return again, plan
    return None


def shrink_plan(
    runner: _Runner, out: RunOutcome, plan: tuple[Entry, ...], *, max_runs: int = 2000
) -> tuple[RunOutcome, tuple[Entry, ...]]:
    """Hypothesis-style passes over a plan while the same bug fails.

    Delete each entry (faults first), then pairs; then shorten each hold
    (until an earlier action that ran while it held, or no hold at all when the
    release comes anyway); keep a candidate when it is smaller, or as small and
    shorter. Returns the best run and its plan (inert entries dropped).
    """
    assert out.violation is not None
    target = out.violation
    best, best_plan = out, plan
    budget = [max_runs]

    def attempt(cand: tuple[Entry, ...]) -> bool:
        nonlocal best, best_plan
        if budget[0] <= 0 or runner.exhausted():
            return False
        budget[0] -= 1
        chooser = PlanChooser(cand)
        res = runner.run(chooser)
        if not target.same_bug(res.violation):
            return False
        applied = canonical_plan(e for e in cand if e not in chooser.inert)
        if (len(applied), res.steps) < (len(best_plan), best.steps):
            best, best_plan = res, applied
            return True
        return False

    improved = True
    while improved and budget[0] > 0:
        improved = False
        order = sorted(range(len(best_plan)), key=lambda i: (best_plan[i].kind != "fault", -i))
        for i in order:
            if i < len(best_plan) and attempt(best_plan[:i] + best_plan[i + 1 :]):
                improved = True
                break
        if improved:
            continue
        for i, j in itertools.combinations(range(len(best_plan)), 2):
            if budget[0] <= 0:
                break
            if attempt(tuple(e for k, e in enumerate(best_plan) if k not in (i, j))):
                improved = True
                break
    # Shorter holds: release earlier (a plan of the same size that runs fewer steps, or reads simpler).
    for i, e in enumerate(best_plan):
        if not isinstance(e, Hold) or budget[0] <= 0:
            continue
        chooser = PlanChooser(best_plan)
        runner.run(chooser)
        for y in _dedup(chooser.during.get(e.what, [])):
            if y == e.until:
                break
            cand = canonical_plan([*best_plan[:i], Hold(e.what, y), *best_plan[i + 1 :]])
            if attempt(cand):
                break
    return best, best_plan


def _shrink_positional(runner: _Runner, out: RunOutcome, *, max_runs: int = 1000) -> RunOutcome:
    """Set positional deviations back to canonical while the same bug fails (fallback when no plan reproduces)."""
    assert out.violation is not None
    target = out.violation
    best = out
    spent = 0
    improved = True
    while improved and spent < max_runs and not runner.exhausted():
        improved = False
        choices = best.choices
        for i in reversed(range(len(choices))):
            if choices[i] == 0:
                continue
            trial = [*choices[:i], 0, *choices[i + 1 :]]
            cand = runner.run(ReplayChooser(trial))
            spent += 1
            if target.same_bug(cand.violation) and cand.deviations < best.deviations:
                best = cand
                improved = True
                break
            if spent >= max_runs:
                break
    return best


def minimize(
    runner: _Runner,
    out: RunOutcome,
    *,
    plan: tuple[Entry, ...] | None = None,
    proof_budget: int = 5000,
    prove: bool = True,
    shrink: bool = True,
) -> _Minimum:
    """From any failing run to the canonical minimum (or as close as the budgets allow, said in words)."""
    assert out.violation is not None
    # The shrinker has its own budget (shrink_plan's max_runs), not what the search left of its own: a bug
    # found at run 845 of 1,000 was shrunk for 155 runs and kept a 38-entry plan, whose proof then ran minutes.
    shrinker = runner.sub(None, phase="shrink")
    try:
        if plan is None:
            written = to_plan(runner, out)
            if written is None and shrink:
                out = _shrink_positional(shrinker, out)
                written = to_plan(runner, out)
            if written is None:
                return _Minimum(out, None, None, "not proved minimal: the run could not be written as a plan")
            out, plan = written
        if shrink:
            out, plan = shrink_plan(shrinker, out, plan)
    finally:
        runner.absorb(shrinker)
    shrunk_at = runner.runs
    if runner.runaway is not None:
        return _Minimum(out, plan, None, f"not proved minimal: a run of the {runner.runaway_in} ran away ("
                        f"{_runaway_words(runner.runaway)}); the counterexample stands", shrunk_at=shrunk_at)
    if not prove:
        return _Minimum(out, plan, None, UNCHECKED, shrunk_at=shrunk_at)
    target = out.violation
    assert target is not None
    k = len(plan)
    sub, search = _proof_search(runner, _proof_budget(proof_budget, k), k, target)
    if sub.runaway is not None:
        return _Minimum(out, plan, None, "not proved minimal: a run of the minimality proof ran away ("
                        f"{_runaway_words(sub.runaway)}); the counterexample stands", shrunk_at=shrunk_at)
    if search.found is not None:
        found_out, found_plan = search.found
        return _Minimum(found_out, found_plan, True, "proved minimal", shrunk_at=shrunk_at)
    covered = search.complete_levels
    if covered >= k - 1:
        return _representative(runner, out, plan, proof_budget, shrunk_at)
    what = "interrupted" if sub.interrupted else f"stopped after {sub.runs:,} {_plural(sub.runs, 'run')}"
    if covered < 0:
        return _Minimum(out, plan, None, f"not proved minimal: nothing covered ({what}; {search.coverage()})",
                        shrunk_at=shrunk_at)
    return _Minimum(
        out,
        plan,
        None,
        f"not proved minimal: no counterexample with <= {covered} {_plural(covered, 'deviation')}; "
        f"{covered + 1} not covered: {what} ({search.coverage()})",
        shrunk_at=shrunk_at,
    )


def _runaway_words(out: RunOutcome) -> str:
    """"livelock at t=1, ..." cut to its first clause: what a proof met, said beside the counterexample it keeps."""
    v = out.violation
    assert v is not None
    return f"{VERDICTS[v.kind]} at step {v.step:,}, t={v.time:g}"


def _proof_search(
    runner: _Runner, budget: int, k: int, target: Violation | None, faults: int | None = None
) -> tuple[_Runner, _PlanSearch]:
    """The referee on a sub-runner of ``budget`` runs looking for ``target``; its runs count in ``runner``."""
    sub = runner.sub(budget, phase="minimality proof")
    # the minimality proof (no fault restriction) tries the last level's likely plans first: its first failing
    # plan is a function of the model alone, and it is met without running the whole level
    search = _PlanSearch(sub, k, target, phase="proof", faults=faults, likely_first=faults is None)
    try:
        search.run()
    finally:
        runner.absorb(sub)
    return sub, search


def _representative(runner: _Runner, out: RunOutcome, plan: tuple[Entry, ...], budget: int, shrunk_at: int) -> _Minimum:
    """Proved minimal, but the budget cut the last level: which plan of that size stands for the bug.

    The shrunk plan depends on the run the search happened to find (another
    seed, another plan of the same size). The referee's order restricted to
    plans of the same size and the same number of faults is short (a crash
    and a stale LIST: the fault points of one run and of its children), so
    its first failing plan is found within the proof's budget and is the
    same whatever found the bug first. When that pass is cut too, the shrunk
    plan stays, and the proof says so.
    """
    k, f = len(plan), sum(1 for e in plan if isinstance(e, Fault))
    sub, search = _proof_search(runner, budget, k, out.violation, faults=f)
    kinds = f"{k} {'entry' if k == 1 else 'entries'}, {f} {_plural(f, 'fault')}"
    if search.found is not None and sub.runaway is None:
        found_out, found_plan = search.found
        return _Minimum(found_out, found_plan, True, f"proved minimal (the first failing plan of {kinds} in the "
                        "referee's order)", shrunk_at=shrunk_at)
    return _Minimum(out, plan, True, f"proved minimal (not the first of {kinds}: that search was cut)",
                    shrunk_at=shrunk_at)


def prove_found(
    scenario: Scenario, cx: Counterexample, *, proof_budget: int = 5000, shard_runner: ShardRunner | None = None
) -> tuple[Counterexample, int]:
    """The minimality proof of a counterexample found and shrunk elsewhere, with its referee's shards on
    ``shard_runner``; the proved counterexample and the runs the proof took.

    ``hunt --cluster`` shrinks on the workers and proves here: a proof is
    tens of thousands of runs in waves of shards, which one worker would run
    alone, and shards that found the same bug would each prove it again. A
    counterexample already judged (proved, cut, a runaway, a model error), or
    one with no plan, is returned as it is; so is one whose plan no longer
    fails the same way (it cannot be proved here).
    """
    if cx.plan is None or cx.proved_minimal is not None or cx.proof not in ("", UNCHECKED):
        return cx, 0
    runner = _Runner(scenario, dict(cx.params), cx.limits, Budget(runs=None), cx.faults)
    runner.shard_runner = shard_runner
    runner.runaway_in = "minimality proof"
    out = runner.run(PlanChooser(cx.plan))
    if not cx.violation.same_bug(out.violation):
        return cx, runner.runs
    best = minimize(runner, out, plan=cx.plan, proof_budget=proof_budget, shrink=False)
    proved = Counterexample.from_outcome(cx.scenario, cx.params, best.out, strategy=cx.strategy, seed=cx.seed,
                                         limits=cx.limits, plan=best.plan, faults=cx.faults)
    proved.proved_minimal, proved.proof, proved.meta = best.proved, best.proof, dict(cx.meta)
    return proved, runner.runs


#: the proof's budget grows with the counterexample's entries up to this many: a plan the shrinker could not
#: bring under it has levels no budget completes, and its proof would otherwise run for minutes
PROOF_ENTRIES_CAP = 3


def _proof_budget(base: int, k: int) -> int:
    """More runs for a larger bound (each level multiplies the plans to cover), up to :data:`PROOF_ENTRIES_CAP`."""
    return base * min(max(1, k), PROOF_ENTRIES_CAP)


# ------------------------------------------------------------------ explore
def explore(
    scenario: Scenario,
    *,
    strategy: str | Strategy = DEFAULT_STRATEGY,
    budget: Budget | str | int | None = None,
    seed: int = 0,
    limits: Limits = Limits(),
    faults: str | Sequence[str] | frozenset[str] | None = None,
    shrink_found: bool = True,
    prove_minimal: bool = True,
    proof_budget: int = 5000,
    progress: Callable[[int, bool], None] | None = None,
    level_progress: LevelProgress | None = None,
    shard_runner: ShardRunner | None = None,
    **params: Any,
) -> Result:
    """Search ``scenario(world, **params)`` for a violation.

    ``faults``: ``None``/``"default"`` (each component's own fault flags),
    ``"all"``, ``"none"`` or kinds such as ``"crash,watch_drop"``. A found run
    is written as a plan, shrunk, and, with ``prove_minimal``, the
    ``exhaustive`` referee looks (within ``proof_budget`` runs per entry, for three entries at most) for
    the first failing plan with the fewest entries; the counterexample says
    what the proof covered. ``progress(runs, found)`` is called after every
    run of the search (a live display hook; it must not raise).

    ``budget``: None gives a sampling strategy 1000 runs and ``exhaustive``
    no cap at all: it runs to its verdict. A budget that cuts ``exhaustive``
    (or the proof, ``proof_budget``) is named in the result with the levels it
    completed and the plans of the level it cut. ``level_progress(phase, level,
    done, known)`` is called after every plan the referee runs;
    ``shard_runner`` is where the referee's shards run (this process when
    None; ``hunt --cluster`` passes a Dask one, ``harness/_cluster.py``).
    """
    strat = make_strategy(strategy, seed=seed)
    unbounded = Budget(runs=None) if isinstance(strat, Exhaustive) else Budget()  # a proof runs to its verdict
    b = unbounded if budget is None else Budget.parse(budget)
    kinds = parse_faults(faults)
    runner = _Runner(scenario, params, limits, b, kinds)
    runner.progress = progress
    runner.level_progress = level_progress
    runner.shard_runner = shard_runner
    ref = scenario_ref(scenario)
    found: RunOutcome | None = None
    found_plan: tuple[Entry, ...] | None = None
    found_by: str | None = None
    early_note: str | None = None
    pct_bound: float | None = None
    proved: int | None = None
    replay_divergence: str | None = None
    skipped = 0
    plan_notes: list[str] = []
    unapplied: list[str] = []
    try:
        if isinstance(strat, Random):
            found = _search_random(runner, strat)
        elif isinstance(strat, PCT):
            found, pct_bound = _search_pct(runner, strat)
            pct_bound = pct_bound or None
        elif isinstance(strat, Hypothesis):
            found = _search_hypothesis(runner, strat.seed)
        elif isinstance(strat, Portfolio):
            found, found_by = _search_portfolio(runner, strat)
        elif isinstance(strat, Exhaustive):
            search = _search_exhaustive(runner, strat.max_deviations, strat.reduce)
            skipped = search.skipped
            if search.found is not None:
                found, found_plan = search.found
            elif search.complete_levels >= strat.max_deviations:
                proved = strat.max_deviations
            elif runner.interrupted:
                early_note = f"the exhaustive search was interrupted: {search.coverage()}"
            else:
                early_note = (
                    f"the exhaustive search stopped when the budget ({b}) ran out: {search.coverage()}; "
                    "raise the budget, or leave it out, for a proof"
                )
        elif isinstance(strat, Canonical):
            out = runner.run(PlanChooser())
            found, found_plan = (out, ()) if _failed(out) else (None, None)
        elif isinstance(strat, Replay):
            if strat.plan is not None:
                chooser = PlanChooser(strat.plan)
                out = runner.run(chooser)
                found_plan = strat.plan
                # a misspelt identity must not pass as a canonical run: say which entries did nothing
                unapplied = unapplied_entries(strat.plan, chooser)
                plan_notes = [f"entry never applied: {u}" for u in unapplied]
            else:
                out = runner.run(ReplayChooser(list(strat.choices)))
            found = out if _failed(out) else None
            if strat.expected is not None:
                diverged = strat.expected.divergence(out)
                replay_divergence = diverged[1] if diverged is not None else None
        else:  # pragma: no cover - make_strategy guards this
            raise UsageError(f"unknown strategy {strat!r}")
    except KeyboardInterrupt:
        runner.interrupted = True
    if found is not None and found_by is None:
        found_by = strat.name
    chosen = runner.found_chooser[0] if runner.found_chooser and runner.found_chooser[1] is found else None
    if found is not None and found_plan is None and isinstance(chosen, PlanChooser):
        # a drawn plan failed (small plans, Hypothesis): the plan is the run, no rewriting from positions
        found_plan = canonical_plan(e for e in chosen.plan if e not in chosen.inert)
    first_found_run = runner.first_failure[0] if found is not None and runner.first_failure else None
    first_found_seconds = runner.first_failure[1] if found is not None and runner.first_failure else None
    cx: Counterexample | None = None
    shrink_runs: int | None = None
    proof_runs: int | None = None
    notes: list[str] = [early_note] if early_note else []
    notes.extend(plan_notes)
    if found is not None:
        best = _Minimum(found, found_plan, None, "not proved minimal (interrupted)")
        if isinstance(strat, (Exhaustive, Canonical)) and found_plan is not None:
            best = _Minimum(found, found_plan, True, "proved minimal")
            shrink_runs = proof_runs = 0  # the referee's first failing plan is its own minimum
        elif isinstance(strat, Replay):
            best = _Minimum(found, found_plan, strat.proved, strat.proof or "not proved minimal (a replay)")
        elif not runner.interrupted and not isinstance(strat, Replay):
            searched = runner.runs
            try:
                best = minimize(
                    runner,
                    found,
                    plan=found_plan,
                    proof_budget=proof_budget,
                    prove=prove_minimal,
                    shrink=shrink_found,
                )
            except KeyboardInterrupt:
                runner.interrupted = True
            shrunk = best.shrunk_at if best.shrunk_at is not None else runner.runs
            shrink_runs, proof_runs = shrunk - searched, runner.runs - shrunk
        cx = Counterexample.from_outcome(
            ref, params, best.out, strategy=strat.describe(), seed=seed, limits=limits, plan=best.plan, faults=kinds
        )
        if isinstance(strat, Replay) and strat.expected is not None:
            # the replayed counterexample keeps the strategy and seed that found it: a replay draws none
            cx.strategy, cx.seed, cx.meta = strat.expected.strategy, strat.expected.seed, dict(strat.expected.meta)
        cx.proved_minimal = best.proved
        cx.proof = best.proof
        if best.proved is None and best.proof:
            notes.append(best.proof)
    model_error: str | None = None
    if runner.model_broken is not None and cx is None:  # the model's own failure: kept as it ran, never the race
        model_error = model_error_of(runner.model_broken.violation)
        cx = Counterexample.from_outcome(ref, params, runner.model_broken, strategy=strat.describe(), seed=seed,
                                         limits=limits, plan=None, faults=kinds)
        cx.proof = "a model error: not shrunk"
    runaway: str | None = None
    if runner.runaway is not None and model_error is None:
        ran = runner.runaway
        assert ran.violation is not None
        runaway = f"{ran.violation.describe()} (a run of the {runner.runaway_in})"
        if cx is None:  # the runaway is the finding: kept as it ran, never shrunk or proved as if it were the bug
            cx = Counterexample.from_outcome(ref, params, ran, strategy=strat.describe(), seed=seed, limits=limits,
                                             plan=None, faults=kinds)
            cx.proof = "a runaway: not shrunk"
        else:
            notes.append(f"{runaway}: met after the counterexample was found, which stands")
    verdict = (
        "interrupted"
        if runner.interrupted
        else "model-error"
        if model_error is not None
        else "runaway"
        if runaway is not None and cx is not None and ran_away_cx(cx)
        else "found"
        if cx is not None
        else "proved-clean"
        if proved is not None
        else "none-found"
    )
    return Result(
        scenario=ref,
        params=params,
        strategy=strat.describe(),
        verdict=verdict,
        runs=runner.runs,
        steps=runner.steps,
        seconds=runner.elapsed(),
        counterexample=cx,
        proved_bound=proved,
        pct_bound=pct_bound,
        first_found_run=first_found_run,
        first_found_seconds=first_found_seconds,
        shrink_runs=shrink_runs,
        proof_runs=proof_runs,
        notes=notes,
        found_by=found_by,
        space=runner.space(),
        replayed=strat.source if isinstance(strat, Replay) else None,
        divergence=replay_divergence,
        skipped=skipped,
        runaway=runaway,
        model_error=model_error,
        unapplied=unapplied,
        faults_without_points=runner.faults_without_points(),
    )


def read_plan(raw: Any, source: str = "the plan") -> tuple[Entry, ...]:
    """Plan entries from their JSON form: a list of entries, or an object with a ``"plan"`` list (a trace file).

    Each entry is ``{"fault": IDENT}``, ``{"hold": IDENT, "until": IDENT | seconds | null}`` or
    ``{"pick": IDENT, "value": N}``, and an IDENT is ``[actor, label, key, n]`` as a trace's plan
    prints it (guide: "Plans by hand"). Raises :class:`UsageError` saying what is wrong.
    """
    entries = raw.get("plan") if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise UsageError(f"{source} is not a plan: expected a JSON list of entries (or an object with a \"plan\" "
                         "list, as a trace file has), e.g. [{\"fault\": [\"operator/reconcile/worker-1\", "
                         "\"operator crashes before delete StatefulSet default/rmq-server\", "
                         "\"StatefulSet default/rmq-server\", 1]}]")
    out = []
    for i, e in enumerate(entries, 1):
        try:
            out.append(entry_from_json(e))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{source}: entry {i} is not a plan entry ({exc}). An entry is {{\"fault\": IDENT}}, "
                             "{\"hold\": IDENT, \"until\": IDENT or seconds or null} or {\"pick\": IDENT, \"value\": N}, "
                             "an IDENT is [actor, label, key, occurrence]: copy one from a trace's \"plan\" or from "
                             "`python -m harness replay FILE --story`.") from None
    return canonical_plan(out)


def run_plan(scenario: Scenario, plan: Any, *, limits: Limits = Limits(),
             faults: str | Sequence[str] | frozenset[str] | None = "all", **params: Any) -> Result:
    """Run ``scenario`` once under a hand-written ``plan`` and report it like any counterexample.

    ``plan``: entries (:class:`Hold`, :class:`Fault`, :class:`Pick`) or their JSON
    form (:func:`read_plan`). Fault points exist only for the fault kinds on,
    so ``faults`` defaults to ``"all"``: a plan that names a crash runs it
    whatever the model's own flags say. Entries that never applied are said in
    the result's notes ("entry never applied: ..."), so a misspelt identity is
    not silently a canonical run. Not shrunk and not proved minimal.
    """
    entries = canonical_plan(plan) if all(isinstance(e, (Hold, Fault, Pick)) for e in plan) else read_plan(plan)
    strat = Replay(plan=entries, proof="a hand-written plan: not shrunk, not proved minimal")
    return explore(scenario, strategy=strat, budget=1, limits=limits, faults=faults, **params)


def unapplied_entries(plan: Sequence[Entry], chooser: PlanChooser) -> list[str]:
    """"entry 3 'hold informer/Pod: ...' never occurred; the closest identities: ..." for each inert entry.

    The closest identities come from what the run had (actions that ran, fault
    points and data choices it passed), so a typo in a label or an occurrence
    number reads as one.
    """
    import difflib

    seen: dict[str, Ident] = {}
    for ident in [*chooser.ran, *(i for i, _ in chooser.fault_points), *(i for i, _ in chooser.data_points)]:
        seen.setdefault(ident.describe(), ident)
    inert = set(chooser.inert)
    out = []
    for i, e in enumerate(plan, 1):
        if e not in inert:
            continue
        target = e.what if isinstance(e, Hold) else e.at
        close = difflib.get_close_matches(target.describe(), list(seen), n=3, cutoff=0.4)
        why = "never occurred" if target not in seen.values() else "changed nothing (its action ran as it would)"
        hint = f"; the closest identities: {'; '.join(repr(c) for c in close)}" if close and why == "never occurred" else ""
        out.append(f"entry {i} {e.describe()} {why}{hint}")
    return out


def ran_away_cx(cx: Counterexample) -> bool:
    """Whether a counterexample is a run that never ended (see :func:`ran_away`)."""
    return cx.violation.kind in RUNAWAY_KINDS


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


__all__ = [
    "PCT",
    "STRATEGIES",
    "STRATEGY_FORMS",
    "Budget",
    "Canonical",
    "Exhaustive",
    "Hypothesis",
    "Portfolio",
    "Random",
    "Replay",
    "Result",
    "Strategy",
    "describe_faults",
    "explore",
    "make_strategy",
    "minimize",
    "parse_faults",
    "prove_found",
    "read_plan",
    "run_plan",
    "shrink_plan",
    "to_plan",
]
