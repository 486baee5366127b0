"""The exhaustive referee: every plan with 0, 1, ..., k entries, breadth first."""

from __future__ import annotations

from collections.abc import Callable

from ..sim import Entry, Fault, Hold, Ident, Pick, PlanChooser, RunOutcome, canonical_plan
from ._runner import _failed, _Runner


# ------------------------------------------------------------- exhaustive
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
    fewest entries" is one plan whatever found the bug first.

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
        self, runner: _Runner, max_entries: int, accept: Callable[[RunOutcome], bool], reduce: bool = True
    ) -> None:
        self.runner = runner
        self.max_entries = max_entries
        self.accept = accept
        self.reduce = reduce
        #: sibling plans left out by the reduction
        self.skipped = 0
        self.found: tuple[RunOutcome, tuple[Entry, ...]] | None = None
        self.complete_levels = -1  # every plan with <= this many entries was run
        self.level_reached = 0

    def run(self) -> None:
        seen: set[frozenset[Entry]] = set()
        level: list[tuple[Entry, ...]] = [()]
        for depth in range(self.max_entries + 1):
            self.level_reached = depth
            nxt: list[tuple[Entry, ...]] = []
            by_faults: dict[int, list[tuple[Entry, ...]]] = {}
            for p in level:
                by_faults.setdefault(_fault_count(p), []).append(p)
            for f in sorted(by_faults):
                if self._level(by_faults[f], depth, seen, nxt):
                    return
            self.complete_levels = depth
            level = nxt
            if not level:
                self.complete_levels = self.max_entries
                return

    def _level(self, queue: list[tuple[Entry, ...]], depth: int, seen: set[frozenset[Entry]],
               nxt: list[tuple[Entry, ...]]) -> bool:
        """Run the plans of one level with one fault count (siblings join the queue); True: stop the search."""
        qi = 0
        while qi < len(queue):
            if self.runner.exhausted():
                return True
            plan = queue[qi]
            qi += 1
            chooser = PlanChooser(plan, footprints=self.reduce)
            out = self.runner.run(chooser)
            if chooser.inert:
                continue  # the same run as a smaller plan
            if self.accept(out):
                self.found = (out, chooser.plan)
                return True
            # siblings: hold X until each action that ran while it was held (same fault count)
            last = [e for e in plan if isinstance(e, Hold) and e.until is None]
            dependent = _Dependence(chooser) if self.reduce and last else None
            for h in last:
                # the sibling before "until y" ran the held action at the time of the
                # action before y (the first: when the hold began); if time moved in
                # between, the two siblings differ by more than the order of two actions
                before: float | None = chooser.held_at.get(h.what)
                for y in _dedup(chooser.during.get(h.what, [])):
                    if dependent is not None:
                        at = dependent.time_of[y]
                        same_time, before = at == before, at
                        if same_time and not dependent(h.what, y):
                            self.skipped += 1
                            continue
                    sib = canonical_plan([*(e for e in plan if e != h), Hold(h.what, y)])
                    key = frozenset(sib)
                    if key not in seen:
                        seen.add(key)
                        queue.append(sib)
            if depth < self.max_entries:
                for child in _children(plan, chooser):
                    key = frozenset(child)
                    if key not in seen:
                        seen.add(key)
                        nxt.append(child)
        return False


class _Dependence:
    """Which actions of one run may not commute with a held action's process (see :class:`_PlanSearch`)."""

    def __init__(self, chooser: PlanChooser) -> None:
        self.process_of = chooser.process_of
        self.footprint = dict(zip(chooser.ran, chooser.footprints, strict=True))
        #: action -> the virtual time it ran at
        self.time_of = dict(zip(chooser.ran, chooser.times, strict=True))
        self._by_process: dict[str | None, dict[object, bool]] = {}

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

    def __call__(self, held: Ident, y: Ident) -> bool:
        px = self.process_of(held.actor)
        py = self.process_of(y.actor)
        if px is None or py is None or px == py:
            return True
        mine = self._process_footprint(px)
        return any(res in mine and (wrote or mine[res]) for res, wrote in self.footprint.get(y, ()))


def _fault_count(plan: tuple[Entry, ...]) -> int:
    return sum(1 for e in plan if isinstance(e, Fault))


def _dedup(items: list[Ident]) -> list[Ident]:
    out: list[Ident] = []
    seen: set[Ident] = set()
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def _children(plan: tuple[Entry, ...], chooser: PlanChooser) -> list[tuple[Entry, ...]]:
    held = {e.what for e in plan if isinstance(e, Hold)}
    faulted = {e.at for e in plan if isinstance(e, Fault)}
    picked = {e.at for e in plan if isinstance(e, Pick)}
    kids: list[tuple[Entry, ...]] = []
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


def _search_exhaustive(
    runner: _Runner, max_deviations: int, reduce: bool = True
) -> tuple[RunOutcome | None, bool, tuple[Entry, ...], int]:
    """Breadth-first over plans. Returns (first failure, complete?, its plan, plans skipped by the reduction)."""
    search = _PlanSearch(runner, max_deviations, _failed, reduce)
    search.run()
    if search.found is not None:
        return search.found[0], True, search.found[1], search.skipped
    return None, search.complete_levels >= max_deviations, (), search.skipped
