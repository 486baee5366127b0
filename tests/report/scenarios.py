"""Scenarios for the report tests: a hostile object name, and a trace over the timeline cap."""

from __future__ import annotations

from harness import World
from harness.kube import APIServer, Informer, KubeObject

EVIL = "<script>alert(1)</script>"


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


async def long_run(world: World, steps: int = 10_050) -> None:
    """A single actor takes ``steps`` steps, then an end oracle fails."""

    async def walker() -> None:
        for i in range(steps):
            await world.step(f"step {i}")

    world.spawn("walker", walker)
    world.at_end(lambda: "the walk ended", "never ends")
