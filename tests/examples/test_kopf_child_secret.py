"""examples/kopf_child_secret.py: a kopf operator run unmodified in process (issue 48), buggy and fixed."""

from __future__ import annotations

import harness as h
from examples.kopf_child_secret import scenario

ORACLE = "a ConfigMap's Secret exists while it does"


def test_kopf_example_found_and_fixed_clean() -> None:
    found = h.explore(scenario, seed=0, budget=300, fixed=False)
    cx = found.counterexample
    assert found.verdict == "found" and cx is not None, found.outcome
    assert cx.violation.name == ORACLE and cx.proved_minimal is True
    labels = [(r.actor, r.label) for r in cx.trace]
    # the new parent's handler finds the old child (409), then the old parent's cleanup deletes it by name
    creates = [i for i, (a, lbl) in enumerate(labels) if lbl == "create Secret default/a-child"]
    deletes = [i for i, (a, lbl) in enumerate(labels) if lbl == "delete Secret default/a-child"]
    assert len(creates) == 2 and len(deletes) == 1 and creates[1] < deletes[0]
    assert cx.replay().trace.digest() == cx.digest()
    # the same search (every fault kind) finds nothing in the fixed operator
    clean = h.explore(scenario, seed=0, budget=40, faults="all", fixed=True)
    assert clean.verdict == "none-found", clean.outcome
