"""instaclustr/cassandra-operator#407 modelled from the docs (examples/cassandra_stale_pod_pvc.py): after a restart,
a stale Pod LIST shows the old ``ca-1`` terminating and the operator deletes the PVC the re-created ``ca-1`` uses.
Both sides: the buggy variant is found by the default search as the issue's two faults (a crash before the scale-up,
the restarted Pod informer's LIST at the old pod's deletion mark) and proved minimal at one plan for every seed; the
fixed variant (PVCs labelled with and listed by their pod's UID) is clean under the same search and every fault kind.
"""

from __future__ import annotations

import harness as h
from harness.explore import resolve_scenario
from harness.sim import Fault

scenario = resolve_scenario("examples/cassandra_stale_pod_pvc.py:scenario")


def test_cassandra_407_is_found_by_default_as_two_faults_one_minimum() -> None:
    digests = set()
    for seed in range(2):
        r = h.explore(scenario, seed=seed)
        cx = r.counterexample
        assert r.found and cx is not None and cx.plan is not None, r.outcome
        assert "while pod default/ca-1" in cx.violation.message and "live and not terminating" in cx.violation.message
        assert len(cx.plan) == 2 and all(isinstance(e, Fault) for e in cx.plan), cx.plan
        described = " / ".join(e.describe() for e in cx.plan)
        assert "crashes" in described and "MODIFIED default/ca-1 (deleting)" in described, described
        assert cx.proved_minimal is True, cx.proof
        digests.add(cx.digest())
    assert len(digests) == 1, digests


def test_fixed_cassandra_407_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert h.explore(scenario, seed=0, fixed=True).verdict == "none-found"
    assert h.explore(scenario, seed=1, faults="all", fixed=True).verdict == "none-found"
