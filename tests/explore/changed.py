"""A 'later version' of tests.toys.order_violation: one step renamed, for divergence tests."""

from __future__ import annotations

from harness import World, scenario


@scenario  # a trace file may name it (see harness.scenario)
async def order_violation(world: World, *, fixed: bool = False) -> None:
    st: dict[str, object] = {"ready": False, "data": None}

    async def publisher() -> None:
        for i in range(9):
            await world.step(f"prepare {i}" if i != 4 else "prepare (renamed)")
        await world.step("set ready", key="ready")
        st["ready"] = True
        await world.step("write data", key="data")
        st["data"] = 42

    async def consumer() -> None:
        for _ in range(40):
            await world.step("check ready", key="ready")
            if st["ready"]:
                break
        else:
            return
        await world.step("lock data", key="data")
        await world.step("read data", key="data")
        assert st["data"] == 42, f"consumer read data={st['data']!r} after ready was set"

    async def noise() -> None:
        for i in range(8):
            await world.step(f"noise {i}")

    world.spawn("publisher", publisher)
    world.spawn("consumer", consumer)
    world.spawn("noise", noise)


@scenario
async def lost_update(world: World, *, fixed: bool = True) -> None:
    """A 'later version' of tests.toys.lost_update whose default of ``fixed`` became True."""
    from tests import toys

    await toys.lost_update(world, fixed=fixed)
