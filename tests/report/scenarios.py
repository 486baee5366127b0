"""Scenarios for the report tests: hostile strings, a crowded timeline, long runs with a bound."""

from __future__ import annotations

from harness import World
from harness.kube import APIServer, Informer, KubeObject

EVIL = "<script>alert(1)</script>"
#: a string with every kind of markup a model could smuggle into a page
HOSTILE = "\"'><script>alert(1)</script><img src=x onerror=alert(2)><!--{{7*7}}</style></textarea>&amp;"


async def evil_name(world: World) -> None:
    """An informer cache lags behind a delete; the oracle names the object (whose name is markup)."""
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", EVIL, spec={"note": "<b>bold?</b>"}))
    informer = Informer(world, api, "ConfigMap", name="cleaner/informer/ConfigMap")
    informer.start()

    async def deleter() -> None:
        await api.delete("ConfigMap", "default", EVIL)

    async def reader() -> None:
        await informer.wait_for_cache_sync()
        await world.step("look at the cache", key=f"ConfigMap default/{EVIL}")
        if informer.lister.try_get("default", EVIL) is not None and api.peek("ConfigMap", "default", EVIL) is None:
            world.fail(f"ConfigMap default/{EVIL} is deleted but the cache still shows it", name="cache agrees")

    world.spawn("deleter", deleter)
    world.spawn("reader", reader)


async def hostile(world: World, note: str = HOSTILE) -> None:
    """Every string a model sets is markup: actor, label, key, rv (a string), oracle, views, bound, params."""
    seen = {"n": 0}

    async def actor() -> None:
        for i in range(3):
            await world.step(f"{note} {i}", key=note, rv=note)  # type: ignore[arg-type]  # rv as a string, on purpose
            seen["n"] += 1
        world.fail(f"message {note}", name=f"oracle {note}")

    world.spawn(f"actor {note}", actor)
    world.spawn("other", actor)
    world.expose(f"view {note}", lambda: {note: [note, seen["n"]]})
    world.expose(f"count {note}", lambda: seen["n"])
    world.bound(lambda: seen["n"], 1_000, name=f"bound {note}")


async def crowded(world: World, helpers: int = 9) -> None:
    """A lost update between two writers that start last, among busy helpers: lanes fill a wide screen.

    The writers' lanes are the rightmost, so at 800 px their boxes start out of view.
    """
    store = {"x": 0}

    async def helper(i: int) -> None:
        for k in range(4):
            await world.step(f"reconcile batch {k} of background-controller-{i}")

    async def increment(warm_up: int) -> None:
        for i in range(warm_up):
            await world.step(f"warm up {i}")
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1

    for i in range(helpers):
        world.spawn(f"background-controller-{i}", helper, i)
    world.spawn("writer-a", increment, 6)
    world.spawn("writer-b", increment, 7)
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']}: an update was lost", "no lost update")


async def long_run(world: World, steps: int = 10_050) -> None:
    """A single actor takes ``steps`` steps, a microsecond apart, then an end oracle fails.

    Time moves at every step: 20,000 steps at one instant would be a livelock, another verdict."""

    async def walker() -> None:
        for i in range(steps):
            await world.sleep(1e-6, f"step {i}")

    world.spawn("walker", walker)
    world.at_end(lambda: "the walk ended", "never ends")


async def backlog(world: World, steps: int = 4_000, limit: int = 300) -> None:
    """A producer outruns a consumer; the queue's length is bounded and exposed (a chart's worth of growth)."""
    queue: list[int] = []

    async def producer() -> None:
        for i in range(steps):
            await world.sleep(0.01, f"produce item {i}")
            queue.append(i)

    async def consumer() -> None:
        while True:
            await world.sleep(0.03, "consume one item")
            if queue:
                queue.pop(0)

    world.spawn("producer", producer)
    world.spawn("consumer", consumer, daemon=True)
    world.bound(lambda: len(queue), limit, name="queued items")
    world.expose("queue length", lambda: len(queue))
    world.expose("head of the queue", lambda: queue[:3])
