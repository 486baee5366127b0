"""The exhaustive referee: every plan with 0, 1, ..., k entries, breadth first, in shards.

Shards
------
Proving a fixed model clean to 2 entries is tens of thousands of runs, which
is where one machine runs out (issue 28). The referee's order is therefore cut
into **waves** and **shards** that any process can run and that merge back into
exactly the in-process search:

- A *wave* is every plan of the current level (and fault count) known when it
  starts. Running a plan yields the plans it extends to: its siblings ("hold X
  until each action that ran while X was held", same level) and its children
  (one more entry, next level). The client takes each plan's report **in plan
  order**, drops what it has already seen and appends the rest, so the next
  wave (this level's new siblings) and the next level are the queues the
  one-plan-at-a-time search builds: the BFS order does not depend on when a
  plan ran, only on the order its results are read back in.
- A wave is cut into *shards* by :func:`cut_shards`, a rule of the wave's
  length alone (never of the number of workers): the same shards in process,
  on ``local:2`` and on a farm. A shard is one batch of runs in one
  ``trio.run`` (:func:`run_plans`): in process a plain loop
  (:class:`InProcessShards`), on ``hunt --cluster`` a Dask task each
  (``harness/_cluster.py``).
- A shard stops at its first accepted (failing) plan and reports it. The client
  reads shards in order, so a later shard that failed first never wins: the
  result is the first failing plan in the referee's order, the plans counted
  are those the in-process search runs to reach it, and the reduction's skips
  are those of the plans before it. Shards after a known failure are
  cancelled; shards before it still run (one of them may fail earlier).

Rejected: sharding a level by its first entry (a subtree per worker): the
subtrees are of very different sizes (the stragglers the bench measures) and
siblings cross them, so the merged count would not be the in-process one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..sim import Entry, Fault, Hold, Ident, Limits, Pick, PlanChooser, RunOutcome, Violation, canonical_plan, run_batch
from ._runner import RunStats, _failed, _plural, _Runner, ran_away

Plan = tuple[Entry, ...]

#: a shard holds at most this many plans (about 0.1 s of runs on the registered races) ...
MAX_SHARD_PLANS = 32
#: ... and at least this many, unless the wave is smaller ...
MIN_SHARD_PLANS = 4
#: ... and a wave is cut into this many shards when those two bounds allow it
SHARDS_PER_WAVE = 64

#: a cut search counts the distinct plans its budget left out of the next level (to say how many remain) up to
#: this many: a hash each, where the plans themselves would be GBs (the frontier of a deep level); past it the
#: count is a lower bound, as the rest of the count is ("at least": the siblings of runs to come are unknown)
CUT_COUNTED = 1_000_000


def cut_shards(n: int) -> list[int]:
    """The sizes of the shards of a wave of ``n`` plans, in plan order; a rule of ``n`` alone.

    Small waves still give a few workers something each (shards of at least
    :data:`MIN_SHARD_PLANS`); large waves are cut into shards of at most
    :data:`MAX_SHARD_PLANS`, so a failure found early cancels little and the
    largest shard stays close to the mean. Never depends on the worker count:
    the same seed and bound give the same shards on any cluster.
    """
    if n <= 0:
        return []
    count = min(max(1, n // MIN_SHARD_PLANS), max(SHARDS_PER_WAVE, -(-n // MAX_SHARD_PLANS)))
    base, extra = divmod(n, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def _split(wave: list[Plan]) -> list[list[Plan]]:
    out: list[list[Plan]] = []
    at = 0
    for size in cut_shards(len(wave)):
        out.append(wave[at : at + size])
        at += size
    return out


# ------------------------------------------------------------- one shard
@dataclass(frozen=True)
class RefereeJob:
    """What every shard of a referee search needs besides its plans; plain data, sent to workers as it is."""

    params: dict[str, Any]
    limits: Limits
    faults: frozenset[str] | None
    reduce: bool
    #: None: any failure is accepted (a search); else only the same bug (the minimality proof)
    target: Violation | None
    #: whether the plans' children are wanted (the level is not the last)
    expand: bool

    def accepts(self, out: RunOutcome) -> bool:
        return _failed(out) if self.target is None else self.target.same_bug(out.violation)


@dataclass(frozen=True, slots=True)
class PlanReport:
    """One plan's run as the referee needs it: its stats, and the plans it extends to, in order."""

    plan: Plan
    stats: RunStats
    #: an entry changed nothing: the run is a smaller plan's, and it extends to nothing
    inert: bool
    accepted: bool
    #: siblings the reduction left out
    skipped: int
    siblings: tuple[Plan, ...]
    children: tuple[Plan, ...]
    #: the run itself, for the accepted plan only (the others are summed up in ``stats``)
    outcome: RunOutcome | None
    #: the empty plan's only: every point of the canonical run (actions chosen, fault points, data choices)
    points: frozenset[Ident] = frozenset()
    #: siblings left out because their run is this one (see ``_Dependence.next_to``)
    repeats: int = 0


