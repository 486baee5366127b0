"""What every stale-state example's test asserts, said once: the default search finds the bug as the issue's two
faults (a crash and a stale LIST), proved minimal at one plan for every seed; the fixed variant is clean under the
same search and with every fault kind."""

from __future__ import annotations

from typing import Any

import harness as h
from harness.sim import Fault


def assert_two_faults_one_minimum(scenario: Any, *, stale: str, seeds: int = 2, **params: Any) -> h.Counterexample:
    """``stale``: what the plan's stale LIST must say ("CassandraCluster lists from a lagging watch cache")."""
    digests = set()
    cx = None
    for seed in range(seeds):
        r = h.explore(scenario, seed=seed, **params)
        cx = r.counterexample
        assert r.found and cx is not None and cx.plan is not None, r.outcome
        assert len(cx.plan) == 2 and all(isinstance(e, Fault) for e in cx.plan), cx.plan
        described = " / ".join(e.describe() for e in cx.plan)
        assert "crashes" in described and stale in described, described
        assert cx.proved_minimal is True, cx.proof
        digests.add(cx.digest())
    assert len(digests) == 1, digests
    assert cx is not None
    return cx


def assert_fixed_clean(scenario: Any, **params: Any) -> None:
    assert h.explore(scenario, seed=0, fixed=True, **params).verdict == "none-found"
    assert h.explore(scenario, seed=1, faults="all", fixed=True, **params).verdict == "none-found"
