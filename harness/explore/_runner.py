"""The run loop every search shares: a budget, run accounting, interrupts.

A :class:`_Runner` runs one scenario under one set of parameters, limits and
fault kinds, counts runs and steps, remembers what the runs met (fault kinds,
windows) so verdicts can say what space was searched, and stops at the budget
or on Ctrl-C between runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._interrupt import stop_requested
from .._options import FAULT_KINDS, FAULT_POINTS_COME_FROM, parse_budget
from ..sim import RUNAWAY_KINDS, Limits, RunOutcome, Violation, run_batch, run_once
from ._counterexample import Scenario
from ._faults import describe_faults

#: the wall clock a seconds budget is measured on; a test injects a clock that moves per call instead, so
#: what it asserts of a seconds budget does not depend on how fast the machine is
wall_clock: Callable[[], float] = time.perf_counter


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
        runs, seconds = parse_budget(text)  # the one validation, shared with the CLI and the plugin
        return cls(runs=runs, seconds=seconds)

    def __str__(self) -> str:
        parts = []
        if self.runs is not None:
            parts.append(f"{self.runs} runs")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g} s")
        return " / ".join(parts) or "unbounded"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


# ----------------------------------------------------------------- runner
class RunStats(NamedTuple):
    """What the run accounting needs of one run: small, so a shard run on another process sends it back."""

    steps: int
    fault_points: tuple[tuple[str, int], ...]
    max_window: float
    interrupted: bool
    failed: bool
    outside_seconds: float = 0.0
    faults_injected: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, out: RunOutcome) -> RunStats:
        return cls(out.steps, tuple(out.fault_points.items()), out.max_window, out.interrupted, _failed(out),
                   out.outside_seconds, tuple(out.faults_injected.items()))


#: ``level_progress(phase, level, done, known)``: plans run and known at the referee's current level
LevelProgress = Callable[[str, int, int, int], None]


class _Runner:
    def __init__(
        self,
        scenario: Scenario,
        params: dict[str, Any],
        limits: Limits,
        budget: Budget,
        faults: frozenset[str] | None = None,
    ) -> None:
        self.scenario = scenario
        self.params = params
        self.limits = limits
        self.budget = budget
        self.faults = faults
        self.runs = 0
        self.steps = 0
        self.started = wall_clock()
        self.interrupted = False
        self.max_steps_seen = 0
        #: fault kinds seen (in discovery order) and the most fault points one run passed
        self.fault_kinds_seen: list[str] = []
        self.max_fault_points = 0
        #: faults injected over every run, by kind (what the line says was applied, not only asked for)
        self.faults_injected: dict[str, int] = {}
        self.max_window = 0.0
        #: real seconds spent waiting for operator processes outside the world, over every run
        self.outside_seconds = 0.0
        #: run number and elapsed seconds of the first failing run (before any shrinking)
        self.first_failure: tuple[int, float] | None = None
        #: called after every run with (runs, failed so far?) -- for live progress displays
        self.progress: Callable[[int, bool], None] | None = None
        #: called after every plan the exhaustive referee runs (see :data:`LevelProgress`)
        self.level_progress: LevelProgress | None = None
        #: where the referee's shards run: this process (None) or a cluster (``harness/_cluster.py``)
        self.shard_runner: Any = None
        #: (chooser, outcome) of the failing run :meth:`run_many` returned (a plan's run needs no rewriting)
        self.found_chooser: tuple[Any, RunOutcome] | None = None
        #: the first run that ran away (step limit, livelock) and in which phase; it stops every search
        self.runaway: RunOutcome | None = None
        self.runaway_in = "search"
        #: the first run of the search whose failure is the model's own (see :func:`model_error_of`); it stops
        #: the search, and is never shrunk or proved as if it were the race
        self.model_broken: RunOutcome | None = None

    def sub(self, runs: int | None, phase: str = "search") -> _Runner:
        """A runner for a sub-search (shrink, proof) with its own run budget; counts roll up via absorb()."""
        r = _Runner(self.scenario, self.params, self.limits, Budget(runs=runs), self.faults)
        r.level_progress, r.shard_runner = self.level_progress, self.shard_runner
        r.runaway_in = phase
        return r

    def absorb(self, other: _Runner) -> None:
        self.runs += other.runs
        self.steps += other.steps
        self.outside_seconds += other.outside_seconds
        self.interrupted = self.interrupted or other.interrupted
        if self.runaway is None and other.runaway is not None:
            self.runaway, self.runaway_in = other.runaway, other.runaway_in
        if self.model_broken is None and other.model_broken is not None:
            self.model_broken = other.model_broken

    def run_many(self, choosers: Iterator[Any]) -> RunOutcome | None:
        """Runs in one ``trio.run`` until one fails or the budget is spent; the failing run, if any."""
        found: list[RunOutcome] = []
        current: list[Any] = [None]

        def tracked() -> Iterator[Any]:
            for chooser in choosers:
                current[0] = chooser
                yield chooser

        def keep_going(out: RunOutcome) -> bool:
            self._account(out)
            if _failed(out):
                found.append(out)
                self.found_chooser = (current[0], out)
                return False
            return not self.exhausted()

        if self.exhausted():
            return None
        try:
            run_batch(self.scenario, tracked(), keep_going, params=self.params, limits=self.limits, faults=self.faults)
        except KeyboardInterrupt:
            self.runs += 1
            self.interrupted = True
            raise
        return found[0] if found else None

    def _account(self, out: RunOutcome) -> None:
        if self.runaway is None and ran_away(out):
            self.runaway = out
        # a shrink or proof run that breaks the model differently is a plan that does not fail the same way
        if self.model_broken is None and self.runaway_in == "search" and model_error_of(out.violation) is not None:
            self.model_broken = out
        self.account(RunStats.of(out))

    def account(self, stats: RunStats) -> None:
        """Count one run, here or on a worker (the referee's shards send their runs' stats back)."""
        self.runs += 1
        if self.first_failure is None and stats.failed:
            self.first_failure = (self.runs, self.elapsed())
        if self.progress is not None:
            self.progress(self.runs, self.first_failure is not None)
        n = stats.steps
        self.steps += n
        if n > self.max_steps_seen:
            self.max_steps_seen = n
        points = 0
        for kind, count in stats.fault_points:
            points += count
            if kind not in self.fault_kinds_seen:
                self.fault_kinds_seen.append(kind)
        if points > self.max_fault_points:
            self.max_fault_points = points
        for kind, count in stats.faults_injected:
            self.faults_injected[kind] = self.faults_injected.get(kind, 0) + count
        self.outside_seconds += stats.outside_seconds
        if stats.max_window > self.max_window:
            self.max_window = stats.max_window
        if stats.interrupted:
            self.interrupted = True

    def run(self, chooser: Any) -> RunOutcome:
        if stop_requested():  # Ctrl-C under the CLI: stop between runs (harness/_interrupt.py)
            self.interrupted = True
            raise KeyboardInterrupt
        try:
            out = run_once(self.scenario, chooser, params=self.params, limits=self.limits, faults=self.faults)
        except KeyboardInterrupt:
            self.runs += 1
            self.interrupted = True
            raise
        self._account(out)
        return out

    def elapsed(self) -> float:
        return wall_clock() - self.started

    def exhausted(self) -> bool:
        b = self.budget
        if self.interrupted or stop_requested():
            self.interrupted = True
            return True
        if self.runaway is not None or self.model_broken is not None:  # no search goes on past either
            return True
        if b.runs is not None and self.runs >= b.runs:
            return True
        return b.seconds is not None and self.elapsed() >= b.seconds

    def runs_left(self) -> int | None:
        """Runs the budget still allows (None: no run cap)."""
        return None if self.budget.runs is None else max(0, self.budget.runs - self.runs)

    def space(self) -> str:
        lag = f"postponements within windows of up to {self.max_window:g} s" if self.max_window else "no time windows"
        missing = self.faults_without_points()
        none = f" (no point in the model for {'; '.join(missing)})" if missing else ""
        return f"{describe_faults(self.faults)}{none}{self._injected()}; {lag}"

    def _injected(self) -> str:
        """", 37 injected: crash 20, transient_error 17": the faults the runs applied, when any were asked for. A
        kind with points may still have none injected (a random search draws few), and a clean line under faults
        none of its runs fired says ``0 injected``, not only the kinds it asked for."""
        if not self.faults or self.runs == 0:
            return ""
        return injected_words(self.faults_injected)

    def faults_without_points(self) -> list[str]:
        """"crash: no ControllerProcess ...": each kind the search was asked for that no run met a point of.

        A kind with no point in the model was not searched, whatever ``--faults``
        said: "clean with every fault kind" must not include it silently.
        """
        if not self.faults or self.runs == 0:
            return []
        asked = FAULT_KINDS if "*" in self.faults else tuple(k for k in FAULT_KINDS if k in self.faults)
        return [f"{k}: {FAULT_POINTS_COME_FROM[k]}" for k in asked if k not in self.fault_kinds_seen]


def injected_words(counts: dict[str, int]) -> str:
    """``", 37 injected: crash 20, transient_error 17"``, as a search's space says the faults its runs injected."""
    kinds = ", ".join(f"{k} {n:,}" for k, n in sorted(counts.items()))
    return f", {sum(counts.values()):,} injected" + (f": {kinds}" if kinds else "")


