"""From a failing run to the canonical minimum: the plan written down, shrunk, and proved minimal.

Whatever found a failure, its run is written as a plan (positional choices to
named entries, :func:`to_plan`), the plan is shrunk (:func:`shrink_plan`: faults
first, then holds, then shorter holds), and the ``exhaustive`` referee looks for
the first failing plan in its order with the fewest entries (:func:`minimize`);
:func:`prove_found` runs that proof alone, for a counterexample shrunk elsewhere.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..sim import (
    VERDICTS,
    ConvertingChooser,
    Entry,
    Fault,
    Hold,
    PlanChooser,
    ReplayChooser,
    RunOutcome,
    Violation,
    canonical_plan,
)
from ._counterexample import Counterexample, Scenario
from ._exhaustive import ShardRunner, _dedup, _PlanSearch
from ._runner import Budget, _plural, _Runner

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
    #: a cut proof's estimated time (measured seconds a run): said on the hunt's line, never in the saved ``proof``,
    #: so that a trace file of the same seed is the same byte for byte
    proof_time: str = ""


#: how a plan of a run with operator processes outside the world (``ExternalOperator``) counts as failing: it fails
#: the same way this many times in a row. Their own threads are not the world's, so one failing run of a candidate
#: may be their timing, not the plan; a plan kept by the shrinker must reproduce. A passing run counts at once
#: (a shrink that keeps too big a plan is safe; one that keeps a plan which does not reproduce is not).
LIVE_REPRODUCE = 2


def _confirmed(runner: _Runner, res: RunOutcome, plan: tuple[Entry, ...], target: Violation) -> bool:
    """``res`` (a run of ``plan``) failed as ``target``; with processes outside the world, again and again."""
    if not target.same_bug(res.violation):
        return False
    if not res.outside_seconds:
        return True
    for _ in range(LIVE_REPRODUCE - 1):
        if runner.exhausted() or not target.same_bug(runner.run(PlanChooser(plan)).violation):
            return False
    return True


def to_plan(runner: _Runner, out: RunOutcome, *, confirmer: _Runner | None = None
            ) -> tuple[RunOutcome, tuple[Entry, ...]] | None:
    """Write a positional run down as a plan, and check the plan makes the same failure (a run with a process:
    again, on ``confirmer``'s runs, whose budget is not the search's that found it)."""
    conv = ConvertingChooser(out.choices, out.trace)  # (the actions it took, where processes' arrivals moved them)
    runner.run(conv)
    plan = conv.result()
    again = runner.run(PlanChooser(plan))
    if out.violation is not None and _confirmed(confirmer or runner, again, plan, out.violation):
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
        if not _confirmed(runner, res, cand, target):
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
    order: ProofOrder | None = None,
    shrink_runs: int = 2000,
) -> _Minimum:
    """From any failing run to the canonical minimum (or as close as the budgets allow, said in words)."""
    assert out.violation is not None
    # The shrinker has its own budget (shrink_plan's max_runs), not what the search left of its own: a bug
    # found at run 845 of 1,000 was shrunk for 155 runs and kept a 38-entry plan, whose proof then ran minutes.
    shrinker = runner.sub(None, phase="shrink")
    writing = 0  # the runs that write the found run down as a plan: on top of the shrinker's own
    try:
        if plan is None:
            # (a run with a process confirms its plan with runs of its own: the shrinker's, since the search's
            # runner refuses them once finding the failure spent its budget)
            before = shrinker.runs
            written = to_plan(runner, out, confirmer=shrinker)
            writing = shrinker.runs - before
            if written is None and shrink:
                out = _shrink_positional(shrinker, out, max_runs=min(1000, shrink_runs // 2))
                before = shrinker.runs
                written = to_plan(runner, out, confirmer=shrinker)
                writing += shrinker.runs - before
            if written is None:
                return _Minimum(out, None, None, "not proved minimal: the run could not be written as a plan")
            out, plan = written
        if shrink:
            out, plan = shrink_plan(shrinker, out, plan, max_runs=max(0, shrink_runs - (shrinker.runs - writing)))
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
    order = order or ProofOrder()
    workers = proof_workers(runner)
    sub, search = _proof_search(runner, _proof_budget(proof_budget, k) * workers, k, target, order=order)
    if sub.runaway is not None:
        return _Minimum(out, plan, None, "not proved minimal: a run of the minimality proof ran away ("
                        f"{_runaway_words(sub.runaway)}); the counterexample stands", shrunk_at=shrunk_at)
    if search.found is not None:
        found_out, found_plan = search.found
        return _Minimum(found_out, found_plan, True, "proved minimal", shrunk_at=shrunk_at)
    covered = search.complete_levels
    if covered >= k - 1:
        return _representative(runner, out, plan, proof_budget, shrunk_at, order)
    what = "interrupted" if sub.interrupted else f"stopped after {sub.runs:,} {_plural(sub.runs, 'run')}"
    rest, took = _what_remains(search, sub, k, workers)
    if covered < 0:
        return _Minimum(out, plan, None, f"not proved minimal: nothing covered ({what}; {search.coverage()}){rest}",
                        shrunk_at=shrunk_at, proof_time=took)
    return _Minimum(
        out,
        plan,
        None,
        f"not proved minimal: no counterexample with <= {covered} {_plural(covered, 'deviation')}; "
        f"{covered + 1} not covered: {what} ({search.coverage()}){rest}",
        shrunk_at=shrunk_at,
        proof_time=took,
    )


def proof_workers(runner: _Runner) -> int:
    """The workers the proof's shards run on at once: 1 in process, a cluster's workers under ``hunt --cluster``.

    The proof budget is per worker (``_proof_budget(...) * workers``): a budget stands for the wall time a user
    gives a proof, and N workers run N times the plans in it. #3375's residual's 3-entry minimum needs its
    level 2 whole (tens of thousands of runs); on ``local:2`` with ``--proof-budget`` large enough it completes
    (bench section 7). What a completed proof finds does not depend on the workers (the shards are read back in
    plan order); only how far a cut one reaches does. Rejected: one budget for the whole cluster (more workers
    would end a cut proof sooner, never reach further); a reduction over world states (Kamera's state caching:
    two runs that reach the same store, caches, queues and timers continue alike) -- an actor's own Trio task
    keeps state no hash of the world sees (its stack, its locals), so it is sound only where every actor's local
    state is declared, which no model of ours declares yet; a proof that skipped on it could call minimal what
    is not.
    """
    return max(1, int(getattr(runner.shard_runner, "workers", 1) or 1))


def _what_remains(search: _PlanSearch, sub: _Runner, k: int, workers: int) -> tuple[str, str]:
    """"; level 2: at least 21,941 plans not run, about 70,000 by level 1's growth; a proof budget of 25,000 runs an
    entry (--proof-budget) would likely reach them", and apart "about 7 min more at 5.7 ms a run (1 worker)": what a
    cut proof leaves, never only "unproved".

    The plans are counted (at least) and estimated (see
    :meth:`_PlanSearch.remaining`); the time is the estimate at the wall
    seconds a run of this proof took (on however many workers it had), the
    one part that is measured, so it is kept apart (the hunt's line says it;
    the saved ``proof`` does not: a trace file of a seed is the same in every
    run). The budget named is per entry of the counterexample and per worker,
    as ``--proof-budget`` is.
    """
    left = search.remaining()
    if left is None:
        return "", ""
    level, plans, likely, by = left
    rest = f"; level {level}: at least {plans:,} {_plural(plans, 'plan')} not run"
    if likely > plans:
        rest += f", about {_round(likely):,} by {by}"
    took = ""
    if sub.runs > 0:
        per_run = sub.elapsed() / sub.runs
        on = f"{workers} {_plural(workers, 'worker')}"
        took = f"about {_duration(likely * per_run)} more at {per_run * 1000:.1f} ms a run ({on})"
    # the runs taken and the plans left, shared by the entries and the workers (as _proof_budget and minimize do)
    need = -(-(sub.runs + likely) // (min(max(1, k), PROOF_ENTRIES_CAP) * workers))
    need = -(-need // 1000) * 1000
    return rest + f"; a proof budget of {need:,} runs an entry (--proof-budget) would likely reach them", took


def _round(n: int) -> int:
    """An estimate to its two leading digits: 70,000, not 69,874."""
    if n < 100:
        return n
    unit: int = 10 ** (len(str(n)) - 2)
    return round(n / unit) * unit


def _duration(seconds: float) -> str:
    """"40 s", "6 min", "2.5 h": an estimate, said as one."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _runaway_words(out: RunOutcome) -> str:
    """"livelock at t=1, ..." cut to its first clause: what a proof met, said beside the counterexample it keeps."""
    v = out.violation
    assert v is not None
    return f"{VERDICTS[v.kind]} at step {v.step:,}, t={v.time:g}"