def run_plans(
    scenario: Callable[..., Any], job: RefereeJob, plans: list[Plan], keep_going: Callable[[PlanReport], bool]
) -> list[PlanReport]:
    """Run ``plans`` in order in one ``trio.run`` until one is accepted or ``keep_going`` says stop.

    Batched like the random and PCT searches (:func:`~harness.sim.run_batch`):
    the runs are the ones :func:`~harness.sim.run_once` makes, without Trio's
    start-up per plan.
    """
    reports: list[PlanReport] = []
    current: list[PlanChooser] = []  # the run's chooser alone: the ones before it are garbage, not GC work

    def choosers() -> Iterator[PlanChooser]:
        for p in plans:
            chooser = PlanChooser(p, footprints=job.reduce and _extends_to_siblings(p))
            current[:] = [chooser]
            yield chooser

    def after(out: RunOutcome) -> bool:
        rep = _report(current[-1], out, job)
        reports.append(rep)
        return keep_going(rep) and not rep.accepted

    if plans:
        run_batch(scenario, choosers(), after, params=job.params, limits=job.limits, faults=job.faults)
    return reports


def _report(chooser: PlanChooser, out: RunOutcome, job: RefereeJob) -> PlanReport:
    stats = RunStats.of(out)
    plan = chooser.plan
    if chooser.inert:
        return PlanReport(plan, stats, True, False, 0, (), (), None)
    if job.accepts(out):
        return PlanReport(plan, stats, False, True, 0, (), (), out)
    if ran_away(out):  # its own finding: the referee stops there (the run goes back to be reported)
        return PlanReport(plan, stats, False, False, 0, (), (), out)
    siblings, skipped, repeats = _siblings(plan, chooser, job.reduce)
    children = tuple(_children(plan, chooser)) if job.expand else ()
    points = frozenset(_points(chooser)) if plan == () else frozenset()
    return PlanReport(plan, stats, False, False, skipped, tuple(siblings), children, None, points, repeats)


def _extends_to_siblings(plan: Plan) -> bool:
    """Whether the plan has a hold "as long as its window allows", whose siblings the reduction judges by the
    run's footprints; every other plan's run records none (recording them costs ~15% of a real operator's run)."""
    return any(isinstance(e, Hold) and e.until is None for e in plan)


def _points(chooser: PlanChooser) -> Iterator[Ident]:
    yield from (i for i, _n in chooser.decisions)
    yield from (i for i, _k in chooser.fault_points)
    yield from (i for i, _n in chooser.data_points)


def likely_plans(level: list[Plan], canonical: frozenset[Ident]) -> list[Plan]:
    """The plans of a level a two- or three-fault bug is likely among, in the referee's order: faults only,
    one of them at a point the canonical run did not have (a fault the others brought about: the stale LIST
    of the informer a crash restarted, the relist after a watch drop).

    A function of the level and the canonical run alone, so the first failing plan among them is the same
    whichever seed or strategy found the bug; they are few (the fault points of the runs of the plans of
    faults one level down), where the level has every hold of every run besides.
    """
    return [p for p in level if p and all(isinstance(e, Fault) for e in p)
            and any(isinstance(e, Fault) and e.at not in canonical for e in p)]


