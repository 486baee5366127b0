"""Issue 18: every strategy and seed that finds a race's bug ends at one counterexample, byte for byte.

A few minutes for all races (``-m slow``); the fast tier checks the same property on the
cross-informer toy (tests/explore/test_minimal.py).
"""

from __future__ import annotations

import pytest

import harness
from races import REGISTRY, Race

STRATEGIES = ("portfolio", "random", "pct", "hypothesis")
#: a race's budget is sized for its default strategy (kueue's residual: 300 random runs); PCT needs up to 399 there
MIN_BUDGET = 1000
#: races whose minimality proof does not fit its budget: strict, so a proof that starts to fit fails here
NOT_PROVED = {
    "volcano_deleted_jobs_3375_residual": "the proof of its 3-entry minimum needs level 2 complete: 87,134 runs "
    "(measured; no 2-entry plan fails; 17,410 of them repeat another plan's run, 4,690 are inert, and a reduction "
    "that also swapped actions across time jumps would still leave 50,845), beyond the proof's 15,000: found, not "
    "proved minimal",
}
RACES = [pytest.param(r, id=r.name, marks=pytest.mark.xfail(strict=True, reason=NOT_PROVED[r.name]))
         if r.name in NOT_PROVED else pytest.param(r, id=r.name) for r in REGISTRY.values()]


@pytest.mark.slow
@pytest.mark.parametrize("spec", RACES)
def test_same_minimum_for_every_strategy_and_seed(spec: Race) -> None:
    seen: dict[str, dict[str, list[str]]] = {}
    for strategy in STRATEGIES:
        for seed in range(3):
            result = harness.explore(
                spec.scenario, strategy=strategy, budget=max(spec.budget, MIN_BUDGET), seed=seed, fixed=False,
                faults=spec.faults, **spec.params,
            )
            cx = result.counterexample
            assert cx is not None and cx.proved_minimal is True, (strategy, seed, result.outcome)
            seen.setdefault(cx.violation.name, {}).setdefault(cx.digest(), []).append(f"{strategy}:{seed}")
    # one digest per failure (a search may meet another oracle of the model first: then it is another bug)
    assert all(len(digests) == 1 for digests in seen.values()), seen
