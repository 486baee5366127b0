"""Runtime throughput (the foundation issue's targets), measured side by side in one run.

- hand-offs/s: 3 actors x N yield points, and the ratio to a hand-driven
  ``async def`` coroutine loop doing the same number of switches;
- whole 3-actor x 10-step executions/s under ``random`` (one trio.run each);
- ``hypothesis`` examples/s on the same toy;
- shrink time and examples of the 2-deviation toy.
"""

from __future__ import annotations

import time
import types
from collections.abc import Generator
from typing import Any

import harness as h
from harness.sim import RandomChooser, World, run_once


@types.coroutine
def _yield() -> Generator[None, None, None]:
    yield


def coroutine_loop(actors: int, steps: int) -> float:
    """The floor: hand-driven coroutines, round-robin, no harness. Returns switches/s."""

    async def actor() -> None:
        for _ in range(steps):
            await _yield()

    coros = [actor() for _ in range(actors)]
    live = list(coros)
    t = time.perf_counter()
    switches = 0
    while live:
        for c in list(live):
            try:
                c.send(None)
                switches += 1
            except StopIteration:
                live.remove(c)
    return switches / (time.perf_counter() - t)


def scheduler_loop(actors: int, steps: int) -> float:
    """A hand-driven coroutine scheduler making the harness's decisions without Trio.

    Same work per switch as the harness minus Trio and oracles: pick an index
    among the ready coroutines with the same chooser, record a trace record.
    """
    from harness.sim import Option, Record

    async def actor() -> None:
        for _ in range(steps):
            await _yield()

    ready = [actor() for _ in range(actors)]
    options = [Option(f"a{k}", "s", None) for k in range(actors)]
    chooser = RandomChooser(0)
    trace: list[Record] = []
    t = time.perf_counter()
    while ready:
        n = len(ready)
        i = chooser.schedule(options[:n], 0.0, False) if n > 1 else 0
        c = ready[i]
        trace.append(Record(len(trace) + 1, 0.0, "a", "s", None, None, i, n, "run"))
        try:
            c.send(None)
        except StopIteration:
            ready.pop(i)
    return len(trace) / (time.perf_counter() - t)


def handoffs(actors: int, steps: int) -> float:
    async def scenario(world: World) -> None:
        async def actor() -> None:
            for _ in range(steps):
                await world.step("s")

        for i in range(actors):
            world.spawn(f"a{i}", actor)

    t = time.perf_counter()
    out = run_once(scenario, RandomChooser(0), limits=h.Limits(max_steps=10 * actors * steps))
    dt = time.perf_counter() - t
    return out.steps / dt


async def toy(world: World) -> None:
    async def actor() -> None:
        for _ in range(10):
            await world.step("s")

    for i in range(3):
        world.spawn(f"a{i}", actor)


def executions(n: int) -> float:
    t = time.perf_counter()
    for i in range(n):
        run_once(toy, RandomChooser(i))
    return n / (time.perf_counter() - t)


def executions_batched(n: int) -> float:
    """The same executions, many per ``trio.run`` (what the random and pct searches do)."""
    from harness.sim import run_batch

    count = [0]

    def keep_going(_out: object) -> bool:
        count[0] += 1
        return count[0] < n

    t = time.perf_counter()
    run_batch(toy, (RandomChooser(i) for i in range(n)), keep_going)
    return count[0] / (time.perf_counter() - t)


def hypothesis_examples(n: int) -> float:
    async def never(world: World) -> None:
        await toy(world)

    t = time.perf_counter()
    r = h.explore(never, strategy="hypothesis", budget=n)
    return r.runs / (time.perf_counter() - t)


def shrink_toy() -> tuple[float, int, int]:
    """Hypothesis on the 2-deviation toy: seconds and runs spent after the first failure, deviations."""
    from tests.toys import order_violation

    r = h.explore(order_violation, strategy="hypothesis", budget=5000, seed=1, prove_minimal=False)
    assert r.counterexample is not None and r.first_found_run is not None and r.first_found_seconds is not None
    return r.seconds - r.first_found_seconds, r.runs - r.first_found_run, r.counterexample.deviations


def run(quick: bool = False) -> list[dict[str, Any]]:
    steps = 20_000 if quick else 100_000
    rows: list[dict[str, Any]] = []
    base = coroutine_loop(3, steps)
    ho = handoffs(3, steps)
    rows.append({"metric": "hand-offs/s (3 actors)", "value": ho, "target": ">= 150,000", "ok": ho >= 150_000})
    same = scheduler_loop(3, steps)
    ratio = same / ho
    rows.append(
        {"metric": "hand-driven scheduler (same decisions) / harness", "value": ratio, "target": "<= 10x", "ok": ratio <= 10}
    )
    rows.append({"metric": "bare coroutine.send loop / harness", "value": base / ho, "target": "(floor)", "ok": None})
    ex = executions(500 if quick else 3000)
    rows.append({"metric": "executions/s, random, 3x10 (one trio.run each)", "value": ex, "target": ">= 1,500", "ok": ex >= 1500})
    eb = executions_batched(500 if quick else 3000)
    rows.append(
        {"metric": "executions/s, random, 3x10 (many per trio.run, as explore does)", "value": eb, "target": ">= 4,000",
         "ok": eb >= 4000}
    )
    hy = hypothesis_examples(300 if quick else 2000)
    rows.append({"metric": "hypothesis examples/s (deviation draws)", "value": hy, "target": ">= 250", "ok": hy >= 250})
    secs, runs, dev = shrink_toy()
    rows.append({"metric": "shrink the 2-deviation toy: seconds", "value": secs, "target": "<= 0.5", "ok": secs <= 0.5})
    rows.append({"metric": "shrink the 2-deviation toy: examples", "value": runs, "target": "<= 200", "ok": runs <= 200})
    rows.append({"metric": "shrunk deviations (exhaustive minimum: 2)", "value": dev, "target": "= 2", "ok": dev == 2})
    return rows
