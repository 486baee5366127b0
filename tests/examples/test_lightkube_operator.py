"""examples/lightkube_operator.py: a lightkube operator run unmodified through api.transport(), buggy and fixed."""

from __future__ import annotations

import harness as h
from examples.lightkube_operator import scenario

INVARIANT = "an App's credentials are never replaced while it lives"


def test_lightkube_example_found_and_fixed_clean() -> None:
    found = h.explore(scenario, seed=0, budget=100, fixed=False)
    cx = found.counterexample
    assert found.verdict == "found" and cx is not None
    assert cx.violation.name == INVARIANT and cx.deviations == 1 and cx.proved_minimal is True
    labels = [r.label for r in cx.trace]
    # the stale Secret cache: the DELETED event of the old Secret is held, the new App's Secret deleted by name
    assert "app-operator/watch/Secret deliver DELETED default/db-credentials" in str(cx.plan)
    assert labels.count("delete Secret default/db-credentials") == 3
    assert cx.replay().trace.digest() == cx.digest()
    # the same search (every fault kind) finds nothing in the fixed operator
    clean = h.explore(scenario, seed=0, budget=60, faults="all", fixed=True)
    assert clean.verdict == "none-found", clean.outcome