def ran_away(out: RunOutcome) -> bool:
    """A run that hit the step limit or looped at one instant: a finding of its own.

    It never counts as the bug a search looks for (a buggy variant's expected
    violation), is never shrunk or proved minimal as if it were, and stops the
    search that met it, so a proof never spends its budget on 200,000-step runs.
    """
    return out.violation is not None and out.violation.kind in RUNAWAY_KINDS


def _failed(out: RunOutcome) -> bool:
    v = out.violation
    return v is not None and v.kind != "interrupted" and v.kind not in RUNAWAY_KINDS and model_error_of(v) is None


#: the actor that runs the scenario function itself (``harness.sim``'s ``MAIN_ACTOR``)
MAIN_ACTOR = "main"

_RAISED = re.compile(r"raised (?P<exc>[\w.]+): (?P<msg>.*) \(at (?P<at>[^()]*)\)", re.S)
_WAITS = re.compile(r"waits for '(?P<label>.*?)'(?: at (?P<at>.+?))? at t=", re.S)
_OUTSIDE = re.compile(r"\(a raw trio\.(?:sleep|Event).*?\)(?: at (?P<at>.+?))? (?:at t=|and nothing)", re.S)


def model_error_of(violation: Violation | None) -> str | None:
    """What is broken in the model when a run's failure is the model's own, in words; None when it is a finding.

    A finding is an oracle violated or a controller's fault (a panic, a
    controller deadlock). The scenario's own actor (``main``: it builds the
    cluster and plays the user) raising, or waiting for ever, or any actor
    blocked on something the harness does not schedule (a raw ``trio.sleep``,
    real I/O) says the model, not the controller, is wrong: a search that meets
    it stops there, and it is never shrunk, proved or counted as the race.
    Rejected: counting a ``main`` that waits for ever as the race (it was, and
    a ``main`` waiting for an event its own informer lost to a fault "found"
    the same deadlock in both variants).
    """
    if violation is None:
        return None
    if violation.kind == "blocked-outside":
        m = _OUTSIDE.search(violation.message)
        at = f" at {m['at']}" if m is not None and m["at"] else ""
        return (f"actor '{violation.actor or MAIN_ACTOR}' was blocked outside the harness{at} (real I/O, a thread, "
                "a wait the world cannot see): the harness cannot schedule it; talk to the apiserver through a "
                "client the world serves, and wait on trio/anyio primitives or the world's")
    if violation.kind in ("no-yield", "misuse"):  # a loop with no yield point, asyncio in Trio code, a task the
        return violation.message  # world does not schedule: the model's, whichever actor met it
    if violation.actor != MAIN_ACTOR:
        return None
    if violation.kind == "actor-raised":
        m = _RAISED.search(violation.message)
        if m is None:
            return f"the scenario raised: {violation.message}"
        return f"the scenario raised {m['exc']} at {m['at']}: {m['msg']}"
    if violation.kind == "deadlock":
        m = _WAITS.search(violation.message)
        label = m["label"] if m is not None else "?"
        at = f" at {m['at']}" if m is not None and m["at"] else ""
        return (f"{MAIN_ACTOR} waited forever{at} (for '{label}'): the scenario's own actor must finish; "
                "state a liveness property as an eventually oracle (world.eventually(..., within=...))")
    return None


#: faults one random/PCT run may inject at most
MAX_FAULTS = 2


def _mix(seed: int, i: int) -> int:
    """A per-run seed from the search seed and the run index (stable across processes)."""
    return (seed * 0x9E3779B1 + i * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFFFFFF
