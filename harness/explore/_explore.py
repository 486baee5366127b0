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

This module is the loop that ties them together (:func:`explore`, and
:func:`run_plan` for one hand-written plan); each part has its own module:
the strategy values and their forms (``_strategies.py``), the sampling
searches and the portfolio (``_sampling.py``), Hypothesis
(``_hypothesis.py``), the referee (``_exhaustive.py``), shrinking and the
minimality proof (``_minimum.py``), plans read by hand (``_plans.py``), fault
kinds (``_faults.py``), the run loop and its budget (``_runner.py``) and the
outcome (``_result.py``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import UsageError
from .._processes import search as _search
from ..sim import RUNAWAY_KINDS, Entry, Fault, Hold, Limits, Pick, PlanChooser, ReplayChooser, RunOutcome, canonical_plan
from ._counterexample import Counterexample, Scenario, scenario_ref
from ._exhaustive import ShardRunner, _search_exhaustive
from ._faults import parse_faults
from ._hypothesis import _search_hypothesis
from ._minimum import LIVE_REPRODUCE, _confirmed, _Minimum, minimize
from ._plans import read_plan, unapplied_entries
from ._result import Result
from ._runner import Budget, LevelProgress, _failed, _Runner, model_error_of
from ._sampling import _search_pct, _search_portfolio, _search_random
from ._strategies import (
    DEFAULT_STRATEGY,
    PCT,
    Canonical,
    Exhaustive,
    Hypothesis,
    Portfolio,
    Random,
    Replay,
    Strategy,
    make_strategy,
)


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
    canonical_first: bool = False,
    shrink_budget: int = 2000,
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
    ``canonical_first``: run the canonical order before the strategy; a failure there (twice in a row with
    processes outside the world) is the counterexample, with no deviation, and nothing else runs: a test
    command that fails on its own is said so in seconds, not after a search and a shrink (``hunt-test``).
    ``shrink_budget``: the most runs the shrinker takes (a run of a test command costs seconds, not microseconds).
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
    skipped = repeats = 0
    plan_notes: list[str] = []
    unapplied: list[str] = []
    with _runs_of_one_search(strat):  # operator processes may start ahead of their runs (harness._processes)
        try:
            if canonical_first and not isinstance(strat, (Canonical, Replay)):
                first = runner.sub(LIVE_REPRODUCE)  # (its own budget: a failure is confirmed whatever the search's)
                out = first.run(PlanChooser())
                if _failed(out) and out.violation is not None and _confirmed(first, out, (), out.violation):
                    found, found_plan, found_by = out, (), "the canonical order"
                runner.absorb(first)
            if found is not None:
                pass
            elif isinstance(strat, Random):
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
                skipped, repeats = search.skipped, search.repeats
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
                    out = runner.run(ReplayChooser(list(strat.choices),
                                                  None if strat.expected is None else strat.expected.trace))
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
                        shrink_runs=shrink_budget,
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
            cx.proof, cx.proof_time = best.proof, best.proof_time
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
        proof_budget=proof_budget if prove_minimal else None,
        notes=notes,
        found_by=found_by,
        space=runner.space(),
        live_seconds=runner.outside_seconds,
        replayed=strat.source if isinstance(strat, Replay) else None,
        divergence=replay_divergence,
        skipped=skipped,
        repeats=repeats,
        runaway=runaway,
        model_error=model_error,
        unapplied=unapplied,
        faults_without_points=runner.faults_without_points(),
        faults_injected=dict(runner.faults_injected),
    )


def _runs_of_one_search(strat: Strategy) -> contextlib.AbstractContextManager[None]:
    """The search's runs follow one another (``harness._processes.search``), but a replay's or the canonical order's
    single run: nothing follows it, so nothing is started ahead for it."""
    return contextlib.nullcontext() if isinstance(strat, (Canonical, Replay)) else _search()


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


def ran_away_cx(cx: Counterexample) -> bool:
    """Whether a counterexample is a run that never ended (see :func:`ran_away`)."""
    return cx.violation.kind in RUNAWAY_KINDS


__all__ = [
    "explore",
    "ran_away_cx",
    "run_plan",
]
