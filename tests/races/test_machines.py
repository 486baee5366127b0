"""RaceMachine versions of races 2 and 4: the shrunk program is the upstream report's user sequence."""

from __future__ import annotations

import harness as h
from harness.stateful import format_program
from races.kueue_second_pass import TestSuiteMachine
from races.volcano_deleted_jobs import ScaleChurnMachine


def _rules(cx: h.Counterexample) -> list[str]:
    return [r.label for r in cx.trace if r.actor == "main" and r.label.startswith("rule ")]


def test_kueue_machine_shrinks_to_node_failure_then_next_test_case() -> None:
    # three program choices (length, then each rule) before any interleaving: ~900 runs by default
    result = h.explore(TestSuiteMachine.scenario, budget=1500, seed=0)
    cx = result.counterexample
    assert cx is not None, result.outcome
    assert _rules(cx) == ["rule fail_node(node='x1')", "rule next_test_case()"]
    assert cx.proved_minimal is True
    assert "outlives its delete in the second-pass queue" in cx.violation.message
    program = format_program(cx, TestSuiteMachine)
    assert "await state.fail_node(node='x1')\nawait state.next_test_case()" in program


def test_kueue_machine_fixed_is_clean() -> None:
    for strategy in ("hypothesis", "random"):
        result = h.explore(TestSuiteMachine.scenario, strategy=strategy, budget=300, seed=1, fixed=True)
        assert result.verdict == "none-found", result.outcome


def test_volcano_machine_shrinks_to_scale_down_then_prompt_scale_up() -> None:
    result = h.explore(ScaleChurnMachine.scenario, strategy="random", budget=400, seed=0)
    cx = result.counterexample
    assert cx is not None, result.outcome
    assert _rules(cx) == ["rule scale_to(replicas=0)", "rule scale_to(replicas=1)"]
    assert cx.proved_minimal is True
    assert "processCleanupJob dequeued JobInfo" in cx.violation.message


def test_volcano_machine_fixed_is_clean() -> None:
    result = h.explore(ScaleChurnMachine.scenario, strategy="hypothesis", budget=150, seed=1, fixed=True)
    assert result.verdict == "none-found", result.outcome
