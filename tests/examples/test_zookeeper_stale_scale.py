"""pravega/zookeeper-operator#314 modelled from the docs (examples/zookeeper_stale_scale.py): a restarted operator's
stale ZookeeperCluster (an older replica count) deletes the PVC of a live member and scales the StatefulSet down.
Both sides: found by the default search as two faults and proved minimal at one plan for every seed; the fix
(upstream's ``owner-rv`` staleness check, applied before the PVC cleanup too) is clean under the same search and
every fault kind; upstream's fix as merged (the check before the StatefulSet update only) leaves the PVC path open.
"""

from __future__ import annotations

from stale_support import assert_fixed_clean, assert_two_faults_one_minimum

import harness as h
from harness.explore import resolve_scenario

scenario = resolve_scenario("examples/zookeeper_stale_scale.py:scenario")


def test_zookeeper_314_is_found_by_default_as_two_faults_one_minimum() -> None:
    assert_two_faults_one_minimum(scenario, stale="ZookeeperCluster lists from a lagging watch cache")


def test_fixed_zookeeper_314_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert_fixed_clean(scenario)


def test_upstreams_fix_as_merged_leaves_the_pvc_path_open() -> None:
    r = h.explore(scenario, seed=0, fixed=True, guard_pvcs=False, shrink_found=False, prove_minimal=False)
    assert r.found and r.counterexample is not None, r.outcome
    assert "PVC default/data-zk-1" in r.counterexample.violation.message, r.counterexample.violation
