"""Sieve's three patterns as small models (examples/sieve_*.py and examples/rabbitmq_time_travel.py).

Each buggy variant is found by the default search as one plan entry of the pattern's own kind (a crash
between two writes; a watch drop before a DELETED), and the same search, and a proof to two entries, find
nothing in the fixed variant. The stale-state pattern is tests/examples/test_rabbitmq_time_travel.py.
"""

from __future__ import annotations

import pytest

import harness as h
from harness.explore import resolve_scenario
from harness.sim import Fault

CASES = [
    ("examples/sieve_intermediate_state.py:scenario", "operator crashes before response create Job"),
    ("examples/sieve_unobserved_state.py:scenario", "watch drops before DELETED team-a/web-1"),
]


@pytest.mark.parametrize(("target", "entry"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sieve_pattern_is_found_as_one_entry_of_its_kind(target: str, entry: str, seed: int) -> None:
    r = h.explore(resolve_scenario(target), seed=seed)
    cx = r.counterexample
    assert r.found and cx is not None and cx.plan is not None and cx.proved_minimal is True, r.outcome
    [only] = cx.plan
    assert isinstance(only, Fault) and entry in only.describe(), only.describe()


@pytest.mark.parametrize(("target", "entry"), CASES)
def test_sieve_pattern_fix_is_clean(target: str, entry: str) -> None:
    scenario = resolve_scenario(target)
    assert h.explore(scenario, seed=0, faults="all", fixed=True).verdict == "none-found"
    assert h.explore(scenario, strategy="exhaustive:2", fixed=True).verdict == "proved-clean"
