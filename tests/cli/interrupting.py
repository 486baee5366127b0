"""A toy race that sends its own process SIGINT at its Nth execution: Ctrl-C at a chosen instant of a hunt.

The CLI turns the first SIGINT into a stop request, so the signal raised here
behaves exactly like a user's Ctrl-C at that instant, deterministically.
``token`` keeps the execution counts of different tests apart.
"""

from __future__ import annotations

import signal

import harness as h
from tests import toys

_RUNS: dict[str, int] = {}


@h.scenario
async def order_violation(world: h.World, *, fixed: bool = False, interrupt_at: int = 0, token: str = "",
                       sig: str = "SIGINT") -> None:
    n = _RUNS[token] = _RUNS.get(token, 0) + 1
    if n == interrupt_at:
        signal.raise_signal(getattr(signal, sig))
    await toys.order_violation(world, fixed=fixed)


def executions(token: str) -> int:
    return _RUNS.get(token, 0)


@h.scenario
async def two_switches(world: h.World, *, fixed: bool = False, interrupt_at: int = 0, token: str = "",
                       sig: str = "SIGINT") -> None:
    """A bug that needs two data choices at once: its minimum has 2 entries, so its proof covers 0 and 1."""
    n = _RUNS[token] = _RUNS.get(token, 0) + 1
    if n == interrupt_at:
        signal.raise_signal(getattr(signal, sig))
    on = [world.choose("first switch", 2), world.choose("second switch", 2)]

    async def noise(name: str) -> None:
        for i in range(3):
            await world.step(f"{name} {i}")

    world.spawn("a", noise, "a")
    world.spawn("b", noise, "b")
    world.at_end(lambda: fixed or not all(on) or "both switches were on", "at most one switch on")
