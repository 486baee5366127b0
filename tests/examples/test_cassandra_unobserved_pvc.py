"""cassandra-operator#398 modelled from the docs (examples/cassandra_unobserved_pvc.py): a pod never seen terminating.

The default search finds the leaked PVC in a few runs; what it needs is one entry, not two: the operator's pod
watch dropped before ca-1's deletion mark (the unobserved-state member's aim), or that event late (the proved
canonical minimum). The fixed variant (PR #399's pod finalizer) is clean under the same search, survives the same
drop, and is proved clean up to one deviation.
"""

from __future__ import annotations

from typing import Any

import pytest

import harness as h
from harness.explore import resolve_scenario
from harness.explore._patterns import Aim, View, pattern_choosers
from harness.explore._runner import Budget, _failed, _Runner
from harness.sim import Fault, Hold, PlanChooser, RunOutcome

TARGET = "examples/cassandra_unobserved_pvc.py:scenario"
scenario = resolve_scenario(TARGET)
INFORMER = "cassandra-operator/informer/Pod"
LEAK = "PVC data-ca-1 leaked: its pod ca-1 is gone"


def _member(**params: Any) -> tuple[list[tuple[PlanChooser, RunOutcome]], View]:
    """Every plan the unobserved-state member draws (until its candidates are spent), with its run."""
    runner = _Runner(scenario, params, h.Limits(), Budget(runs=None), None)
    aim = Aim()
    drawn = [(chooser, runner.run(chooser)) for chooser in pattern_choosers("unobserved state", aim, 0)]
    assert aim.view is not None
    return drawn, aim.view


def _mark_occurrence(view: View) -> int:
    """Which MODIFIED of Pod default/ca-1 is its deletion mark (the finalizer's update comes first when fixed)."""
    modified = [w for w in view.writes if w.ref == "Pod default/ca-1" and w.event == "MODIFIED"]
    return next(i for i, w in enumerate(modified, 1) if w.deleting)


def test_default_search_finds_the_leak_as_one_entry_at_the_deletion_mark() -> None:
    found = h.explore(scenario, seed=0, prove_minimal=False)
    cx = found.counterexample
    assert found.found and cx is not None and cx.plan is not None, found.outcome
    assert cx.violation.name == "no PVC outlives its pod" and LEAK in cx.violation.message
    assert found.first_found_run is not None and found.first_found_run <= 1000
    # the search's own find at seed 0: the operator's pod watch drops just before ca-1's deletion mark
    [drop] = cx.plan
    assert isinstance(drop, Fault) and drop.at.actor == INFORMER, drop.describe()
    assert "watch drops before MODIFIED default/ca-1" in drop.at.label and drop.at.n == 1, drop.describe()

    proved = h.explore(scenario, seed=0)
    cx = proved.counterexample
    assert cx is not None and cx.plan is not None and cx.proved_minimal is True, proved.outcome
    # the canonical minimum: the same event, delivered as late as its window allows instead of dropped
    [late] = cx.plan
    assert isinstance(late, Hold) and late.what.actor == INFORMER, late.describe()
    assert "deliver MODIFIED default/ca-1" in late.what.label, late.describe()


def test_fixed_variant_is_clean_under_the_same_search() -> None:
    assert h.explore(scenario, seed=0, fixed=True).verdict == "none-found"  # the same default budget, 1,000 runs
    proof = h.explore(scenario, strategy="exhaustive:1", fixed=True)
    assert proof.verdict == "proved-clean", proof.outcome  # the bug is one entry: so is the bound that matters


def test_unobserved_state_member_aims_at_the_deletion_mark() -> None:
    drawn, view = _member()
    _analysis, *plans = drawn
    assert _mark_occurrence(view) == 1
    # its first plan: the drop before ca-1's deletion mark (a mark then the delete ranks with a create then the delete)
    first, out = plans[0]
    [drop] = first.plan
    assert isinstance(drop, Fault) and drop.at.actor == INFORMER
    assert "watch drops before MODIFIED default/ca-1" in drop.at.label and drop.at.n == 1, drop.describe()
    assert _failed(out) and out.violation is not None and LEAK in out.violation.message
    mark = next(w for w in view.writes if w.ref == "Pod default/ca-1" and w.deleting)
    gone = next(w for w in view.writes if w.ref == "Pod default/ca-1" and w.event == "DELETED")
    assert mark.pos < gone.pos
    # the relist held as long as its window allows fails too: the gap need not cover the delete, only the reconciles
    wide = [(c, o) for c, o in plans if len(c.plan) == 2 and c.plan[0] == drop]
    assert wide and all(_failed(o) for _c, o in wide), [c.plan for c, _ in wide]
    assert any(isinstance(e, Hold) and e.what.label == f"{INFORMER} list" for e in wide[0][0].plan)


def test_fixed_variant_survives_the_member_drop_at_its_own_deletion_mark() -> None:
    drawn, view = _member(fixed=True)
    _analysis, *plans = drawn
    n = _mark_occurrence(view)
    assert n == 2  # PR #399's finalizer is the pod's first update
    at_mark = [(c, o) for c, o in plans
               if isinstance(c.plan[0], Fault) and "before MODIFIED default/ca-1" in c.plan[0].at.label
               and c.plan[0].at.n == n]
    assert at_mark, [c.plan for c, _ in plans]
    for chooser, out in at_mark:
        assert not _failed(out), (chooser.plan, out.violation)
    assert not any(_failed(o) for _c, o in plans)


@pytest.mark.parametrize("fixed", [False, True])
def test_the_drop_by_hand(fixed: bool) -> None:
    """The one-entry plan of the docstring, written as a user writes it (guide, section 9)."""
    _drawn, view = _member(fixed=fixed)
    n = _mark_occurrence(view)
    label = f"{INFORMER} watch drops before MODIFIED default/ca-1 is sent; relists after backoff"
    r = h.run_plan(scenario, [{"fault": [INFORMER, label, "Pod default/ca-1", n]}], fixed=fixed)
    assert not any("never applied" in note for note in r.notes), r.notes
    if fixed:
        assert r.verdict == "none-found", r.outcome
    else:
        assert r.counterexample is not None and LEAK in r.counterexample.violation.message, r.outcome


@pytest.mark.slow
def test_fixed_variant_is_clean_with_every_fault_kind() -> None:
    assert h.explore(scenario, seed=0, faults="all", fixed=True).verdict == "none-found"
