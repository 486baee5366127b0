"""Issue 18: every strategy and seed that finds a race's bug ends at one counterexample, byte for byte.

A few minutes for all races (``-m slow``); the fast tier checks the same property on the
cross-informer toy (tests/explore/test_minimal.py).
"""

from __future__ import annotations

import pytest

import harness
from races import REGISTRY, Race

RACES = list(REGISTRY.values())
STRATEGIES = ("portfolio", "random", "pct", "hypothesis")


@pytest.mark.slow
@pytest.mark.parametrize("spec", RACES, ids=[r.name for r in RACES])
def test_same_minimum_for_every_strategy_and_seed(spec: Race) -> None:
    seen: dict[str, dict[str, list[str]]] = {}
    for strategy in STRATEGIES:
        for seed in range(3):
            result = harness.explore(
                spec.scenario, strategy=strategy, budget=spec.budget, seed=seed, fixed=False,
                faults=spec.faults, **spec.params,
            )
            cx = result.counterexample
            assert cx is not None and cx.proved_minimal is True, (strategy, seed, result.outcome)
            seen.setdefault(cx.violation.name, {}).setdefault(cx.digest(), []).append(f"{strategy}:{seed}")
    # one digest per failure (a search may meet another oracle of the model first: then it is another bug)
    assert all(len(digests) == 1 for digests in seen.values()), seen