def _siblings(plan: Plan, chooser: PlanChooser, reduce: bool) -> tuple[list[Plan], int, int]:
    """Hold X until each action that ran while it was held (same fault count); and how many the reduction skips:
    as reorderings of independent actions, and as this very run."""
    out: list[Plan] = []
    skipped = repeats = 0
    last = [e for e in plan if isinstance(e, Hold) and e.until is None]
    dependent = _Dependence(chooser) if reduce and last else None
    for h in last:
        # the sibling before "until y" ran the held action at the time of the
        # action before y (the first: when the hold began); if time moved in
        # between, the two siblings differ by more than the order of two actions
        before: float | None = chooser.held_at.get(h.what)
        during = _dedup(chooser.during.get(h.what, []))
        for y in during:
            if dependent is not None:
                at = dependent.time_of(y)
                same_time, before = at == before, at
                if same_time and not dependent(h.what, y):
                    skipped += 1
                    continue
                if y is during[-1] and dependent.next_to(y, h.what):
                    repeats += 1  # this very run (see _Dependence.next_to)
                    continue
            out.append(canonical_plan([*(e for e in plan if e != h), Hold(h.what, y)]))
    return out, skipped, repeats


# ------------------------------------------------------------- where shards run
class ShardRunner(Protocol):
    """Runs the shards of one wave and hands every plan's report to ``on_report`` in plan order.

    ``on_report`` returns False to stop (a plan was accepted, or the budget is
    spent): nothing after it is reported. ``should_stop`` is polled while
    waiting (a time budget, Ctrl-C).
    """

    #: the workers its shards run on at once (in process: 1); a minimality proof's budget is per worker
    #: (``_minimum.minimize``), so a proof on more workers reaches further in the same wall time
    workers: int

    def run_wave(
        self, scenario: Callable[..., Any], job: RefereeJob, shards: list[list[Plan]],
        on_report: Callable[[PlanReport], bool], should_stop: Callable[[], bool],
    ) -> None: ...


class InProcessShards:
    """The shards as a plain loop in this process; ``costs`` notes each shard's (wave, plans run, seconds)."""

    workers = 1

    def __init__(self) -> None:
        self.costs: list[tuple[int, int, float]] = []
        self._wave = 0

    def run_wave(
        self, scenario: Callable[..., Any], job: RefereeJob, shards: list[list[Plan]],
        on_report: Callable[[PlanReport], bool], should_stop: Callable[[], bool],
    ) -> None:
        self._wave += 1
        stopped = False

        def go(rep: PlanReport) -> bool:
            nonlocal stopped
            stopped = not on_report(rep)
            return not stopped

        for plans in shards:
            t0 = time.perf_counter()
            ran = run_plans(scenario, job, plans, go)
            self.costs.append((self._wave, len(ran), time.perf_counter() - t0))
            if stopped or len(ran) < len(plans):
                return