@dataclass(frozen=True)
class ProofOrder:
    """How a minimality proof takes its plans; the defaults are the proof's, the others are for ``bench/``.

    ``fewest_holds_first``: a level of two entries or more runs its plans by
    their number of holds (see ``_PlanSearch._group``); False: by their number
    of faults, as an exhaustive search does. ``reduce``: the referee's
    reduction (``_PlanSearch``); False runs every plan.
    """

    fewest_holds_first: bool = True
    reduce: bool = True


def _proof_search(
    runner: _Runner, budget: int, k: int, target: Violation | None, faults: int | None = None,
    order: ProofOrder | None = None,
) -> tuple[_Runner, _PlanSearch]:
    """The referee on a sub-runner of ``budget`` runs looking for ``target``; its runs count in ``runner``."""
    sub = runner.sub(budget, phase="minimality proof")
    # the minimality proof (no fault restriction) tries the last level's likely plans first: its first failing
    # plan is a function of the model alone, and it is met without running the whole level
    order = order or ProofOrder()
    search = _PlanSearch(sub, k, target, order.reduce, phase="proof", faults=faults, likely_first=faults is None,
                         fewest_holds_first=order.fewest_holds_first)
    try:
        search.run()
    finally:
        runner.absorb(sub)
    return sub, search


