"""The strategies a search may be asked for, and their textual forms (``"pct:4"``, ``"exhaustive:3"``).

A strategy is a frozen value naming a search and its settings; ``name`` is what
the CLI and the plugin accept, ``describe()`` what a counterexample records.
:func:`make_strategy` reads the forms :data:`STRATEGY_FORMS` lists (checked once,
in ``harness/_options.py``, so the CLI, the plugin and this module agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._errors import UsageError
from .._options import STRATEGY_FORMS as _STRATEGY_FORMS
from .._options import parse_strategy
from ..sim import Entry
from ._counterexample import Counterexample


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
    """Every plan of up to ``max_deviations`` entries; ``reduce=False`` also runs every reordering of
    actions the reduction finds independent (see ``World.share_memory``)."""

    max_deviations: int = 2
    reduce: bool = True
    name = "exhaustive"

    def describe(self) -> str:
        off = "" if self.reduce else ", reduce=False"
        return f"exhaustive(max_deviations={self.max_deviations}{off})"


@dataclass(frozen=True)
class Portfolio(Strategy):
    """Random, PCT, Hypothesis, Sieve's patterns and small plans in turns, within one budget.

    A round is ``chunk`` runs of random, ``chunk`` of PCT, half a chunk of
    Hypothesis, half a chunk of each pattern member whose candidates are not
    spent (``harness/explore/_patterns.py``: a few dozen plans at most, so
    they take turns in the first rounds only), and half a chunk of small
    plans; once the patterns are spent, a round is what it was before they
    joined, and the two walks that find most races first keep their share.
    """

    seed: int = 0
    chunk: int = 40
    name = "portfolio"

    def describe(self) -> str:
        return f"portfolio(seed={self.seed})"


@dataclass(frozen=True)
class Canonical(Strategy):
    name = "canonical"


@dataclass(frozen=True)
class Replay(Strategy):
    """One run of a stored counterexample: its plan when it has one, else its positional choices.

    What the stored file says about minimality carries over (``proved``, ``proof``): a replay
    reruns a counterexample, it does not search or shrink it again.
    """

    choices: tuple[int, ...] = ()
    plan: tuple[Entry, ...] | None = None
    proved: bool | None = None
    proof: str = ""
    #: the trace file replayed and its counterexample: the run is checked against it step by step, and
    #: the result reads "replayed trace FILE: same violation" or "... diverged at step N because ..."
    source: str | None = None
    expected: Counterexample | None = field(default=None, compare=False)
    name = "replay"

    @classmethod
    def of(cls, cx: Counterexample, source: str) -> Replay:
        """A replay of ``cx`` (loaded from ``source``) that checks the run against it."""
        return cls(tuple(cx.choices), cx.plan, cx.proved_minimal, cx.proof, source, cx)


STRATEGIES = ("portfolio", "random", "pct", "hypothesis", "exhaustive", "canonical")
DEFAULT_STRATEGY = "portfolio"
STRATEGY_FORMS = _STRATEGY_FORMS  # harness/_options.py: the one list, shared with the CLI and the plugin


def make_strategy(spec: str | Strategy, *, seed: int = 0) -> Strategy:
    """``"portfolio"``, ``"random"``, ``"pct"``, ``"pct:4"``, ``"hypothesis"``, ``"exhaustive:3"``, ``"canonical"``."""
    if isinstance(spec, Strategy):
        return spec
    parse_strategy(spec)  # the one validation (harness/_options.py): a UsageError naming the accepted forms
    name, _, arg = spec.strip().partition(":")
    try:
        if name == "portfolio" and not arg:
            return Portfolio(seed)
        if name == "random" and not arg:
            return Random(seed)
        if name == "pct" and (not arg or int(arg) >= 1):
            return PCT(seed, int(arg) if arg else 3)
        if name == "hypothesis" and not arg:
            return Hypothesis(seed)
        if name == "exhaustive" and (not arg or int(arg) >= 0):
            return Exhaustive(int(arg) if arg else 2)
        if name == "canonical" and not arg:
            return Canonical()
    except ValueError:
        pass
    raise UsageError(f"unknown strategy {spec!r}; use one of {STRATEGY_FORMS}")
