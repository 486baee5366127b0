"""Orange-OpenSource/casskop#316 modelled from the docs alone (examples/casskop_stale_deletion.py), a race the
stale-state member had never been shown: the restarted operator's CassandraCluster view is the *old* cluster being
deleted, and its cleanup deletes the re-created cluster's PVCs (listed by names). Both sides: found by the default
search as two faults, proved minimal at one plan for every seed; the issue's fix (PVCs listed by the cluster's UID)
is clean under the same search and every fault kind, and the three-fault residual the trial wrote by hand (the PVC
cache lags too: the old PVC's name now belongs to the new one) is closed by a UID precondition on the delete.
"""

from __future__ import annotations

from stale_support import assert_fixed_clean, assert_two_faults_one_minimum

import harness as h
from harness.explore import resolve_scenario

scenario = resolve_scenario("examples/casskop_stale_deletion.py:scenario")

RESIDUAL = [
    {"fault": ["casskop/informer/CassandraCluster", "casskop/informer/CassandraCluster lists from a lagging watch "
               "cache at the revision of ADDED default/cc", "CassandraCluster", 1]},
    {"fault": ["casskop/informer/PersistentVolumeClaim", "casskop/informer/PersistentVolumeClaim lists from a lagging "
               "watch cache at the revision of ADDED default/data-cc-dc2-rack1-0", "PersistentVolumeClaim", 1]},
    {"fault": ["casskop/reconcile/worker-1", "casskop crashes before response create PersistentVolumeClaim "
               "default/data-cc-dc2-rack1-0", None, 2]},
]


def test_casskop_316_is_found_by_default_as_two_faults_one_minimum() -> None:
    assert_two_faults_one_minimum(scenario, stale="CassandraCluster lists from a lagging watch cache")


def test_fixed_casskop_316_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert_fixed_clean(scenario)


def test_the_issue_fix_leaves_a_three_fault_residual_that_a_uid_precondition_closes() -> None:
    assert h.run_plan(scenario, RESIDUAL, fixed=True).found
    assert not h.run_plan(scenario, RESIDUAL, fixed=True, precondition=True).found
