"""The Hypothesis strategy: plans drawn over the runs met so far, many examples per ``trio.run``.

What an example is
------------------
One draw of a short byte string, spelled as a plan by :meth:`_Pools.plan`: the
first byte picks a *base* (the canonical run half the time, else a run of the
corpus: runs that met an identity no earlier run met, with their plans), then
every 4 bytes are one entry on top of the base's plan, naming an action, fault
point or data choice *of the base's run*: a hold (on any action, or on one on an
object, where races are) ending at its window's end, at a time inside its
window, a few actions later or at a later instant; a fault; a pick. A late
delivery is one entry, a drawn program (RaceMachine rules) is kept in the corpus
and a later plan adds the hold it needs.

Why one byte string: a single primitive draw is the cheapest example Hypothesis
makes (a list of tuples of integers costs several times as much in strategy and
span bookkeeping), and Hypothesis mixes constants found in the source of local
modules into integer draws (which ones depends on the modules imported so far:
the same seed would give other plans in another process) but into byte strings
only from bytes literals of a drawable length, and this project has none.

Many examples, one ``trio.run``: see :class:`_Handoff`.
"""

from __future__ import annotations

import bisect
import functools
import math
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..sim import Entry, Fault, Hold, Ident, Option, Pick, PlanChooser, RunOutcome, canonical_plan
from ._runner import _failed, _mix, _Runner


class _PlanRun(PlanChooser):
    """A :class:`PlanChooser` that also notes the time of every step and each action's window.

    A plan drawn on top of this run names its actions, and two kinds of hold
    end need time: a time inside the held action's window ("the DELETE arrives
    1.4 s late"), and the first action of a later instant ("until the 1 s timer
    fires", before anything else at that instant).
    """

    def __init__(self, plan: tuple[Entry, ...] = ()) -> None:
        super().__init__(plan)
        #: virtual time of each step, parallel to ``ran``
        self.times: list[float] = []
        #: action -> (nominal, latest): the window of each action that ran at a decision with one
        self.windows: dict[Ident, tuple[float, float]] = {}

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        ran = len(self.ran)
        idx = super().schedule(options, now, can_wait)
        if len(self.ran) > ran:  # an action ran (not a time jump): its time, and its window if it had one
            self.times.append(now)
            o = options[idx]
            if o.nominal < o.latest < math.inf:
                self.windows.setdefault(o.ident, (o.nominal, o.latest))  # type: ignore[arg-type]
        return idx


class _Base:
    """A run a drawn plan extends: its plan, and what it met in its own order."""

    __slots__ = ("_leaders", "_pos", "data", "faults", "held", "keyed", "plan", "ran", "times", "windows")

    def __init__(self, plan: tuple[Entry, ...], chooser: _PlanRun) -> None:
        self.plan = plan
        self.held = [ident for ident, _n in chooser.decisions]  # each step's identity is unique in its run
        #: the held actions on an object (an API call, a delivery, a read of a key): where races are
        self.keyed = [ident for ident in self.held if ident.key is not None] or self.held
        self.ran = chooser.ran
        self.times = chooser.times
        self.faults = [ident for ident, _k in chooser.fault_points]
        self.data = [(ident, n) for ident, n in chooser.data_points if n > 1]
        self.windows = chooser.windows
        self._pos: dict[Ident, int] | None = None
        self._leaders: list[int] | None = None

    def until(self, what: Ident, mode: int, b: int) -> Ident | float | None:
        """When a hold on ``what`` ends, from two drawn numbers (``mode`` 0..3, ``b`` 0..255).

        0: as long as its window allows. 1: a time inside its window, ``b``/256
        of the way (no window: as 2). 2: after the action ``b`` places on, on a
        log scale from the very next action to the last (a little late is as
        cheap to draw as very late). 3: after the first action of a later
        instant, on the same log scale: a timer that fires, a poll that comes
        round, before the rest of that instant.
        """
        if mode == 0:
            return None
        if mode == 1:
            w = self.windows.get(what)
            if w is not None:
                return w[0] + (b + 0.5) / 256 * (w[1] - w[0])
        if self._pos is None:
            self._pos = {ident: i for i, ident in enumerate(self.ran)}
        start = self._pos.get(what, -1) + 1
        if mode == 3:
            if self._leaders is None:
                t = self.times
                self._leaders = [i for i in range(1, len(t)) if t[i] > t[i - 1]]
            first = bisect.bisect_left(self._leaders, start)
            later = len(self._leaders) - first
            if later:
                return self.ran[self._leaders[first + _log_index(later, b)]]
        rest = len(self.ran) - start
        return self.ran[start + _log_index(rest, b)] if rest > 0 else None


