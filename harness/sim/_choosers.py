"""Choosers: the per-run decision makers behind the strategies.

A chooser answers ``choose(n, options, label)`` with an absolute index into the
enabled set (or into ``range(n)`` for a data choice). Keeping the encoding
absolute (0 = canonical) is what lets Hypothesis shrink towards the canonical
run: a "keep running the current actor" encoding shrank badly in our prototype.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ._world import Option


class RandomChooser:
    """Uniform over the enabled set; data choices uniform too."""

    wants_options = False

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def choose(self, n: int, options: Sequence[Option] | None, label: str) -> int:
        return self._rng.randrange(n)


class ReplayChooser:
    """Replays a list of choices; past its end every decision is canonical (0)."""

    wants_options = False

    def __init__(self, choices: Sequence[int]) -> None:
        self._choices = list(choices)
        self._i = 0
        self.clamped = 0  #: how many recorded choices were out of range on replay

    def choose(self, n: int, options: Sequence[Option] | None, label: str) -> int:
        i = self._i
        self._i += 1
        if i >= len(self._choices):
            return 0
        c = self._choices[i]
        if c >= n:
            self.clamped += 1
            return c % n
        return c


class PCTChooser:
    """Probabilistic Concurrency Testing (Burckhardt et al., ASPLOS 2010).

    Each actor gets a random priority above ``depth``; ``depth - 1`` change
    points are drawn uniformly in ``[1, k]`` steps. The highest-priority enabled
    actor runs; at the i-th change point the running actor's priority drops to
    ``i``. A bug of depth ``d`` is found with probability at least
    ``1 / (n * k**(d-1))`` per run (``n`` actors, ``k`` steps).
    """

    wants_options = True

    def __init__(self, seed: int, depth: int, k: int) -> None:
        self._rng = random.Random(seed)
        self._depth = max(1, depth)
        self._k = max(1, k)
        self._prio: dict[str, float] = {}
        self._changes = sorted(self._rng.randint(1, self._k) for _ in range(self._depth - 1))
        self._step = 0
        self.actors_seen = 0

    def _priority(self, actor: str) -> float:
        p = self._prio.get(actor)
        if p is None:
            p = self._depth + 1 + self._rng.random() * 1_000_000
            self._prio[actor] = p
            self.actors_seen += 1
        return p

    def choose(self, n: int, options: Sequence[Option] | None, label: str) -> int:
        if options is None:
            return self._rng.randrange(n)
        self._step += 1
        best = max(range(n), key=lambda i: self._priority(options[i].actor))
        for j, cp in enumerate(self._changes):
            if cp == self._step:
                self._prio[options[best].actor] = float(j + 1)
                best = max(range(n), key=lambda i: self._priority(options[i].actor))
        return best
