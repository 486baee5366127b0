"""Searching the space of interleavings: strategies, shrinking, the minimality referee.

``explore(scenario, strategy=..., budget=..., **params) -> Result``.

Strategies
----------
``random``      uniform choice among enabled actions, one derived seed per run.
``pct``         PCT (Burckhardt et al. 2010); the result reports the per-run bound.
``hypothesis``  choices drawn one at a time from Hypothesis (``st.data()``), so
                Hypothesis' shrinker works on them; ``Phase.explain`` is off.
``exhaustive``  every run with 0, 1, ..., k deviations from the canonical order,
                breadth-first by deviation count: the referee that proves a
                counterexample minimal and a fixed model clean up to ``k``.
``replay``      one run under a given list of choices.

Whatever found a failure, the harness then shrinks it by setting deviations
back to the canonical choice while the same oracle still fails, and (by
default) asks ``exhaustive`` whether fewer deviations can fail at all.
"""

from __future__ import annotations

import itertools
import re
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from ..sim import Limits, Option, PCTChooser, RandomChooser, ReplayChooser, RunOutcome, run_batch, run_once
from ._counterexample import Counterexample, Scenario, scenario_ref


# ----------------------------------------------------------------- budget
@dataclass(frozen=True)
class Budget:
    """How long a search may go on: a number of runs, wall seconds, or both."""

    runs: int | None = 1000
    seconds: float | None = None

    @classmethod
    def parse(cls, text: str | int | Budget) -> Budget:
        """``"500"`` = 500 runs, ``"30s"`` = 30 seconds."""
        if isinstance(text, Budget):
            return text
        if isinstance(text, int):
            return cls(runs=text)
        m = re.fullmatch(r"\s*(\d+)\s*", text)
        if m:
            return cls(runs=int(m.group(1)))
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*s\s*", text)
        if m:
            return cls(runs=None, seconds=float(m.group(1)))
        raise UsageError(f"budget {text!r} is not RUNS (e.g. 500) or SECONDSs (e.g. 30s)")

    def __str__(self) -> str:
        parts = []
        if self.runs is not None:
            parts.append(f"{self.runs} runs")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        return " / ".join(parts) or "unbounded"


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
    max_deviations: int = 2
    name = "exhaustive"

    def describe(self) -> str:
        return f"exhaustive(max_deviations={self.max_deviations})"


@dataclass(frozen=True)
class Replay(Strategy):
    choices: tuple[int, ...] = ()
    name = "replay"


STRATEGIES = ("random", "pct", "hypothesis", "exhaustive")
DEFAULT_STRATEGY = "random"


def make_strategy(spec: str | Strategy, *, seed: int = 0) -> Strategy:
    """``"random"``, ``"pct"``, ``"pct:4"``, ``"hypothesis"``, ``"exhaustive"``, ``"exhaustive:3"``."""
    if isinstance(spec, Strategy):
        return spec
    name, _, arg = spec.partition(":")
    try:
        if name == "random" and not arg:
            return Random(seed)
        if name == "pct":
            return PCT(seed, int(arg) if arg else 3)
        if name == "hypothesis" and not arg:
            return Hypothesis(seed)
        if name == "exhaustive":
            return Exhaustive(int(arg) if arg else 2)
    except ValueError:
        pass
    raise UsageError(
        f"unknown strategy {spec!r}; use one of random, pct[:DEPTH], hypothesis, exhaustive[:MAX_DEVIATIONS]"
    )


# ----------------------------------------------------------------- result
@dataclass
class Result:
    """The outcome of a search; ``outcome`` reads as a sentence."""

    scenario: str
    params: dict[str, Any]
    strategy: str
    verdict: str  # "found" | "proved-clean" | "none-found" | "interrupted"
    runs: int
    steps: int
    seconds: float
    counterexample: Counterexample | None = None
    proved_bound: int | None = None
    pct_bound: float | None = None
    #: the run that first failed and the seconds until then (search only, before shrinking)
    first_found_run: int | None = None
    first_found_seconds: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return self.counterexample is not None

    @property
    def outcome(self) -> str:
        where = f"explored {self.runs:,} interleavings in {self.seconds:.2f} s"
        if self.counterexample is not None:
            cx = self.counterexample
            minimal = " (proved minimal)" if cx.proved_minimal else ""
            pre = f"{where}, interrupted" if self.verdict == "interrupted" else where
            return (
                f"{pre}: found {cx.violation.describe()} in {cx.deviations} deviation"
                f"{'s' if cx.deviations != 1 else ''}{minimal}, {cx.steps} steps"
            )
        if self.verdict == "proved-clean":
            return f"proved clean up to {self.proved_bound} deviations ({self.runs:,} interleavings, {self.seconds:.2f} s)"
        if self.verdict == "interrupted":
            return f"{where}: interrupted before any violation was found"
        bound = f"; PCT bound per run >= {self.pct_bound:.2e}" if self.pct_bound else ""
        early = f"; {self.notes[0]}" if self.notes and "exhaustive search stopped" in self.notes[0] else ""
        return f"{where}: no violation (not a proof){bound}{early}"

    def __str__(self) -> str:
        return self.outcome


