"""Models that never end, for the runaway and livelock verdicts (marked, so the CLI can hunt them by file).

* :func:`sub_nanosecond_requeue`: a reconcile that requeues after a duration
  far below a nanosecond (float arithmetic on seconds leaves 1e-15 where Go's
  integer nanoseconds leave 0) until the clock has moved.
* :func:`spinning`: two writers that undo each other at once, in every run:
  the buggy variant's expected violation is never reached, the run livelocks.
* :func:`livelock_in_proof`: the bug is one fault (the worker fails); a
  poller busy-waits for the worker at one instant, so a plan that holds the
  worker back livelocks. The minimality proof meets that plan before the
  failing one (plans with fewer faults first).
"""

from __future__ import annotations

import harness as h
from harness.kube import Controller, Result

#: where the sub-nanosecond requeue starts: 16.0 + 1e-15 == 16.0 in float seconds
START = 16.0


@h.scenario
async def sub_nanosecond_requeue(world: h.World) -> None:
    seen: list[float] = []

    async def reconcile(key: str) -> Result | None:
        seen.append(world.now)
        if world.now == seen[0]:
            return Result(requeue_after=1e-15)  # e.g. 5 - (10.005 - 5.005) in float seconds
        return None

    ctl: Controller[str] = Controller(world, "requeuer", reconcile)
    ctl.start()
    await world.sleep(START)
    ctl.enqueue("k")
    world.at_end(lambda: len(seen) == 2 or f"reconciled {len(seen)} times", "one requeue")


@h.scenario
async def spinning(world: h.World, *, fixed: bool = False) -> None:
    state = {"x": 0}

    async def writer(value: int) -> None:
        while True:
            state["x"] = value
            await world.step(f"set x={value}")

    world.spawn("writer-a", writer, 1, daemon=True)
    world.spawn("writer-b", writer, 2, daemon=True)
    await world.sleep(1.0, "user looks a second later")
    if not fixed:
        world.fail("never reached: the writers loop first")


@h.scenario
async def livelock_in_proof(world: h.World, *, fixed: bool = False) -> None:
    state = {"done": False}

    async def worker() -> None:
        await world.step("work")
        if world.fault("crash", "worker fails before its write", default=True) and not fixed:
            world.fail("the worker failed and nobody noticed")
        state["done"] = True

    async def poller() -> None:
        while not state["done"]:  # busy-waits at one instant: only the worker's write ends it
            await world.step("poll")

    world.spawn("worker", worker)
    world.spawn("poller", poller)
