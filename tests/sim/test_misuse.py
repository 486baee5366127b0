"""Issue 47 item 4 (in part): a misuse of the harness is a model error at the model's line, never a finding, and
an exception group is opened to the exception that ended it."""

from __future__ import annotations

import asyncio

import trio

import harness as h
from harness.explore._runner import model_error_of
from harness.sim import ReplayChooser, run_once


def _run(scenario: object) -> h.sim.RunOutcome:  # type: ignore[name-defined]
    return run_once(scenario, ReplayChooser([]))  # type: ignore[arg-type]


async def _asyncio_sleep(world: h.World) -> None:
    async def operator() -> None:
        await world.step("start")
        await asyncio.sleep(1)  # the line the error names

    world.spawn("operator", operator)


async def _child_raises(world: h.World) -> None:
    async def child() -> None:
        raise KeyError("missing")

    async def operator() -> None:
        await world.step("start")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(child)
            nursery.start_soon(trio.sleep_forever)

    world.spawn("operator", operator)


def test_asyncio_in_a_trio_actor_is_a_model_error_at_its_line() -> None:
    out = _run(_asyncio_sleep)
    assert out.violation is not None and out.violation.kind == "misuse"
    said = model_error_of(out.violation)
    assert said is not None and said.startswith("operator used asyncio at test_misuse.py:")
    assert "(await asyncio.sleep(1)" in said and "(asyncio.sleep)" in said and "anyio.sleep" in said


def test_an_exception_group_is_opened_to_the_exception_that_ended_it() -> None:
    out = _run(_child_raises)
    assert out.violation is not None and out.violation.kind == "actor-raised"
    assert out.violation.name == "KeyError in operator", out.violation
    assert "raised KeyError: 'missing'" in out.violation.message and "ExceptionGroup" not in out.violation.message
    assert model_error_of(out.violation) is None  # a controller's panic stays a finding
