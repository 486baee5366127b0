"""rabbitmq/cluster-operator#653 modelled from the docs (examples/rabbitmq_stale_resize.py): after a restart, a stale
RabbitmqCluster (10Gi, before the user's resize to 15Gi) makes the operator delete the StatefulSet again and ask
the PVC to shrink. The stale view differs from the present in its spec alone (same UID, no deletion mark): the
stale-state member's spec tiers aim at it. Both sides: found by the default search as the issue's two faults and
proved minimal at one plan for every seed; the issue's fix (resize only to grow) is clean under the same search and
every fault kind. With the operator reading StatefulSets from its cache (upstream's read path), the search finds a
sibling path that the issue's fix leaves open: the StatefulSet cache frozen before the re-created StatefulSet.
"""

from __future__ import annotations

from stale_support import assert_fixed_clean, assert_two_faults_one_minimum

import harness as h
from harness.explore import resolve_scenario

scenario = resolve_scenario("examples/rabbitmq_stale_resize.py:scenario")


def test_rabbitmq_653_is_found_by_default_as_two_faults_one_minimum() -> None:
    cx = assert_two_faults_one_minimum(scenario, stale="RabbitmqCluster lists from a lagging watch cache")
    assert "no larger volume was asked for" in cx.violation.message or "shrink" in cx.violation.message


def test_fixed_rabbitmq_653_is_clean_under_the_default_search_and_every_fault_kind() -> None:
    assert_fixed_clean(scenario)


def test_the_issue_fix_leaves_a_sibling_path_through_a_stale_statefulset_cache() -> None:
    r = h.explore(scenario, seed=0, fixed=True, stale_sts=True)
    cx = r.counterexample
    assert r.found and cx is not None and cx.plan is not None, r.outcome
    described = " / ".join(e.describe() for e in cx.plan)
    assert "StatefulSet lists from a lagging watch cache" in described, described