# ----------------------------------------------------------------- runner
class _Runner:
    def __init__(self, scenario: Scenario, params: dict[str, Any], limits: Limits, budget: Budget) -> None:
        self.scenario = scenario
        self.params = params
        self.limits = limits
        self.budget = budget
        self.runs = 0
        self.steps = 0
        self.started = time.perf_counter()
        self.interrupted = False
        self.max_steps_seen = 0
        #: run number and elapsed seconds of the first failing run (before any shrinking)
        self.first_failure: tuple[int, float] | None = None
        #: called after every run with (runs, failed so far?) -- for live progress displays
        self.progress: Callable[[int, bool], None] | None = None

    def run_many(self, choosers: Iterator[Any]) -> RunOutcome | None:
        """Runs in one ``trio.run`` until one fails or the budget is spent; the failing run, if any."""
        found: list[RunOutcome] = []

        def keep_going(out: RunOutcome) -> bool:
            self._account(out)
            if _failed(out):
                found.append(out)
                return False
            return not self.exhausted()

        if self.exhausted():
            return None
        try:
            run_batch(self.scenario, choosers, keep_going, params=self.params, limits=self.limits)
        except KeyboardInterrupt:
            self.runs += 1
            self.interrupted = True
            raise
        return found[0] if found else None

    def _account(self, out: RunOutcome) -> None:
        self.runs += 1
        if self.first_failure is None and _failed(out):
            self.first_failure = (self.runs, self.elapsed())
        if self.progress is not None:
            self.progress(self.runs, self.first_failure is not None)
        n = out.steps
        self.steps += n
        if n > self.max_steps_seen:
            self.max_steps_seen = n
        if out.interrupted:
            self.interrupted = True

    def run(self, chooser: Any) -> RunOutcome:
        try:
            out = run_once(self.scenario, chooser, params=self.params, limits=self.limits)
        except KeyboardInterrupt:
            self.runs += 1
            self.interrupted = True
            raise
        self._account(out)
        return out

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def exhausted(self) -> bool:
        b = self.budget
        if self.interrupted:
            return True
        if b.runs is not None and self.runs >= b.runs:
            return True
        return b.seconds is not None and self.elapsed() >= b.seconds


def _failed(out: RunOutcome) -> bool:
    return out.violation is not None and out.violation.kind != "interrupted"


# --------------------------------------------------------------- searches
def _search_random(runner: _Runner, strat: Random) -> RunOutcome | None:
    return runner.run_many(RandomChooser(_mix(strat.seed, i)) for i in itertools.count())


def _search_pct(runner: _Runner, strat: PCT) -> tuple[RunOutcome | None, float]:
    seen = {"actors": 1, "k": 50}

    def choosers() -> Iterator[PCTChooser]:
        for i in itertools.count():
            # k (the step estimate) grows with the longest run so far
            seen["k"] = max(seen["k"], runner.max_steps_seen)
            chooser = PCTChooser(_mix(strat.seed, i), strat.depth, seen["k"])
            yield chooser
            seen["actors"] = max(seen["actors"], chooser.actors_seen)

    found = runner.run_many(choosers())
    if found is not None:
        return found, 0.0
    return None, 1.0 / (seen["actors"] * seen["k"] ** (strat.depth - 1))


class _Found(Exception):
    def __init__(self, out: RunOutcome) -> None:
        super().__init__(out.violation.describe() if out.violation else "failure")
        self.out = out


