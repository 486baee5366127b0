"""pravega/zookeeper-operator#312, written from the docs alone after the stale-state tiers (held out from them):
a restarted operator's ZookeeperCluster informer lists from a lagging watch cache, meets the old cluster's
deletionTimestamp, and ``cleanUpAllPVCs`` (PVCs by the ``app`` label alone) deletes the re-created cluster's PVC.
Both sides: found by the default search as two faults and proved minimal at one plan for every seed; the fix
(PR #313: the claims carry the cluster's UID and the list selects on it) is clean under the same search and every
fault kind.
"""

from __future__ import annotations

from stale_support import assert_fixed_clean, assert_two_faults_one_minimum

from harness.explore import resolve_scenario

scenario = resolve_scenario("examples/zookeeper_stale_deletion.py:scenario")


def test_zookeeper_312_is_found_by_default_as_two_faults_one_minimum() -> None:
    cx = assert_two_faults_one_minimum(scenario, stale="ZookeeperCluster lists from a lagging watch cache")
    assert "PVC default/data-zk-0 of the live ZookeeperCluster" in cx.violation.message, cx.violation


def test_fixed_zookeeper_312_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert_fixed_clean(scenario)
