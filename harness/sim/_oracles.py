"""Is the run over: the world's oracles (invariant, eventually, bound, at_end, fail), their checks and the verdict.

Oracle evaluation is shared by both clocks of :class:`World` (the harness's
scheduler and Trio's own). The first violation ends the run (:meth:`_Oracles._fail`);
an invariant broken while time jumped is bisected to the instant it broke, and
the end of a run (settled or at its horizon) runs the ``eventually`` and
``at_end`` checks. What an oracle read is kept for the story of a told run.

An oracle function holds when it returns anything but ``False`` or a string,
and does not raise ``AssertionError``; a string or an assertion message is the
explanation of why it does not hold.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import trio

from ._outcome import Violation
from ._state import _RunState
from ._time import TICKS_PER_SECOND, later, to_seconds
from ._trace import Access

if TYPE_CHECKING:
    from ._actors import _Actor


def holds(name: str, fn: Callable[[], object], *, broken: str | None = None) -> str | None:
    """None if ``fn`` holds, else the message why not (``broken`` replaces the bare default)."""
    try:
        ok = fn()
    except AssertionError as exc:
        return str(exc) or f"'{name}' does not hold"
    if ok is False:
        return broken or f"'{name}' does not hold"
    if isinstance(ok, str):
        return ok
    return None


def first_broken_invariant(invariants: Sequence[tuple[str, Callable[[], object]]]) -> tuple[str, str] | None:
    """``(name, message)`` of the first invariant that does not hold, in registration order."""
    for name, fn in invariants:  # holds() inlined: this runs after every step, the words only on failure
        try:
            ok = fn()
        except AssertionError as exc:
            return name, str(exc) or f"'{name}' does not hold"
        if ok is False:
            return name, f"invariant '{name}' broken"
        if isinstance(ok, str):
            return name, ok
    return None


def first_exceeded_bound(
    bounds: Sequence[tuple[str, Callable[[], float], float]], peaks: dict[str, float]
) -> tuple[str, str] | None:
    """Update every bound's peak; ``(name, message)`` of the first one over its limit."""
    for name, metric, limit in bounds:
        value = float(metric())
        if value > peaks[name]:
            peaks[name] = value
        if value > limit:
            return name, f"bound '{name}' exceeded: {value:g} > {limit:g}"
    return None


def where(exc: BaseException) -> str:
    """``dir/file.py:line in function`` of the innermost frame outside the runtime."""
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if "/harness/sim/" not in f.filename.replace("\\", "/")] or list(tb)
    if not frames:
        return "unknown location"
    f = frames[-1]
    short = f.filename.replace("\\", "/").rsplit("/", 2)
    return f"{'/'.join(short[-2:])}:{f.lineno} in {f.name}"


class _Eventually:
    """An ``eventually`` oracle not yet met: ``fn`` must hold by ``deadline_ns``."""

    __slots__ = ("deadline_ns", "fn", "name", "scope", "since_ns", "why")

    def __init__(self, name: str, fn: Callable[[], object], since_ns: int, deadline_ns: int) -> None:
        self.name = name
        self.fn = fn
        self.since_ns = since_ns
        self.deadline_ns = deadline_ns
        #: the last explanation ``fn`` gave for not holding (the violation's "because")
        self.why: str | None = None
        #: the real clock's watchdog (None under virtual time, where the scheduler watches the deadline)
        self.scope: trio.CancelScope | None = None

    @property
    def deadline(self) -> float:
        return to_seconds(self.deadline_ns)

    def because(self) -> str:
        """': <the last explanation>' when ``fn`` returned one, else ''."""
        why = self.why
        return f": {why}" if why and why != f"'{self.name}' does not hold" else ""

    def missed(self, extra: str = "", *, because: bool = True) -> str:
        """The violation's message when the deadline passed with ``fn`` still not holding."""
        since = self.since_ns / TICKS_PER_SECOND
        return (f"'{self.name}' did not happen within {self.deadline - since:g} virtual seconds "
                f"(expected by t={self.deadline:g}, registered at t={since:g}{extra}){self.because() if because else ''}")