class _HypothesisChooser:
    """Draws the *deviations* from Hypothesis, not every decision.

    The stream is ``more? far? gap choice ... stop``: each deviation costs four
    draws, the canonical decisions between them none. Hypothesis
    shrinks towards shorter, then lexicographically smaller streams, so here its
    minimum is the run with the fewest deviations, taken as early and as close
    to the canonical action as the bug allows. (Rejected: one draw per decision
    -- Hypothesis then minimizes the run's *length*, and a 2-deviation toy
    shrank to 12 deviations in a shorter run.)
    """

    wants_options = False
    MAX_GAP = 255

    def __init__(self, data: Any, st: Any) -> None:
        self._data = data
        self._st = st
        self._gap: int | None = None
        self._done = False

    def _draw_int(self, lo: int, hi: int) -> int:
        key = (lo, hi)
        strat = _INT_STRATEGIES.get(key)
        if strat is None:
            strat = _INT_STRATEGIES[key] = self._st.integers(lo, hi)
        return int(self._data.draw(strat))

    def choose(self, n: int, options: Sequence[Option] | None, label: str) -> int:
        if label != "schedule":
            # A data choice (a fault, a RaceMachine's rule or argument): rare, and
            # meaningful in itself, so Hypothesis draws it directly; 0 is canonical.
            return self._draw_int(0, n - 1)
        if self._done:
            return 0
        if self._gap is None:
            if not self._draw_int(0, 1):
                self._done = True
                return 0
            # near (within 8 decisions) or far: races often need deviations close together
            self._gap = self._draw_int(0, self.MAX_GAP) if self._draw_int(0, 1) else self._draw_int(0, 7)
        if self._gap > 0:
            self._gap -= 1
            return 0
        self._gap = None
        return self._draw_int(1, n - 1)


_INT_STRATEGIES: dict[tuple[int, int], Any] = {}


def _search_hypothesis(runner: _Runner, strat: Hypothesis) -> RunOutcome | None:
    """Let Hypothesis draw the deviations; its shrinker minimizes them.

    A runs budget is one Hypothesis search of that many examples. A seconds
    budget runs searches of ``_CHUNK`` examples with derived seeds until the time
    is spent: raising out of a Hypothesis test to stop it early is treated as a
    flaky test, so we never do.
    """
    if runner.budget.runs is not None:
        return _hypothesis_chunk(runner, strat.seed, runner.budget.runs)
    k = 0
    while not runner.exhausted():
        found = _hypothesis_chunk(runner, _mix(strat.seed, k), _CHUNK)
        if found is not None:
            return found
        k += 1
    return None


_CHUNK = 200


def _hypothesis_chunk(runner: _Runner, seed: int, examples: int) -> RunOutcome | None:
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    @hseed(seed)
    @settings(
        max_examples=max(1, examples),
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.data())
    def search(data: Any) -> None:
        out = runner.run(_HypothesisChooser(data, st))
        if _failed(out):
            raise _Found(out)

    try:
        search()
    except _Found as exc:
        return exc.out
    return None


def _children(prefix: list[int], sizes: list[int]) -> list[list[int]]:
    kids = []
    for i in range(len(prefix), len(sizes)):
        base = prefix + [0] * (i - len(prefix))
        for c in range(1, sizes[i]):
            kids.append([*base, c])
    return kids


def _search_exhaustive(
    runner: _Runner, max_deviations: int, *, stop_before: int | None = None
) -> tuple[RunOutcome | None, bool]:
    """Breadth-first by deviation count. Returns (first failure, complete?)."""
    level: deque[list[int]] = deque([[]])
    for depth in range(max_deviations + 1):
        if stop_before is not None and depth >= stop_before:
            return None, True
        nxt: deque[list[int]] = deque()
        while level:
            if runner.exhausted():
                return None, False
            prefix = level.popleft()
            out = runner.run(ReplayChooser(prefix))
            if _failed(out):
                return out, True
            if depth < max_deviations:
                nxt.extend(_children(prefix, out.sizes))
        level = nxt
    return None, True


# --------------------------------------------------------------- shrinking
def shrink(runner: _Runner, out: RunOutcome, *, max_runs: int = 2000, max_seconds: float = 20.0) -> RunOutcome:
    """Set deviations back to canonical (then to smaller indexes) while the same bug fails."""
    assert out.violation is not None
    target = out.violation
    best = out
    spent = 0
    improved = True
    deadline = time.perf_counter() + max_seconds
    while improved and spent < max_runs and time.perf_counter() < deadline:
        improved = False
        choices = best.choices
        for i in reversed(range(len(choices))):
            if choices[i] == 0:
                continue
            trials = [choices[:i] + choices[i + 1 :]]  # delete: later choices shift left
            trials += [[*choices[:i], smaller, *choices[i + 1:]] for smaller in range(0, choices[i])]
            for trial in trials:
                cand = runner.run(ReplayChooser(trial))
                spent += 1
                if target.same_bug(cand.violation) and _better(cand, best):
                    best = cand
                    improved = True
                    break
            if improved or spent >= max_runs or time.perf_counter() >= deadline:
                break
    return best


