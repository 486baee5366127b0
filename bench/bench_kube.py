"""Cost of the kube layer per scheduled step, against a bare ``world.step`` hand-off.

Run: ``.venv/bin/python bench/bench_kube.py [N]``. Prints microseconds per
hand-off (two actors alternating ``world.step``), per apiserver write
(``update_status``, its yield point included), per informer delivery (one
watch event into the cache plus a handler call, measured as the extra cost of a
write run with an informer attached) and per ``KubeObject.deepcopy``, and the
ratio of each kube step to a hand-off (target: within 3x).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

from harness.kube import APIServer, Informer, KubeObject
from harness.sim import ReplayChooser, World, run_once


def timed(scenario: Callable[..., Awaitable[object]], n: int) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        out = run_once(scenario, ReplayChooser([]), params={"n": n})
        best = min(best, time.perf_counter() - t0)
        assert out.violation is None, out.violation
    return best


async def handoff(world: World, n: int) -> None:
    async def ping(me: str) -> None:
        for _ in range(n):
            await world.step(f"{me} step")

    world.spawn("a", ping, "a")
    world.spawn("b", ping, "b")


def _obj() -> KubeObject:
    return KubeObject(
        "Queue", "default", "q1",
        labels={"app": "x", "tier": "y"},
        spec={"cohort": "c", "resources": [{"name": "cpu", "quota": 10}, {"name": "mem", "quota": 20}]},
        status={"admitted": 0, "conditions": [{"type": "Ready", "status": "True"}]},
    )


async def writes(world: World, n: int, informer: bool = False) -> None:
    api = APIServer(world)
    if informer:
        inf = Informer(world, api, "Queue")
        seen = [0]
        inf.add_event_handler(on_update=lambda _old, _new: seen.__setitem__(0, seen[0] + 1))
        inf.start()
        await inf.wait_for_cache_sync()
    obj = await api.create(_obj())
    for i in range(n):
        obj.status["admitted"] = i + 1
        obj = await api.update_status(obj)


async def writes_with_informer(world: World, n: int) -> None:
    await writes(world, n, informer=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    t_hand = timed(handoff, n) / (2 * n)
    t_write = timed(writes, n) / n
    t_both = timed(writes_with_informer, n) / n
    t_deliver = t_both - t_write
    obj = _obj()
    t0 = time.perf_counter()
    for _ in range(n):
        obj.deepcopy()
    t_copy = (time.perf_counter() - t0) / n
    us = 1e6
    print(f"bare world.step hand-off : {t_hand * us:7.2f} us/step")
    print(f"apiserver write          : {t_write * us:7.2f} us/write     ({t_write / t_hand:4.2f}x a hand-off)")
    print(f"informer delivery        : {t_deliver * us:7.2f} us/delivery  ({t_deliver / t_hand:4.2f}x a hand-off)")
    print(f"KubeObject.deepcopy      : {t_copy * us:7.2f} us/copy")


if __name__ == "__main__":
    main()