def _log_index(n: int, b: int) -> int:
    """An index in ``range(n)`` from a byte, log-uniform: 0 about as likely as 1-2, as 3-6, ..."""
    return min(n - 1, int((n + 1) ** (b / 255)) - 1)


class _Pools:
    """What a Hypothesis-drawn plan extends and names: the canonical run, and runs that met something new.

    A plan is a base (the canonical run or a run of the corpus) plus drawn
    entries naming actions, fault points and data choices *of that base's run*.
    A run that meets an identity no earlier run met joins the corpus: a drawn
    program (a RaceMachine's rules, a picked branch) or a hold that opened a new
    path is kept, and later plans build on it where that path's actions are
    nameable, instead of needing every entry again in one draw. The corpus keeps
    ``_CORPUS`` runs, the oldest replaced first; everything here follows from the
    order of the runs, so it is deterministic.
    """

    def __init__(self, chooser: _PlanRun) -> None:
        self.bases: list[_Base] = [_Base((), chooser)]
        self._seen: set[Ident] = set()
        self._novel(chooser)
        self._next = 1  # the corpus slot replaced next when it is full

    @property
    def held(self) -> list[Ident]:
        return self.bases[0].held

    @property
    def faults(self) -> list[Ident]:
        return self.bases[0].faults

    @property
    def data(self) -> list[tuple[Ident, int]]:
        return self.bases[0].data

    def _novel(self, chooser: _PlanRun) -> bool:
        seen = self._seen
        n = len(seen)
        seen.update(chooser.ran)
        seen.update(ident for ident, _k in chooser.fault_points)
        seen.update(ident for ident, _n in chooser.data_points)
        return len(seen) > n

    def learn(self, chooser: _PlanRun) -> None:
        """Keep the run in the corpus when it met something no earlier run did."""
        if not self._novel(chooser) or len(chooser.plan) > _MAX_BASE_ENTRIES:
            return
        base = _Base(chooser.plan, chooser)
        if len(self.bases) < _CORPUS:
            self.bases.append(base)
            return
        self.bases[self._next] = base
        self._next = self._next + 1 if self._next + 1 < _CORPUS else 1

    def plan(self, raw: bytes) -> tuple[Entry, ...]:
        """The plan ``raw`` spells: a base (first byte), then one entry per ``_ENTRY`` bytes."""
        if not raw:
            return ()
        head = raw[0]
        base = self.bases[0] if head < 128 or len(self.bases) == 1 else self.bases[1 + head % (len(self.bases) - 1)]
        out: dict[Any, Entry] = {_key(e): e for e in base.plan}
        kinds = [k for k, pool in ((0, base.held), (1, base.faults), (2, base.data)) if pool]
        if not kinds:
            return canonical_plan(out.values())
        for i in range(1, len(raw) - _ENTRY + 1, _ENTRY):
            k, hi, lo, b = raw[i], raw[i + 1], raw[i + 2], raw[i + 3]
            kind = kinds[k % len(kinds)]
            a = (hi & 0x7F) << 8 | lo
            e: Entry
            if kind == 0:
                held = base.keyed if hi & 0x80 else base.held
                what = held[a % len(held)]
                e = Hold(what, base.until(what, (k // len(kinds)) & 3, b))
            elif kind == 1:
                e = Fault(base.faults[a % len(base.faults)])
            else:
                ident, n = base.data[a % len(base.data)]
                e = Pick(ident, 1 + b % (n - 1))
            out[_key(e)] = e
        return canonical_plan(out.values())


def _key(e: Entry) -> tuple[str, Ident]:
    """What an entry is about: a later entry on the same action, point or choice replaces it."""
    return (e.kind, e.what if isinstance(e, Hold) else e.at)


def _search_hypothesis(runner: _Runner, seed: int) -> RunOutcome | None:
    """Let Hypothesis draw plans over the runs met so far; the plan shrinker and the referee minimize.

    A runs budget is one Hypothesis search of that many examples. A seconds
    budget runs searches of ``_CHUNK`` examples with derived seeds until the time
    is spent (one search's memory of its examples stays bounded); the corpus
    carries over from one to the next. Either way a stop between two examples
    (the budget, Ctrl-C, a failure) halts the search at once (:class:`_Halt`).
    """
    base = _PlanRun()
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
_ENTRY = 4  # bytes per plan entry: kind and until-mode, which (2 bytes), until or value
_MIN_ENTRIES = 3  # a plan of several holds hits a one-late-delivery bug as often as a random walk does
_MAX_ENTRIES = 12  # the plan shrinker and the referee remove the extras
_CORPUS = 64  # runs kept to build on, the canonical run included
_MAX_BASE_ENTRIES = 4  # a plan with more entries is not built on (plans would only grow)


def _hypothesis_chunk(runner: _Runner, pools: _Pools, seed: int, examples: int) -> RunOutcome | None:
    """At most ``examples`` Hypothesis examples, one run each, all in one ``trio.run``; the failing run, if any.

    Each example is one draw: a base byte and 1 to ``_MAX_ENTRIES`` entries of
    ``_ENTRY`` bytes, spelled as a plan by :meth:`_Pools.plan` (module docstring).
    """
    if not (pools.held or pools.faults or pools.data):
        return None
    handoff = _Handoff()
    return handoff.drive(runner, functools.partial(_search, handoff, pools, seed, examples))


def _search(handoff: _Handoff, pools: _Pools, seed: int, examples: int) -> None:
    """The Hypothesis search, built and run on the worker thread.

    Hypothesis keeps its "inside a test" state per thread, so a search run from
    inside a user's own ``@given`` test is not a nested ``@given`` to it.
    """
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

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
    @given(st.binary(min_size=1 + _ENTRY * _MIN_ENTRIES, max_size=1 + _ENTRY * _MAX_ENTRIES))
    def search(raw: bytes) -> None:
        chooser = _PlanRun(pools.plan(raw))
        handoff.run(chooser)
        pools.learn(chooser)

    search()


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
    """Hypothesis's loop on a worker thread, the runs in one ``trio.run`` on the caller's: a strict hand-off.

    ``@given`` owns its loop (it calls the test once per example) and so does
    :func:`~harness.sim.run_batch` (it asks an iterator for the next chooser and
    runs it inside the ``trio.run`` it already has). The worker builds and runs the
    Hypothesis search; each example draws its plan, puts the chooser on
    ``requests`` and waits for the reply. The calling thread, inside ``run_batch``,
    takes the chooser, runs it and replies "ran" when ``run_batch`` asks for the
    next one. One side works at a time, so the runs are Hypothesis's examples in
    Hypothesis's order: same seed, same runs.

    Why this way round: the runs stay on the main thread inside ``trio.run``, as
    random's and PCT's do, so Ctrl-C, the stop request, the budget and an exception
    raised out of a run end a Hypothesis search exactly as they end theirs
    (:meth:`_Runner.run_many`), between runs. Rejected: Trio on the worker and
    Hypothesis on the main thread (Ctrl-C would land in Hypothesis's engine and
    the runs could not see it); Trio's guest mode driven from the test (every
    scheduler batch pays a thread hop for its I/O wait: dearer than one
    ``trio.run`` per example); driving Hypothesis's engine by hand (internal API,
    STYLE 16).

    When the search stops (a failure, the budget, Ctrl-C, an exception) the caller
    replies "halt" to the pending example and to any drawn after it; the test
    raises :class:`_Halt` and the worker ends. An error of the search itself is
    raised on the caller once the worker has ended.
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
