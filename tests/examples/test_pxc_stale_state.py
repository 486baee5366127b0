"""K8SPXC-716 modelled from the docs (examples/pxc_stale_state.py): a restart plus a stale LIST deletes live PVCs.

The default search finds it as two faults (the crash and the stale view) through the stale-state member, which
aims at the cluster the user re-created under its name; the fixed variant (the PVC's cluster UID checked, a UID
precondition) is clean with every fault kind.
"""

from __future__ import annotations

import harness as h
from harness.explore import resolve_scenario
from harness.sim import Fault

scenario = resolve_scenario("examples/pxc_stale_state.py:scenario")


def test_pxc_time_travel_is_found_by_default_as_two_faults() -> None:
    for seed in range(3):
        r = h.explore(scenario, seed=seed, prove_minimal=False)
        cx = r.counterexample
        assert r.found and cx is not None and cx.plan is not None, r.outcome
        assert cx.violation.name == "a live cluster's PVC is never deleted"
        assert len(cx.plan) == 2 and all(isinstance(e, Fault) for e in cx.plan), cx.plan
        described = " / ".join(e.describe() for e in cx.plan)
        assert "crashes" in described and "lagging watch cache" in described, described
        assert r.first_found_run is not None and r.first_found_run <= 1000


def test_fixed_pxc_is_clean_with_every_fault_kind() -> None:
    assert h.explore(scenario, seed=0, faults="all", fixed=True).verdict == "none-found"
