"""Toy races for the harness's own tests: small, with a known minimum.

- ``lost_update``: two actors read-modify-write a counter (1 deviation).
- ``order_violation``: an order bug that needs exactly 2 deviations among ~30 steps.
- ``slow_liveness``: a bug that shows only as a 300-virtual-second delay.
- ``paused_lost_updates``: two holds and the user's pick (3 entries), #3375's residual's shape.
Each takes ``fixed`` so the same search shows both sides.
"""

from __future__ import annotations

from harness import World, scenario


@scenario  # a trace file may name it (see harness.scenario)
async def lost_update(world: World, *, fixed: bool = False) -> None:
    """Two actors read-modify-write one counter; the second starts later.

    In the canonical (oldest-first) order the first finishes before the second
    reads, so the update is lost only when the schedule deviates.
    """
    store = {"x": 0}
    lock = world.Lock()

    async def increment(warmup: int) -> None:
        for i in range(warmup):
            await world.step(f"warm up {i}")
        if fixed:
            await lock.acquire()
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1
        if fixed:
            lock.release()

    world.spawn("inc-0", increment, 0)
    world.spawn("inc-1", increment, 1)
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']}, expected 2: an update was lost", "no lost update")


@scenario
async def order_violation(world: World, *, fixed: bool = False) -> None:
    """A publisher sets ``ready`` and then writes ``data``; a consumer polls.

    Once it sees ``ready`` the consumer takes two more steps (lock, read). In the
    canonical round-robin order the publisher writes data between them, so the
    consumer reads stale data only if the publisher is passed over twice:
    exactly 2 deviations. A noise actor adds steps (about 30 in all).
    """
    st: dict[str, object] = {"ready": False, "data": None}

    async def publisher() -> None:
        for i in range(9):
            await world.step(f"prepare {i}")
        if fixed:
            await world.step("write data", key="data")
            st["data"] = 42
            await world.step("set ready", key="ready")
            st["ready"] = True
        else:
            await world.step("set ready", key="ready")
            st["ready"] = True
            await world.step("write data", key="data")
            st["data"] = 42

    async def consumer() -> None:
        for _ in range(40):  # bounded polling: no livelock under unfair schedules
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
async def slow_liveness(world: World, *, fixed: bool = False) -> None:
    """A retry that is scheduled 300 s out when it lost a race, 5 s when fixed.

    Two jobs update one shared record; a job that finds the record busy
    re-queues itself after a delay. The oracle: each job is done within 10 s.
    """
    busy = {"owner": None}
    done: dict[str, float] = {}

    async def job(name: str, warmup: int) -> None:
        for i in range(warmup):
            await world.step(f"{name} warm up {i}")
        while True:
            await world.step(f"{name} check record", key="record")
            if busy["owner"] is None:
                busy["owner"] = name
                await world.step(f"{name} write record", key="record")
                busy["owner"] = None
                done[name] = world.now
                return
            await world.sleep(5.0 if fixed else 300.0, f"{name} requeue after conflict")

    world.spawn("j1", job, "j1", 0)
    world.spawn("j2", job, "j2", 2)
    for name in ("j1", "j2"):
        world.eventually(lambda n=name: n in done, within=10.0, name=f"{name} done within 10 s")


@scenario
async def paused_lost_updates(world: World, *, fixed: bool = False) -> None:
    """Two counters each lose an update, and it shows only after the user's shorter pause: 3 entries.

    The shape of #3375's residual (two holds and the user's pick): no plan of
    two entries fails, and level 2 is thousands of plans (every pair of holds
    with their siblings), more than a small proof budget runs on one worker.
    Fixed: the writers take a lock, so no update is lost.
    """
    store = {"x": 0, "y": 0}
    short = world.choose("user: pause before checking (0: 2 s, 1: 1 s)", 2) == 1
    lock = world.Lock()

    async def increment(var: str, warmup: int) -> None:
        for i in range(warmup):
            await world.step(f"warm up {var} {i}")
        if fixed:
            await lock.acquire()
        await world.step(f"read {var}", key=var)
        v = store[var]
        await world.step(f"write {var}", key=var)
        store[var] = v + 1
        if fixed:
            lock.release()

    for var in ("x", "y"):
        world.spawn(f"{var}-0", increment, var, 0)
        world.spawn(f"{var}-1", increment, var, 1)
    world.at_end(lambda: store != {"x": 1, "y": 1} or not short or "both updates lost, seen after the short pause",
                 "no update lost in sight")


# ----------------------------------------------------------------- a machine
from harness.stateful import RaceMachine, integers, rule  # noqa: E402


class DepositMachine(RaceMachine):
    """User deposits spawn background writers that read-modify-write a balance.

    Buggy: a writer reads, yields, writes (lost update between two writers).
    Fixed: writers hold a lock. Minimal program: two deposits + 1 deviation.
    """

    max_rules = 4

    async def setup(self) -> None:
        self.balance = 0
        self.expected = 0
        self.lock = self.world.Lock()
        self.world.at_end(
            lambda: self.balance == self.expected or f"balance {self.balance} != deposited {self.expected}",
            "every deposit lands",
        )

    async def _writer(self, amount: int) -> None:
        if self.fixed:
            await self.lock.acquire()
        await self.world.step("read balance", key="balance")
        seen = self.balance
        await self.world.step("write balance", key="balance")
        self.balance = seen + amount
        if self.fixed:
            self.lock.release()

    @rule(amount=integers(1, 3))
    async def deposit(self, amount: int) -> None:
        self.expected += amount
        self.world.spawn("writer", self._writer, amount)

    @rule()
    async def audit(self) -> None:
        await self.world.step("audit")
