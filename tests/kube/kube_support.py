"""Helpers shared by the kube tests: run a scenario, find failing seeds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from harness.sim import Limits, RandomChooser, ReplayChooser, RunOutcome, run_once

Scenario = Callable[..., Awaitable[object]]
LIMITS = Limits(max_steps=50_000, max_time=100_000.0)


def run(scenario: Scenario, *, seed: int | None = None, choices: list[int] | None = None, **params: Any) -> RunOutcome:
    """One run: canonical (all choices 0) unless a seed or a choice list is given."""
    chooser = RandomChooser(seed) if seed is not None else ReplayChooser(choices or [])
    return run_once(scenario, chooser, params=params, limits=LIMITS)


def clean(out: RunOutcome) -> RunOutcome:
    """Assert the run had no violation; show the trace tail when it had one."""
    if out.violation is not None:
        tail = "\n".join(r.describe() for r in list(out.trace)[-25:])
        raise AssertionError(f"{out.violation.describe()}\n{tail}")
    return out


def failing_seeds(scenario: Scenario, seeds: int, *, stop_at_first: bool = True, **params: Any) -> list[int]:
    """Seeds in ``range(seeds)`` whose random run violates an oracle."""
    found = []
    for seed in range(seeds):
        if run(scenario, seed=seed, **params).violation is not None:
            found.append(seed)
            if stop_at_first:
                break
    return found


class FaultChooser:
    """Canonical schedule; fires every fault point whose label (as "fault: <label>") starts with a prefix.

    ``once=True`` fires each prefix only at the first point it matches (an
    informer has a watch-end point per event: the first is the one meant).
    ``points`` lists every fault point passed, fired or not.
    """

    def __init__(self, *prefixes: str, once: bool = True) -> None:
        self.prefixes = prefixes
        self.once = once
        self.taken: list[str] = []
        self.points: list[str] = []
        self._fired: set[str] = set()

    def schedule(self, options: object, now: float, can_wait: bool) -> int:
        return 0

    def choose(self, n: int, point: object) -> int:
        return 0

    def fault(self, point: Any) -> bool:
        label = f"fault: {point.label}"
        self.points.append(label)
        for prefix in self.prefixes:
            if label.startswith(prefix) and not (self.once and prefix in self._fired):
                self._fired.add(prefix)
                self.taken.append(label)
                return True
        return False


def run_with(scenario: Scenario, chooser: object, **params: Any) -> RunOutcome:
    return run_once(scenario, chooser, params=params, limits=LIMITS)  # type: ignore[arg-type]
