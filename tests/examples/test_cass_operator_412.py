"""cass-operator#412 modelled from the docs (examples/cass_operator_412.py): a restart plus a stale LIST deletes
the re-created datacenter's PVCs. Both sides: the buggy variant is found by the default search as two faults and
proved minimal at one plan for every seed; the fixed variant (PVCs listed by the datacenter's UID, a UID
precondition on the delete) is clean under the same search and with every fault kind.
"""

from __future__ import annotations

from stale_support import assert_fixed_clean, assert_two_faults_one_minimum

from harness.explore import resolve_scenario

scenario = resolve_scenario("examples/cass_operator_412.py:scenario")


def test_cass_412_is_found_by_default_as_two_faults_one_minimum() -> None:
    cx = assert_two_faults_one_minimum(scenario, stale="lagging watch cache")
    assert cx.violation.name == "a live datacenter's PVC is never deleted"


def test_fixed_cass_412_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert_fixed_clean(scenario)