class _Oracles(_RunState):
    """The world's oracles: what must hold, when they are checked, and the first violation."""

    # -------------------------------------------------------------- oracles
    def invariant(self, fn: Callable[[], object], name: str) -> None:
        """Check ``fn`` after every step and at every time jump.

        ``fn`` holds when it returns None or True (or any other non-string value but False). A
        violation is ``False``, a raised AssertionError (its message is the violation's), or a
        returned string: the string is the violation's message, so a check written as
        ``def check() -> str | None`` says what is wrong ("Pod rs1-2 has no PodGroup").

        An invariant that reads ``world.now`` ("no expectation older than the
        timeout + 20 s") can turn false while time jumps with nothing running;
        the jump is then bisected so the violation carries the instant it
        became false, not the next instant something happened.
        """
        self._invariants.append((name, fn))

    def eventually(self, fn: Callable[[], object], *, within: float, name: str) -> None:
        """``fn`` must hold within ``within`` virtual seconds from now (liveness).

        ``fn`` may return a string saying why it does not hold yet ("1 of 2
        pods; expectations add=2"); the last one it returned is the
        violation's explanation when the deadline passes.
        """
        now_ns = self._clock_ns()
        deadline_ns = later(now_ns, within)
        ev = _Eventually(name, fn, now_ns, deadline_ns)
        self._eventually.append(ev)
        if self._real is not None:
            self._real.eventually_deadline(ev, within)

    def bound(self, metric: Callable[[], float], max: float, name: str) -> None:
        """``metric()`` must never exceed ``max``; its peak is reported either way."""
        self._bounds.append((name, metric, max))
        self.peaks.setdefault(name, -math.inf)

    def expose(self, name: str, fn: Callable[[], object]) -> None:
        """Show ``fn()`` (the model's own memory: expectations, a controller's cache) in reports.

        Reports snapshot every view at every step, like the object stores, so a
        leaked expectation or a stale in-memory job is visible where it changed.
        ``fn`` must not change the run; it should return plain data (dicts,
        lists, strings, numbers).
        """
        self.views[name] = fn

    def at_end(self, fn: Callable[[], object], name: str) -> None:
        """Check ``fn`` once the run settles or reaches its horizon; it fails as :meth:`invariant` does."""
        self._at_end.append((name, fn))

    def fail(self, message: str, *, name: str = "scenario assertion") -> None:
        """Declare a violation from model code (ends the run at the current step)."""
        self._fail("oracle", name, message, self._me())

    def _check_oracles(self) -> None:
        fp = self._fp
        if fp is None:
            self._check_oracles_now()
            return
        # what an oracle reads is no step's footprint: in a told run it is the oracle's reads, else nothing
        reads: list[Access] | None = [] if self._notes is not None else None
        self._fp = self._oracle_reads = reads
        try:
            self._check_oracles_now()
        finally:
            if reads is not None and self._violation is not None and not self._last_oracle_reads:
                self._last_oracle_reads = tuple(reads)
            self._fp, self._oracle_reads = fp, None

    def _check_oracles_now(self) -> None:
        broken = first_broken_invariant(self._invariants)
        if broken is not None:
            self._fail("oracle", broken[0], broken[1], None)
            return
        if self._eventually:
            keep = []
            reads = self._oracle_reads
            for ev in self._eventually:
                if reads is not None:
                    reads.clear()
                why = holds(ev.name, ev.fn)
                if why is not None:
                    ev.why = why
                    keep.append(ev)
                    if reads is not None:  # what it read when it last did not hold: the story starts there
                        self._eventually_reads[ev.name] = tuple(reads)
                elif ev.scope is not None:
                    ev.scope.cancel()  # the real clock's watchdog: discharged, it no longer keeps the run alive
            self._eventually = keep
            if reads is not None:
                reads.clear()
        exceeded = first_exceeded_bound(self._bounds, self.peaks)
        if exceeded is not None:
            self._fail("oracle", exceeded[0], exceeded[1], None)

    def _fail(self, kind: str, name: str, message: str, actor: _Actor | None) -> None:
        if self._violation is None:
            self._violation = Violation(kind, name, message, self._step, self.now, actor.name if actor else None)
            if self._real is not None:
                self._real.stop()

    def _not_a_result(self, name: str, message: str) -> None:
        """The run cannot count as a result (an operator that never reached the API): a model error, in place of
        whatever the run would have said. An oracle broken in a run whose operator never worked is the model's own
        doing, never the operator's, so it is overruled too; an interruption is kept (it is no verdict either)."""
        if self._interrupted or (self._violation is not None and self._violation.kind == "misuse"):
            return
        self._violation = None
        self._fail("misuse", name, message, None)

    def _check_invariants_over_jump(self, before: int) -> None:
        fp = self._fp
        reads: list[Access] | None = [] if self._notes is not None else None
        self._fp = reads
        try:
            self._bisect_invariants(before)
        finally:
            if reads is not None and self._violation is not None and not self._last_oracle_reads:
                self._last_oracle_reads = tuple(reads)
            self._fp = fp

    def _bisect_invariants(self, before: int) -> None:
        """Nothing ran while time moved from ``before``: find the first instant an invariant broke.

        Only time changed, so an invariant broken now and holding at ``before``
        depends on time; bisecting (to a microsecond) puts the violation at the
        instant it became false. Rejected: checking at fixed ticks, which adds
        steps to every run and still misses the instant.
        """
        target = self._now_ns
        if first_broken_invariant(self._invariants) is None:
            return
        lo, hi = before, target
        while hi - lo > 1_000:
            self._now_ns = mid = (lo + hi) // 2
            if first_broken_invariant(self._invariants) is None:
                lo = mid
            else:
                hi = mid
        self._now_ns = hi
        broken = first_broken_invariant(self._invariants)
        if broken is None:  # not monotone in time: report where it was seen broken
            self._now_ns = target
            broken = first_broken_invariant(self._invariants)
        if broken is not None:
            self._fail("oracle", broken[0], broken[1], None)

    def _end_checks(self, how: str) -> None:
        self._ended = True
        for ev in self._eventually:
            if how == "settled" and (self._real is None or holds(ev.name, ev.fn) is not None):
                self._last_oracle_reads = self._eventually_reads.get(ev.name, ())
                self._fail(
                    "oracle",
                    ev.name,
                    f"'{ev.name}' never happened: the run settled at t={self.now:g} "
                    f"(it was expected by t={ev.deadline:g}){ev.because()}",
                    None,
                )
                return
        for name, fn in self._at_end:
            fp = self._fp
            if fp is not None:
                self._fp = self._oracle_reads = [] if self._notes is not None else None
            msg = holds(name, fn)
            if self._oracle_reads is not None:
                self._last_oracle_reads, self._oracle_reads = tuple(self._oracle_reads), None
            self._fp = fp
            if msg is not None:
                self._fail("oracle", name, f"at the end of the run: {msg}", None)
                return
        self._check_oracles()
