"""cass-operator#412 modelled from the docs (examples/cass_operator_412.py): a restart plus a stale LIST deletes
the re-created datacenter's PVCs. Both sides: the buggy variant is found by the default search as two faults and
proved minimal at one plan for every seed; the fixed variant (PVCs listed by the datacenter's UID, a UID
precondition on the delete) is clean under the same search and with every fault kind.
"""

from __future__ import annotations

import harness as h
from harness.explore import resolve_scenario
from harness.sim import Fault

scenario = resolve_scenario("examples/cass_operator_412.py:scenario")


def test_cass_412_is_found_by_default_as_two_faults_one_minimum() -> None:
    digests = set()
    for seed in range(2):
        r = h.explore(scenario, seed=seed)
        cx = r.counterexample
        assert r.found and cx is not None and cx.plan is not None, r.outcome
        assert cx.violation.name == "a live datacenter's PVC is never deleted"
        assert len(cx.plan) == 2 and all(isinstance(e, Fault) for e in cx.plan), cx.plan
        described = " / ".join(e.describe() for e in cx.plan)
        assert "crashes" in described and "lagging watch cache" in described, described
        assert cx.proved_minimal is True, cx.proof
        digests.add(cx.digest())
    assert len(digests) == 1, digests


def test_fixed_cass_412_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert h.explore(scenario, seed=0, fixed=True).verdict == "none-found"
    assert h.explore(scenario, seed=1, faults="all", fixed=True).verdict == "none-found"
