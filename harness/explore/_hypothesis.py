"""The Hypothesis strategy: plans drawn over the identities the runs have met."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..sim import Entry, Fault, Hold, Ident, Pick, PlanChooser, RunOutcome, canonical_plan
from ._runner import _failed, _mix, _Runner


class _Pools:
    """What a Hypothesis-drawn plan may name: the actions, fault points and data choices of the canonical run."""

    def __init__(self, chooser: PlanChooser) -> None:
        self.held: list[Ident] = []
        self.ran: list[Ident] = []
        self.faults: list[Ident] = []
        self.data: list[tuple[Ident, int]] = []
        self._seen: set[tuple[str, Ident]] = set()
        self._pos: dict[Ident, int] = {}  # first place of an action in `ran`
        self.learn(chooser)

    def learn(self, chooser: PlanChooser) -> None:
        """Append what a run met that no earlier run did (its order: deterministic).

        A drawn program (a RaceMachine's rules, a picked branch) spawns actions
        the canonical run never had; the pools grow so later draws can name them.
        Earlier indexes keep their meaning, so small draws still mean "early in
        the canonical run".
        """
        for ident, _n in chooser.decisions:
            self._add("held", ident, self.held, ident)
        for ident in chooser.ran:
            if ident not in self._pos:
                self._pos[ident] = len(self.ran)
            self._add("ran", ident, self.ran, ident)
        for ident, _k in chooser.fault_points:
            self._add("fault", ident, self.faults, ident)
        for ident, n in chooser.data_points:
            if n > 1:
                self._add("data", ident, self.data, (ident, n))

    def _after(self, what: Ident, b: int) -> Ident:
        """The ``b``-th action after ``what`` in the order runs met them: small ``b`` is "a little late".

        Counting from the held action itself (not from the start of the run)
        makes a short postponement as cheap to draw as any other, so a late
        delivery needs no luck in two independent draws.
        """
        start = self._pos.get(what, -1) + 1
        return self.ran[(start + b) % len(self.ran)]

    def _add(self, pool: str, ident: Ident, into: list[Any], item: Any) -> None:
        if (pool, ident) not in self._seen:
            self._seen.add((pool, ident))
            into.append(item)

    def plan(self, raw: list[tuple[int, int, int]]) -> tuple[Entry, ...]:
        out: dict[Any, Entry] = {}
        kinds = [k for k, pool in ((0, self.held), (1, self.faults), (2, self.data)) if pool]
        for drawn, a, b in raw:
            kind = kinds[drawn % len(kinds)] if kinds else -1
            if kind == 0 and self.held:
                what = self.held[a % len(self.held)]
                until = None if b < 0 or not self.ran else self._after(what, b)
                out.setdefault(("hold", what), Hold(what, until))
            elif kind == 1 and self.faults:
                at = self.faults[a % len(self.faults)]
                out.setdefault(("fault", at), Fault(at))
            elif kind == 2 and self.data:
                ident, n = self.data[a % len(self.data)]
                out.setdefault(("pick", ident), Pick(ident, 1 + abs(b) % (n - 1)))
        return canonical_plan(out.values())


def _search_hypothesis(runner: _Runner, seed: int) -> RunOutcome | None:
    """Let Hypothesis draw plans over the canonical run's actions; its shrinker removes entries.

    A runs budget is one Hypothesis search of that many examples. A seconds
    budget runs searches of ``_CHUNK`` examples with derived seeds until the time
    is spent: raising out of a Hypothesis test to stop it early is treated as a
    flaky test, so we never do.
    """
    base = PlanChooser()
    out = runner.run(base)
    if _failed(out):
        return out
    pools = _Pools(base)
    if runner.budget.runs is not None:
        return _hypothesis_chunk(runner, pools, seed, max(1, runner.budget.runs - runner.runs))
    k = 0
    while not runner.exhausted():
        found = _hypothesis_chunk(runner, pools, _mix(seed, k), _CHUNK)
        if found is not None:
            return found
        k += 1
    return None


_CHUNK = 200
_MIN_POOL_DRAW = 64  # room for what the canonical run never met
_MAX_ENTRIES = 8  # more entries per draw: a late delivery is hit sooner; the plan shrinker removes the rest


def _hypothesis_chunk(runner: _Runner, pools: _Pools, seed: int, examples: int) -> RunOutcome | None:
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    # Indexes are bounded by the pools (fixed for the search), so Hypothesis's preference for small
    # values means "early in the canonical run" and -1 (no until: as long as the window allows).
    # The pools grow as runs meet new actions; draws beyond a pool wrap around it.
    if not (pools.held or pools.faults or pools.data):
        return None
    size = max(len(pools.held), len(pools.faults), len(pools.data), _MIN_POOL_DRAW)
    until = st.just(-1) | st.integers(0, max(_MIN_POOL_DRAW, 2 * len(pools.ran)) - 1)
    entry = st.tuples(st.integers(0, 2), st.integers(0, 2 * size - 1), until)
    handoff = _Handoff()

    @hseed(seed)
    @settings(
        max_examples=max(1, examples),
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate],  # the plan shrinker and the referee minimize what is found
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.lists(entry, min_size=1, max_size=_MAX_ENTRIES))
    def search(raw: list[tuple[int, int, int]]) -> None:
        chooser = PlanChooser(pools.plan(raw))
        handoff.run(chooser)
        pools.learn(chooser)

    return handoff.drive(runner, search)


class _Halt(BaseException):
    """Raised in the Hypothesis test to end its search at once: not a failure, never replayed.

    Hypothesis treats an ``Exception`` (and ``SystemExit``, ``GeneratorExit``) raised by
    the test as a failing example: it replays it and calls the test flaky when the replay
    passes. Any other ``BaseException`` it re-raises at once, as it does
    ``KeyboardInterrupt`` (hypothesis ``core.failure_exceptions_to_catch``). Every
    call after the first raises it too, so a Hypothesis that did replay it would see
    the same outcome (pinned by tests/explore/test_hypothesis_batch.py).
    """


_RAN = "ran"
_HALT = "halt"
_DONE = "done"


class _Handoff:
    """Hypothesis's loop in a worker thread, the runs in one ``trio.run`` on this one: a strict hand-off.

    ``@given`` owns its loop (it calls the test once per example) and so does
    :func:`~harness.sim.run_batch` (it asks an iterator for the next chooser and
    runs it inside the ``trio.run`` it already has). The worker runs the Hypothesis
    search; each example draws its plan, puts the chooser on ``requests`` and waits
    for the reply. This thread, inside ``run_batch``, takes the chooser, runs it and
    replies "ran" when ``run_batch`` asks for the next one. One side works at a time,
    so the runs are Hypothesis's examples in Hypothesis's order: same seed, same runs.

    Why this way round: the runs stay on the main thread inside ``trio.run``, as
    random's and PCT's do, so Ctrl-C, the stop request, the budget and an exception
    raised by the scenario end a Hypothesis search exactly as they end theirs
    (:meth:`_Runner.run_many`), between runs. Rejected: Trio on the worker and
    Hypothesis here (Ctrl-C would land in Hypothesis's engine, the runs could not see
    it); Trio's guest mode driven from the test (every scheduler batch pays a
    thread hop for its I/O wait: dearer than one ``trio.run`` per example); driving
    Hypothesis's engine by hand (internal API, STYLE 16).

    When the search stops (a failure, the budget, Ctrl-C, an exception) this thread
    replies "halt" to the pending example and to any drawn after it; the test
    raises :class:`_Halt` and the worker ends.
    """

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue[Any] = queue.SimpleQueue()  # worker -> main: a chooser or _DONE
        self.replies: queue.SimpleQueue[str] = queue.SimpleQueue()  # main -> worker: _RAN or _HALT
        self.pending = False  # main: a chooser is in run_batch's hands, not answered yet
        self.done = False  # main: the worker said _DONE
        self.halted = False  # worker: told to halt; every later example halts too
        self.error: BaseException | None = None  # worker: what the search raised, other than _Halt

    # ------------------------------------------------------------- worker side
    def run(self, chooser: PlanChooser) -> None:
        """Have ``chooser`` run on the main thread; raises :class:`_Halt` when the search stops instead."""
        if self.halted:
            raise _Halt
        self.requests.put(chooser)
        if self.replies.get() != _RAN:
            self.halted = True
            raise _Halt

    def _work(self, search: Callable[[], None]) -> None:
        try:
            search()
        except _Halt:
            pass
        except BaseException as exc:  # handed to the main thread, raised there
            self.error = exc
        finally:
            self.requests.put(_DONE)

    # --------------------------------------------------------------- main side
    def choosers(self) -> Iterator[PlanChooser]:
        while True:
            item = self.requests.get()
            if item is _DONE:
                self.done = True
                return
            self.pending = True
            yield item
            self.pending = False  # run_batch asks for the next one: this one ran and the search goes on
            self.replies.put(_RAN)

    def drive(self, runner: _Runner, search: Callable[[], None]) -> RunOutcome | None:
        worker = threading.Thread(target=self._work, args=(search,), name="hypothesis plans", daemon=True)
        worker.start()
        try:
            found = runner.run_many(self.choosers())
        finally:
            self._close(worker)
        if self.error is not None:
            raise self.error
        return found

    def _close(self, worker: threading.Thread) -> None:
        """Halt the pending example and any drawn after it; wait for the worker to end."""
        if self.pending:
            self.pending = False
            self.replies.put(_HALT)
        while not self.done:
            if self.requests.get() is _DONE:
                self.done = True
            else:
                self.replies.put(_HALT)
        worker.join()