# ------------------------------------------------------------- the referee
class _PlanSearch:
    """Breadth-first over plans by entry count, each level extended from the runs of the one before.

    Children of a plan are: a hold of each action chosen at a decision of its
    run (first "as long as its window allows"; that run shows which actions
    ran meanwhile, and each becomes a sibling "until that one has run"), each
    fault point the run passed, and each other value of its data choices.
    A run in which an entry changed nothing is the run of a smaller plan and
    is not counted twice. Within a level, plans with fewer faults run first:
    of two stories of the same length, the one that needs no failure (a late
    delivery rather than a watch that breaks) is the one an upstream report
    tells. The order is deterministic, so "the first failing plan with the
    fewest entries" is one plan whatever found the bug first, and wherever
    its shards ran (see the module docstring).

    Reduction (``reduce``): "hold X until Y" places X right after Y, so it
    differs from the sibling before it by the order of X and Y alone. When Y
    belongs to another process than X and touches no apiserver object that
    X's process reads or writes (one of them writing it), the two orders
    reach the same state, and the sibling is skipped, provided virtual time
    did not move between Y and the action before it: the held action reads the
    clock (its next step's window, a sleep, a requeue deadline), so moving it
    across a time jump is not a swap of two actions, and it runs. Everything else runs:
    each hold as long as its window allows, every fault, every pick, and every
    "until" on an action of X's own process or of a process whose memory is
    not declared (``World.share_memory``). ``skipped`` counts the plans left out.
    """

    def __init__(
        self, runner: _Runner, max_entries: int, target: Violation | None = None, reduce: bool = True,
        phase: str = "exhaustive", faults: int | None = None, likely_first: bool = False,
        fewest_holds_first: bool = False,
    ) -> None:
        self.runner = runner
        #: a level of two entries or more runs its plans by their number of holds, fewest first (else by their
        #: number of faults, fewest first): see :meth:`_group`
        self.fewest_holds_first = fewest_holds_first
        #: every level of two entries or more runs its likely plans first (:func:`likely_plans`): a proof that
        #: knows the levels below are clean meets the bug's representative without the whole level. Every level,
        #: not only the last: a proof of a 3-entry shrunk plan and one of a 2-entry plan of the same bug then
        #: take level 2 in one order and meet one plan there (the last level alone made the representative
        #: depend on how far the shrinker got: two digests for one bug, by seed)
        self.likely_first = likely_first
        #: the points of the canonical run (known once the empty plan ran)
        self._canonical_points: frozenset[Ident] | None = None
        #: only plans with at most this many faults and ``max_entries - faults`` other entries (None: every
        #: plan); the plans kept are a subsequence of the referee's order, since a plan's extensions never
        #: have fewer entries of either sort
        self.max_faults = faults
        self.max_entries = max_entries
        self.target = target
        self.reduce = reduce
        #: "exhaustive" (a search) or "proof" (the minimality proof), for progress displays
        self.phase = phase
        self.shards: ShardRunner = runner.shard_runner if runner.shard_runner is not None else InProcessShards()
        #: sibling plans left out by the reduction
        self.skipped = 0
        #: sibling plans left out because their run would be the run of the plan they came from
        self.repeats = 0
        self.found: tuple[RunOutcome, Plan] | None = None
        self.complete_levels = -1  # every plan with <= this many entries was run
        self.level_reached = 0
        #: plans run and plans known (run or queued) at ``level_reached``
        self.level_done = 0
        self.level_known = 1
        #: plans queued for the next level, by group (:meth:`_group`; each group's queue is cut at the runs left)
        self._next_by_group: dict[int, int] = {}
        #: a plan of the next level was left out because the budget can never run it: that level cannot complete
        self._next_cut = False
        #: the distinct plans of the next level so left out (hash -> whether it extends to siblings; at most
        #: :data:`CUT_COUNTED`), and their count for the level being run: with ``level_known``, how many plans a
        #: cut search left at its level
        self._cut_next: dict[int, bool] = {}
        self._cut_here = 0
        #: the current level's plans that extend to siblings (a hold "as long as its window allows"): known, and
        #: run; the siblings their runs queued, and how many of those extend to siblings in turn
        self._open = _Growth()
        #: the last level's, when the current one has run too few of its own to go by (see :meth:`remaining`)
        self._open_before: _Growth | None = None
        #: a level the proof did not start: (level, runs left), it has more plans than that (see :meth:`_run`)
        self.beyond_budget: tuple[int, int] | None = None

    def run(self) -> None:
        """Run to the verdict, the budget or Ctrl-C; what was covered stays in the attributes."""
        try:
            self._run()
        except KeyboardInterrupt:
            self.runner.interrupted = True

    def _run(self) -> None:
        seen: set[frozenset[Entry]] = set()
        level: list[Plan] = [()]
        for depth in range(self.max_entries + 1):
            self.level_reached, self.level_done, self.level_known = depth, 0, len(level)
            self._show()
            nxt: list[Plan] = []
            self._next_by_group = {}
            cut, self._next_cut = self._next_cut, False
            self._cut_here, cut_open = len(self._cut_next), sum(self._cut_next.values())
            self._cut_next = {}
            if self._open.ran:
                self._open_before = self._open
            self._open = _Growth(known=cut_open + sum(1 for p in level if _extends_to_siblings(p)))
            if self.likely_first and depth >= 2 and self._canonical_points is not None:
                likely = likely_plans(level, self._canonical_points)
                if likely and self._level(likely, depth, seen, nxt):
                    return
                chosen = set(likely)
                level = [p for p in level if p not in chosen]
                if cut and depth < self.max_entries:
                    # A level below the counterexample's that the budget can never complete: no proof can come
                    # of running part of it, and its likely plans (the ones a smaller counterexample would be
                    # among) ran; the proof stops here instead of spending its budget on a verdict it cannot
                    # reach (a deep level is tens of thousands of plans: minutes).
                    self.beyond_budget = (depth, self.runner.runs_left() or 0)
                    return
            groups: dict[int, list[Plan]] = {}
            for p in level:
                groups.setdefault(self._group(p), []).append(p)
            for g in sorted(groups):
                if self._level(groups[g], depth, seen, nxt):
                    return
            if cut:  # this level's queue left plans out (the budget could never run them): running it all proves nothing
                return
            self.complete_levels = depth
            level = nxt
            if not level:
                # nothing more to run; but a next level whose every plan the budget left out is not empty
                if not self._next_cut:
                    self.complete_levels = self.max_entries
                else:  # the next level has plans (one at least) and none will run
                    self.level_reached, self.level_done, self.level_known = depth + 1, 0, 0
                    self._cut_here = max(1, len(self._cut_next))
                    if self._open.ran:
                        self._open_before = self._open
                    self._open = _Growth(known=sum(self._cut_next.values()))
                return

    def _level(self, queue: list[Plan], depth: int, seen: set[frozenset[Entry]], nxt: list[Plan]) -> bool:
        """Run the plans of one level with one fault count, wave by wave (siblings join the queue); True: stop."""
        runner = self.runner
        job = RefereeJob(runner.params, runner.limits, runner.faults, self.reduce, self.target,
                         depth < self.max_entries)
        qi = 0
        while qi < len(queue):
            if runner.exhausted():
                return True
            wave = queue[qi:]
            left = runner.runs_left()
            if left is not None:
                wave = wave[:left]
            got = 0

            def on_report(rep: PlanReport) -> bool:
                nonlocal got
                got += 1
                return not self._absorb(rep, queue, seen, nxt) and not runner.exhausted()

            self.shards.run_wave(runner.scenario, job, _split(wave), on_report, runner.exhausted)
            qi += got
            if self.found is not None:
                return True
            if got < len(wave) and not runner.exhausted():  # pragma: no cover - a shard runner's contract
                raise RuntimeError(f"a shard runner reported {got} of {len(wave)} plans and no reason to stop")
        return False

    def _absorb(self, rep: PlanReport, queue: list[Plan], seen: set[frozenset[Entry]], nxt: list[Plan]) -> bool:
        """One plan's report, in plan order: count it, and queue what it extends to; True: it was accepted."""
        self.runner.account(rep.stats)
        self.level_done += 1
        if rep.outcome is not None and not rep.accepted and ran_away(rep.outcome):
            if self.runner.runaway is None:
                self.runner.runaway = rep.outcome
            return False  # the runner is exhausted now: the search stops after this report
        if rep.accepted:
            assert rep.outcome is not None
            self.found = (rep.outcome, rep.plan)
            return True
        if rep.plan == () and self._canonical_points is None:
            self._canonical_points = rep.points
        self.skipped += rep.skipped
        self.repeats += rep.repeats
        if _extends_to_siblings(rep.plan):
            self._open.ran += 1
        for sib in rep.siblings:
            key = frozenset(sib)
            if key not in seen and self._fits(sib):
                seen.add(key)
                queue.append(sib)
                self.level_known += 1
                self._open.siblings += 1
                if _extends_to_siblings(sib):
                    self._open.known += 1
                    self._open.open_siblings += 1
        left = self.runner.runs_left()
        for child in rep.children:
            key = frozenset(child)
            if key in seen or not self._fits(child):
                continue
            if left is not None:
                # The next level runs each group's plans in the order they are queued here, so a plan
                # queued after the first `left` of its group can never run on this budget: it is not
                # kept (the frontier of a deep proof would otherwise hold millions of plans, GBs of memory).
                f = self._group(child)
                if self._next_by_group.get(f, 0) >= left:
                    self._next_cut = True
                    if len(self._cut_next) < CUT_COUNTED:
                        self._cut_next[hash(key)] = _extends_to_siblings(child)
                    continue
            seen.add(key)
            nxt.append(child)
            if left is not None:
                self._next_by_group[f] = self._next_by_group.get(f, 0) + 1
        self._show()
        return False

    def _group(self, plan: Plan) -> int:
        """Where a plan runs within its level: groups in increasing order, each in the order its plans were queued.

        By default, plans with fewer faults first (see the class docstring). A
        minimality proof (``fewest_holds_first``) takes a level of two entries
        or more by its number of holds instead, fewest first: its holds are
        what make a level large (every decision of every run one level down,
        and each hold's siblings), its faults and data choices are few (the
        points of those runs). A counterexample of a fault and a late delivery
        is then met among the few plans of one hold, before the tens of
        thousands of plans of two holds (measured on a real lightkube
        operator: see ``bench/``). The order is the model's alone, so the
        proof's first failing plan is one plan whatever found the bug; which
        plans are proved absent (every level below the counterexample's) does
        not depend on it.
        """
        if self.fewest_holds_first and len(plan) >= 2:
            return sum(1 for e in plan if isinstance(e, Hold))
        return _fault_count(plan)

    def _fits(self, plan: Plan) -> bool:
        if self.max_faults is None:
            return True
        f = _fault_count(plan)
        return f <= self.max_faults and len(plan) - f <= self.max_entries - self.max_faults

    def _show(self) -> None:
        hook = self.runner.level_progress
        if hook is not None:
            hook(self.phase, self.level_reached, self.level_done, self.level_known)

    def remaining(self) -> tuple[int, int, int, str] | None:
        """A cut search's level, how many of its plans did not run (at least), how many probably did not, and
        what that estimate went by (None: nothing is left).

        At least: its plans known (run, queued, or left out of the queue by
        the budget, counted by :data:`CUT_COUNTED`) less those run. The
        plans still to run that extend to siblings add more: as many as the
        level's runs of such plans added so far, each (see :class:`_Growth`),
        or, before twenty of them ran (a level cut before its own plans: only
        its likely plans did), as many as the last level's did. An estimate,
        said as one.
        """
        if self.complete_levels >= self.max_entries or self.found is not None:
            return None
        known = self.level_known + self._cut_here
        left = known - self.level_done
        if left <= 0:
            return None
        here = self._open
        by, rate = ("its runs so far", here) if here.ran >= 20 or self._open_before is None else \
            (f"level {self.level_reached - 1}'s runs", self._open_before)
        return self.level_reached, left, left + rate.more(max(0, here.known - here.ran)), by

    def coverage(self) -> str:
        """What a cut search covered: "levels 0-1 complete; level 2: 1,204 of at least 3,310 plans run".

        "At least": a level's plans are the ones its runs led to so far; the
        runs still to come add their siblings.
        """
        c = self.complete_levels
        done = "no level complete" if c < 0 else "level 0 complete" if c == 0 else f"levels 0-{c} complete"
        if c >= self.max_entries:
            return done
        if self.beyond_budget is not None:
            level, left = self.beyond_budget
            return f"{done}; level {level} has more plans than the {left:,} runs left: only its likely plans ran"
        known = self.level_known + self._cut_here
        return f"{done}; level {c + 1}: {self.level_done:,} of at least {known:,} {_plural(known, 'plan')} run"


