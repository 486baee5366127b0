"""The outcome of a search, as a value and as a sentence (:class:`Result`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._counterexample import Counterexample
from ._runner import _plural


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
    #: the runs the minimality proof may take for one entry (``explore(proof_budget=...)``; k entries: k times that)
    proof_budget: int | None = None
    notes: list[str] = field(default_factory=list)
    #: the portfolio member (or strategy) whose run first failed
    found_by: str | None = None
    #: what was explored, in words: fault kinds and the widest lag window seen
    space: str = ""
    #: real seconds the runs waited for operator processes outside the world (0: none ran; see ExternalOperator)
    live_seconds: float = 0.0
    #: for a replay of a trace file: the file, and where the run left it (None: it did not)
    replayed: str | None = None
    divergence: str | None = None
    #: plans the exhaustive referee's reduction left out (reorderings of independent actions)
    skipped: int = 0
    #: plans the exhaustive referee left out because their run would repeat one it ran (same steps, same order)
    repeats: int = 0
    #: a run that never ended (step limit, livelock), in words with the phase that met it; its own finding
    runaway: str | None = None
    #: plan entries (``--plan``, :func:`run_plan`) that never applied, each with the closest identities the run
    #: had: a plan that did not apply is not a clean run
    unapplied: list[str] = field(default_factory=list)
    #: fault kinds asked for that no run met a point of, each with what would place one
    faults_without_points: list[str] = field(default_factory=list)
    #: faults the runs injected, by kind (what :attr:`space` counts; a cluster's shards are summed)
    faults_injected: dict[str, int] = field(default_factory=dict)
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
        if self.live_seconds:
            where += f" (operator processes on the real clock: {self.live_seconds:.1f} s waiting for them)"
        if self.verdict == "model-error" and self.counterexample is not None:
            return (f"{where}: model error: {self.model_error} (run {self.runs:,}, step "
                    f"{self.counterexample.steps:,}; not the race, not shrunk: replay it to see where)")
        if self.verdict == "runaway" and self.counterexample is not None:
            cx = self.counterexample
            return (f"{where}: {cx.violation.describe()}: a run that never ends is its own finding, not the race "
                    f"(step {cx.steps:,}; replay it to see the loop)")
        if self.counterexample is not None:
            cx = self.counterexample
            proof = f" ({cx.proof}{': ' + cx.proof_time if cx.proof_time else ''})" if cx.proof else ""
            pre = f"{where}, interrupted" if self.verdict == "interrupted" else where
            by = f" by {self.found_by}" if self.found_by else ""
            return (
                f"{pre}: found{by} {cx.violation.describe()} in {cx.deviations} "
                f"{_plural(cx.deviations, 'deviation')}{proof}, {cx.steps} steps{self._phases()}"
            )
        if self.verdict == "proved-clean":
            return (
                f"proved clean up to {self.proved_bound} {_plural(self.proved_bound or 0, 'deviation')} "
                f"(holds and faults; {self.space}; {self.runs:,} {_plural(self.runs, 'run')}, {self.seconds:.2f} s"
                f"{_skipped(self.skipped, self.repeats)})"
            )
        if self.verdict == "interrupted":
            cut = f"; {self.notes[0]}" if self.notes and "exhaustive search was interrupted" in self.notes[0] else ""
            return f"{where}: interrupted before any violation was found{cut}"
        bound = f"; PCT bound per run >= {self.pct_bound:.2e}" if self.pct_bound else ""
        early = f"; {self.notes[0]}" if self.notes and "exhaustive search stopped" in self.notes[0] else ""
        space = f" ({self.space})" if self.space else ""
        return f"{where}{space}: clean (not a proof){bound}{early}"

    def _phases(self) -> str:
        """"; found at run 3, shrink 12 runs, proof 40 runs (proof budget 5,000 runs an entry)": what each budget
        bounded, since ``runs`` counts all three and ``--budget`` bounds only the search."""
        if self.first_found_run is None or self.shrink_runs is None:
            return ""
        budget = f" (proof budget {self.proof_budget:,} runs an entry)" if self.proof_budget and self.proof_runs else ""
        return (f"; found at run {self.first_found_run:,}, shrink {self.shrink_runs:,} "
                f"{_plural(self.shrink_runs, 'run')}, proof {self.proof_runs or 0:,} "
                f"{_plural(self.proof_runs or 0, 'run')}{budget}")

    def __str__(self) -> str:
        return self.outcome


def _skipped(n: int, repeats: int = 0) -> str:
    said = f"; {n:,} {_plural(n, 'reordering')} of independent actions skipped" if n else ""
    return said + (f"; {repeats:,} {_plural(repeats, 'plan')} skipped that would repeat a run" if repeats else "")