def _representative(
    runner: _Runner, out: RunOutcome, plan: tuple[Entry, ...], budget: int, shrunk_at: int, order: ProofOrder
) -> _Minimum:
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
    sub, search = _proof_search(runner, budget * proof_workers(runner), k, out.violation, faults=f, order=order)
    kinds = f"{k} {'entry' if k == 1 else 'entries'}, {f} {_plural(f, 'fault')}"
    if search.found is not None and sub.runaway is None:
        found_out, found_plan = search.found
        return _Minimum(found_out, found_plan, True, f"proved minimal (the first failing plan of {kinds} in the "
                        "referee's order)", shrunk_at=shrunk_at)
    return _Minimum(out, plan, True, f"proved minimal (not the first of {kinds}: that search was cut)",
                    shrunk_at=shrunk_at)


def prove_found(
    scenario: Scenario, cx: Counterexample, *, proof_budget: int = 5000, shard_runner: ShardRunner | None = None,
    order: ProofOrder | None = None,
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
    best = minimize(runner, out, plan=cx.plan, proof_budget=proof_budget, shrink=False, order=order)
    proved = Counterexample.from_outcome(cx.scenario, cx.params, best.out, strategy=cx.strategy, seed=cx.seed,
                                         limits=cx.limits, plan=best.plan, faults=cx.faults)
    proved.proved_minimal, proved.proof, proved.meta = best.proved, best.proof, dict(cx.meta)
    proved.proof_time = best.proof_time
    return proved, runner.runs


#: the proof's budget grows with the counterexample's entries up to this many: a plan the shrinker could not
#: bring under it has levels no budget completes, and its proof would otherwise run for minutes
PROOF_ENTRIES_CAP = 3


def _proof_budget(base: int, k: int) -> int:
    """More runs for a larger bound (each level multiplies the plans to cover), up to :data:`PROOF_ENTRIES_CAP`."""
    return base * min(max(1, k), PROOF_ENTRIES_CAP)
