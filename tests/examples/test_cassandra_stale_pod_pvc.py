"""instaclustr/cassandra-operator#407 modelled from the docs (examples/cassandra_stale_pod_pvc.py): after a restart,
a stale Pod LIST shows the old ``ca-1`` terminating and the operator deletes the PVC the re-created ``ca-1`` uses.
Both sides: the buggy variant is found by the default search as the issue's two faults (a crash before the scale-up,
the restarted Pod informer's LIST at the old pod's deletion mark) and proved minimal at one plan for every seed; the
fixed variant (PVCs labelled with and listed by their pod's UID) is clean under the same search and every fault kind.
"""

from __future__ import annotations

from stale_support import assert_fixed_clean, assert_two_faults_one_minimum

from harness.explore import resolve_scenario

scenario = resolve_scenario("examples/cassandra_stale_pod_pvc.py:scenario")


def test_cassandra_407_is_found_by_default_as_two_faults_one_minimum() -> None:
    cx = assert_two_faults_one_minimum(scenario, stale="MODIFIED default/ca-1 (deleting)")
    assert "while pod default/ca-1" in cx.violation.message and "live and not terminating" in cx.violation.message


def test_fixed_cassandra_407_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert_fixed_clean(scenario)
