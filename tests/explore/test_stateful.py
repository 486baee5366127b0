"""RaceMachine: async rules inside the simulation, shrunk together with the interleavings."""

from __future__ import annotations

import pytest

import harness as h
from harness.explore import Counterexample
from harness.stateful import RaceMachine, format_program, integers, rule
from tests.toys import DepositMachine


def test_machine_finds_the_short_user_program() -> None:
    result = h.explore(DepositMachine.scenario, strategy="hypothesis", budget=500, seed=0)
    cx = result.counterexample
    assert cx is not None
    rules = [r.label for r in cx.trace if r.actor == "main" and r.label.startswith("rule ")]
    assert rules == ["rule deposit(amount=1)", "rule deposit(amount=1)"]
    program = format_program(cx, DepositMachine)
    assert "await state.deposit(amount=1)" in program
    assert program.count("await state.deposit") == 2 and "audit" not in program
    assert "# => oracle violated" in program


def test_machine_minimum_is_proved() -> None:
    found = h.explore(DepositMachine.scenario, strategy="random", budget=2000, seed=0)
    referee = h.explore(DepositMachine.scenario, strategy="exhaustive:4", budget=50_000)
    assert found.counterexample is not None and referee.counterexample is not None
    assert found.counterexample.deviations == referee.counterexample.deviations
    assert found.counterexample.proved_minimal is True


def test_fixed_machine_is_clean() -> None:
    assert h.explore(DepositMachine.scenario, strategy="hypothesis", budget=300, fixed=True).verdict == "none-found"


def test_machine_counterexample_replays_from_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cx = h.explore(DepositMachine.scenario, strategy="random", budget=2000).counterexample
    assert cx is not None
    assert cx.scenario == "tests.toys:DepositMachine.scenario"
    path = cx.save(tmp_path / "m.json")
    again = Counterexample.load(path).replay()
    assert again.trace.digest() == cx.digest()


def test_testcase_fails_with_the_program_and_passes_when_fixed() -> None:
    case = DepositMachine.TestCase()
    with pytest.raises(AssertionError) as info:
        case.runTest()
    assert "await state.deposit(amount=1)" in str(info.value)
    assert "replay" in str(info.value)

    class FixedDeposits(DepositMachine):
        fixed = True

    FixedDeposits.TestCase().runTest()


def test_rules_must_be_async() -> None:
    with pytest.raises(TypeError, match="must be 'async def'"):

        class Bad(RaceMachine):
            @rule(n=integers(0, 1))
            def sync_rule(self, n: int) -> None:  # type: ignore[misc]
                pass