def _better(a: RunOutcome, b: RunOutcome) -> bool:
    return (a.deviations, a.steps, a.choices) < (b.deviations, b.steps, b.choices)


# ------------------------------------------------------------------ explore
def explore(
    scenario: Scenario,
    *,
    strategy: str | Strategy = DEFAULT_STRATEGY,
    budget: Budget | str | int = Budget(),
    seed: int = 0,
    limits: Limits = Limits(),
    shrink_found: bool = True,
    prove_minimal: bool = True,
    proof_budget: int = 5000,
    progress: Callable[[int, bool], None] | None = None,
    **params: Any,
) -> Result:
    """Search ``scenario(world, **params)`` for a violation.

    A found run is shrunk to few deviations and, with ``prove_minimal``, the
    ``exhaustive`` referee checks (within ``proof_budget`` runs) that no run
    with fewer deviations fails; if one does, that one is reported instead.
    ``progress(runs, found)`` is called after every run of the search and the
    shrink (a live display hook; it must not raise).
    """
    strat = make_strategy(strategy, seed=seed)
    b = Budget.parse(budget)
    runner = _Runner(scenario, params, limits, b)
    runner.progress = progress
    ref = scenario_ref(scenario)
    found: RunOutcome | None = None
    early_note: str | None = None
    pct_bound: float | None = None
    proved: int | None = None
    try:
        if isinstance(strat, Random):
            found = _search_random(runner, strat)
        elif isinstance(strat, PCT):
            found, pct_bound = _search_pct(runner, strat)
            pct_bound = pct_bound or None
        elif isinstance(strat, Hypothesis):
            found = _search_hypothesis(runner, strat)
        elif isinstance(strat, Exhaustive):
            found, complete = _search_exhaustive(runner, strat.max_deviations)
            if found is None and complete:
                proved = strat.max_deviations
            elif found is None and not runner.interrupted:
                early_note = (
                    f"the exhaustive search stopped when the budget ({b}) ran out, before covering every run with "
                    f"up to {strat.max_deviations} deviations: raise the budget for a proof"
                )
        elif isinstance(strat, Replay):
            out = runner.run(ReplayChooser(list(strat.choices)))
            found = out if _failed(out) else None
        else:  # pragma: no cover - make_strategy guards this
            raise UsageError(f"unknown strategy {strat!r}")
    except KeyboardInterrupt:
        runner.interrupted = True
    first_found_run = runner.first_failure[0] if found is not None and runner.first_failure else None
    first_found_seconds = runner.first_failure[1] if found is not None and runner.first_failure else None
    cx: Counterexample | None = None
    notes: list[str] = [early_note] if early_note else []
    if found is not None:
        best = found
        minimal: bool | None = None
        if not runner.interrupted:
            try:
                if shrink_found and not isinstance(strat, Exhaustive):
                    best = shrink(runner, best)
                if isinstance(strat, Exhaustive):
                    minimal = True
                elif prove_minimal:
                    minimal, best = _prove_minimal(runner, best, proof_budget)
                    if minimal is None:
                        notes.append(f"minimality not proved within {proof_budget} runs")
            except KeyboardInterrupt:
                runner.interrupted = True
        cx = Counterexample.from_outcome(ref, params, best, strategy=strat.describe(), seed=seed, limits=limits)
        cx.proved_minimal = minimal
    verdict = (
        "interrupted"
        if runner.interrupted
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
        notes=notes,
    )


def _prove_minimal(runner: _Runner, best: RunOutcome, proof_budget: int) -> tuple[bool | None, RunOutcome]:
    """Exhaustive search below ``best.deviations``; a failure found there replaces ``best``."""
    d = best.deviations
    if d == 0:
        return True, best
    sub = _Runner(runner.scenario, runner.params, runner.limits, Budget(runs=proof_budget))
    smaller, complete = _search_exhaustive(sub, d - 1)
    runner.runs += sub.runs
    runner.steps += sub.steps
    if smaller is not None:
        return True, smaller
    return (True if complete else None), best


def _mix(seed: int, i: int) -> int:
    """A per-run seed from the search seed and the run index (stable across processes)."""
    return (seed * 0x9E3779B1 + i * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFFFFFF


__all__ = [
    "PCT",
    "STRATEGIES",
    "Budget",
    "Exhaustive",
    "Hypothesis",
    "Random",
    "Replay",
    "Result",
    "Strategy",
    "explore",
    "make_strategy",
    "shrink",
]