@dataclass
class _Growth:
    """How a level's plans that extend to siblings grew it: for a cut level's estimate (:meth:`_PlanSearch.remaining`).

    ``known`` such plans (queued or left out), ``ran`` of them run, the
    ``siblings`` their runs queued, ``open_siblings`` of which extend to
    siblings in turn (the other hold of a plan of two still "as long as its
    window allows"). Each such plan still to run adds ``siblings / ran``
    plans, a share ``open_siblings / siblings`` of which add as many again: a
    geometric series, its ratio capped at 0.9 (a level whose every sibling
    extends again would be counted without end).
    """

    known: int = 0
    ran: int = 0
    siblings: int = 0
    open_siblings: int = 0

    def more(self, unrun: int) -> int:
        """The plans ``unrun`` such plans probably add, siblings of siblings included."""
        if not self.ran or not self.siblings:
            return 0
        share = min(0.9, self.open_siblings / self.siblings)
        return round(unrun * (self.siblings / self.ran) / (1 - share))


class _Dependence:
    """Which actions of one run may not commute with a held action's process (see :class:`_PlanSearch`).

    Across declared processes: the held action's process and the other
    action touch a common apiserver resource, one writing it. Within one
    process that records every access to its memory by key
    (``World.share_memory(..., recorded=True)``: the garbage collector's
    graph, caches, queues and rate limiter), two actions of different actors
    commute too when the held actor's accesses and the other action's share
    no key that one of them writes: the footprints the story reads, so the
    reduction skips only what they show independent. Every other pair
    within a process is dependent (its memory is one unrecorded resource).
    """

    def __init__(self, chooser: PlanChooser) -> None:
        self.process_of = chooser.process_of
        self.recorded = chooser.recorded
        self.footprint = dict(zip(chooser.ran, chooser.footprints, strict=True))
        #: action -> its position in the run (its time: ``_times`` at that position)
        self._index = {a: i for i, a in enumerate(chooser.ran)}
        self._ran, self._times, self._waited = chooser.ran, chooser.times, chooser.waited
        assert len(self._times) == len(self._ran)
        self._by_process: dict[str | None, dict[object, bool]] = {}

    def time_of(self, action: Ident) -> float:
        """The virtual time ``action`` ran at."""
        return self._times[self._index[action]]

    def next_to(self, y: Ident, held: Ident) -> bool:
        """Whether the held action ran as the very next step after ``y``, at ``y``'s instant.

        Then "hold it until ``y``" is this run itself: up to ``y`` the two
        plans hold the same actions, and right after ``y`` every action
        enabled but the held one was held by the plan's other entries (else
        one of them would have run instead), so the released action is the
        one that runs, at the same instant; from there the two runs have one
        history, and the scheduler is a function of it. The sibling is not
        run (the last "until" of a hold: what ran last while it was held).
        """
        at = self._index.get(y)
        return at is not None and at + 1 < len(self._ran) and self._ran[at + 1] == held \
            and self._times[at] == self._times[at + 1] and at + 1 not in self._waited

    def _process_footprint(self, proc: str) -> dict[object, bool]:
        """Every resource the process touched in the run -> whether it wrote it."""
        fp = self._by_process.get(proc)
        if fp is None:
            fp = {}
            for ident, touched in self.footprint.items():
                if touched and self.process_of(ident.actor) == proc:
                    for res, wrote in touched:
                        fp[res] = fp.get(res, False) or wrote
            self._by_process[proc] = fp
        return fp

    def _actor_footprint(self, actor: str) -> dict[object, bool]:
        """Every resource ``actor`` touched in the run -> whether it wrote it."""
        key = f"actor {actor}"
        fp = self._by_process.get(key)
        if fp is None:
            fp = {}
            for ident, touched in self.footprint.items():
                if touched and ident.actor == actor:
                    for res, wrote in touched:
                        fp[res] = fp.get(res, False) or wrote
            self._by_process[key] = fp
        return fp

    def __call__(self, held: Ident, y: Ident) -> bool:
        px = self.process_of(held.actor)
        py = self.process_of(y.actor)
        if px is None or py is None:
            return True
        if px == py:
            if held.actor == y.actor or not self.recorded(px):
                return True
            mine = self._actor_footprint(held.actor)
        else:
            mine = self._process_footprint(px)
        return any(res in mine and (wrote or mine[res]) for res, wrote in self.footprint.get(y, ()))


