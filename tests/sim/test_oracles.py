"""Oracles that explain: ``eventually`` keeps its check's last explanation; invariants see time jumps.

Issue 10 item 4: a model's liveness check ("the re-created ReplicaSet has its pods") says why it
does not hold yet, and the violation must show that, not only the deadline; a time-based invariant
("no expectation older than the timeout + 20 s") must fire at the instant it becomes false even when
nothing runs for minutes, not at the next step.
"""

from __future__ import annotations

from harness.sim import ReplayChooser, World, run_once


def test_eventually_shows_the_last_explanation_its_check_returned() -> None:
    async def scenario(world: World) -> None:
        pods = {"n": 0}

        def enough() -> bool | str:
            return pods["n"] >= 2 or f"{pods['n']} of 2 pods; expectations add=2"

        world.eventually(enough, within=10, name="two pods")
        await world.sleep(1)
        pods["n"] = 1  # progress, then nothing: the deadline passes with the newer explanation
        await world.sleep(30)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None
    assert out.violation.message == (
        "'two pods' did not happen within 10 virtual seconds (expected by t=10, registered at t=0): "
        "1 of 2 pods; expectations add=2"
    )
    assert out.violation.time == 10


def test_eventually_that_returns_only_false_keeps_the_plain_message() -> None:
    async def scenario(world: World) -> None:
        world.eventually(lambda: False, within=5, name="never")
        await world.sleep(10)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None
    assert out.violation.message == "'never' did not happen within 5 virtual seconds (expected by t=5, registered at t=0)"


def test_eventually_explains_when_nothing_else_runs() -> None:
    async def scenario(world: World) -> None:
        world.eventually(lambda: "the cache still shows uid-0001", within=100, name="new uid seen")

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None
    assert out.violation.message.endswith("(expected by t=100, registered at t=0): the cache still shows uid-0001")


def test_time_based_invariant_fires_at_the_instant_it_becomes_false_during_a_jump() -> None:
    async def scenario(world: World) -> None:
        created = {"at": 0.0}
        world.invariant(lambda: world.now - created["at"] <= 320 or "expectation older than 320 s", "fresh expectations")
        await world.sleep(5)
        created["at"] = world.now  # t=5: the expectation is set, then nothing happens for 10 minutes
        await world.sleep(600)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None
    assert out.violation.name == "fresh expectations"
    assert out.violation.message == "expectation older than 320 s"
    assert 325 < out.violation.time < 325 + 1e-5  # not t=605, where the next step is
    assert out.end_time == out.violation.time


def test_invariant_that_holds_through_a_jump_does_not_fire() -> None:
    async def scenario(world: World) -> None:
        world.invariant(lambda: world.now < 1000, "before t=1000")
        await world.sleep(600)

    assert run_once(scenario, ReplayChooser([])).violation is None
