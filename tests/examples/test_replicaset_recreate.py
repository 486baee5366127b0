"""kubernetes/kubernetes#69376 (fix PR #82572): the example of the modelling guide, buggy and fixed.

The default strategy finds the buggy variant with a modest budget; the same search (same seed,
same budget) finds nothing in the fixed one. Without faults the minimal counterexample is the
issue's own flow (the DELETE and the re-create coalesce in the work queue while the controller's
Pod informer lags); with faults the search also finds a watch drop whose relist turns the delete
and the re-create into one update, the second half of the fix.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import harness as h
from examples import replicaset_recreate
from examples.replicaset_recreate import scenario

BUDGET = 300
LIVENESS = "the re-created ReplicaSet default/web has its 2 pods within 60 s"


def _in_order(labels: list[str], events: tuple[str, ...]) -> bool:
    i = 0
    for label in labels:
        if i < len(events) and events[i] in label:
            i += 1
    return i == len(events)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_strategy_finds_the_buggy_variant(seed: int) -> None:
    result = h.explore(scenario, budget=BUDGET, seed=seed, fixed=False)
    cx = result.counterexample
    assert result.verdict == "found" and cx is not None
    assert cx.violation.name == LIVENESS
    assert "has 0 of 2 pods; the controller still expects (add, del) = (2, 0)" in cx.violation.message
    assert cx.deviations == 2 and cx.proved_minimal is True
    assert cx.replay().violation is not None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_same_search_finds_nothing_in_the_fixed_variant(seed: int) -> None:
    result = h.explore(scenario, budget=BUDGET, seed=seed, fixed=True)
    assert result.verdict == "none-found", result.outcome


def test_canonical_order_is_clean_in_both_variants() -> None:
    """Nothing places the bug's timing: at nominal times the controller keeps up."""
    for fixed in (False, True):
        assert h.explore(scenario, strategy="canonical", fixed=fixed).verdict != "found"


def test_without_faults_the_minimum_is_the_issues_coalesced_queue() -> None:
    result = h.explore(scenario, budget=BUDGET, seed=0, faults="none", fixed=False)
    cx = result.counterexample
    assert cx is not None and cx.deviations == 2
    labels = [r.label for r in cx.trace]
    assert _in_order(labels, (
        "response create Pod default/web-1",
        "user/informer/Pod deliver ADDED default/web-2",   # the user sees both pods ...
        "delete ReplicaSet default/web",
        "informer/ReplicaSet deliver DELETED default/web",
        "create ReplicaSet default/web",
        "informer/ReplicaSet deliver ADDED default/web",   # ... both events before the worker's next get
        "replicaset-controller get",
        "informer/Pod deliver ADDED default/web-1",        # the controller sees the old pods last
    ))
    assert not any(label.startswith("create Pod default/web-3") for label in labels)


@pytest.mark.race(scenario, fixed=True)
def test_fixed_variant_through_the_race_fixture(race: Any) -> None:
    race.explore(budget=BUDGET)


def test_buggy_variant_through_the_race_fixture(race: Any) -> None:
    result = race.explore(scenario, expect="violation", budget=BUDGET, fixed=False)
    assert result.counterexample is not None and result.counterexample.deviations == 2


def test_the_model_is_at_most_150_lines_of_public_api() -> None:
    path = Path(replicaset_recreate.__file__)
    source = path.read_text()
    tree = ast.parse(source)
    doc = tree.body[0]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    assert len(source.splitlines()) - (doc.end_lineno or 0) <= 150
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module in ("__future__", "harness", "harness.kube"), node.module
            assert all(not alias.name.startswith("_") for alias in node.names)
        elif isinstance(node, ast.Import):
            assert all(alias.name == "harness" for alias in node.names)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            raise AssertionError(f"line {node.lineno}: {node.attr} is not public API")