def _fault_count(plan: Plan) -> int:
    return sum(1 for e in plan if isinstance(e, Fault))


def _dedup(items: list[Ident]) -> list[Ident]:
    out: list[Ident] = []
    seen: set[Ident] = set()
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _children(plan: Plan, chooser: PlanChooser) -> list[Plan]:
    held = {e.what for e in plan if isinstance(e, Hold)}
    faulted = {e.at for e in plan if isinstance(e, Fault)}
    picked = {e.at for e in plan if isinstance(e, Pick)}
    kids: list[Plan] = []
    for ident, _n in chooser.decisions:
        if ident not in held:
            kids.append(canonical_plan([*plan, Hold(ident, None)]))
    for ident, _kind in chooser.fault_points:
        if ident not in faulted:
            kids.append(canonical_plan([*plan, Fault(ident)]))
    for ident, n in chooser.data_points:
        if ident not in picked:
            kids.extend(canonical_plan([*plan, Pick(ident, v)]) for v in range(1, n))
    return kids


def _search_exhaustive(runner: _Runner, max_deviations: int, reduce: bool = True) -> _PlanSearch:
    """Breadth-first over plans to the verdict (or the budget); the search, with what it found and covered."""
    search = _PlanSearch(runner, max_deviations, None, reduce)
    search.run()
    return search
