"""One clock: every clock an in-process operator reads is the world's (``harness.sim._clocks``), nobody else's."""

from __future__ import annotations

import asyncio
import datetime
import pickle
import textwrap
import time
from datetime import datetime as bound_datetime  # (a module that bound the class by name sees the same clock)
from pathlib import Path
from typing import Any

import trio

import harness as h
from harness.kube import APIServer, KubeObject, start_cluster
from harness.operators import Operator, kopf_operator
from harness.sim import EPOCH, ReplayChooser, _clocks, run_once

# (the real clocks are read as ``_clocks.real_time()``: a name bound to a real clock outside the harness, by
# ``from ... import``, is the replacement once an operator ran, as aiohttp's is)

UTC = datetime.UTC


def _readings() -> dict[str, Any]:
    """Every clock an operator may read, as it reads it."""
    local = datetime.datetime.now()
    return {
        "time.time": time.time(),
        "time.time_ns": time.time_ns(),
        "time.monotonic": time.monotonic(),
        "time.monotonic_ns": time.monotonic_ns(),
        "time.perf_counter": time.perf_counter(),
        "time.perf_counter_ns": time.perf_counter_ns(),
        "datetime.now(UTC)": datetime.datetime.now(UTC),
        "datetime.now()": local,
        "bound datetime.now(UTC)": bound_datetime.now(UTC),
        "datetime.utcnow()": datetime.datetime.utcnow(),  # (kopf's older releases read it)
        "datetime.today()": datetime.datetime.today(),
        "date.today()": datetime.date.today(),
        "time.gmtime()": time.gmtime(),
    }


def _expected(t: float) -> dict[str, Any]:
    """What each clock reads at virtual time ``t``: EPOCH + t for the wall clocks, t for the monotonic ones."""
    ns = round(t * 1_000_000_000)
    utc = datetime.datetime(2026, 1, 1, tzinfo=UTC) + datetime.timedelta(seconds=t)
    local = datetime.datetime.fromtimestamp(EPOCH + t)
    return {
        "time.time": EPOCH + t, "time.time_ns": EPOCH * 1_000_000_000 + ns,
        "time.monotonic": t, "time.monotonic_ns": ns, "time.perf_counter": t, "time.perf_counter_ns": ns,
        "datetime.now(UTC)": utc, "datetime.now()": local, "bound datetime.now(UTC)": utc,
        "datetime.utcnow()": utc.replace(tzinfo=None), "datetime.today()": local, "date.today()": local.date(),
        "time.gmtime()": time.gmtime(EPOCH + t),
    }


def _record(world: h.World, box: list[tuple[str, float, dict[str, Any]]], who: str) -> None:
    """Read every clock, then spin 20 real milliseconds and read them again: real time must not move them."""
    before = _readings()
    spin = _clocks.real_monotonic()
    while _clocks.real_monotonic() - spin < 0.02:
        pass
    assert _readings() == before, who
    box.append((who, world.now, before))


async def _ping() -> None:
    """One request to the apiserver (an operator that never reaches it is no result: a model error)."""
    from harness.kube._http._environment import ROUTE

    transport = ROUTE.get()
    assert transport is not None
    await transport.handler.handle("GET", "/api/v1/namespaces", {}, b"", transport.client)


async def _trio_main(world: h.World, box: list[Any]) -> None:
    _record(world, box, "trio")
    await trio.sleep(7.25)
    _record(world, box, "trio")
    await _ping()


def _in_thread(world: h.World, box: list[Any]) -> None:
    _record(world, box, "thread")
    time.sleep(2.5)  # (a lockstep thread's sleep is the world's)
    _record(world, box, "thread")


async def _asyncio_main(world: h.World, box: list[Any]) -> None:
    loop = asyncio.get_running_loop()
    _record(world, box, "asyncio")
    box.append(("loop.time()", world.now, {"time.monotonic": loop.time()}))
    await asyncio.sleep(3.5)
    _record(world, box, "asyncio")
    await loop.run_in_executor(None, _in_thread, world, box)
    _record(world, box, "asyncio")
    box.append(("loop.time()", world.now, {"time.monotonic": loop.time()}))
    await loop.run_trio(_ping)  # type: ignore[attr-defined]


def test_every_clock_is_virtual_in_process() -> None:
    """A Trio operator, an asyncio one and a lockstep thread of it read EPOCH + virtual time on every wall clock
    and virtual time on every monotonic one (``loop.time()`` too), exactly: the clocks move with virtual sleeps
    and stand still while real time passes; the scenario itself, beside them, reads the real clocks."""
    box: list[tuple[str, float, dict[str, Any]]] = []

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await world.sleep(1)
        Operator(api, "trio-op", _trio_main, world, box).start()
        Operator(api, "aio-op", _asyncio_main, world, box, asyncio=True).start()
        await world.sleep(30)
        # the scenario is the harness's side: the real clock, whatever the operators read
        world.state["outside"] = (time.time(), _clocks.real_time(), datetime.datetime.now(UTC).timestamp())

    state: dict[str, Any] = {}

    async def wrapped(world: h.World) -> None:
        await scenario(world)
        state.update(world.state)

    out = run_once(wrapped, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert [(who, t) for who, t, _ in box] == [
        ("trio", 1.0), ("asyncio", 1.0), ("loop.time()", 1.0), ("asyncio", 4.5), ("thread", 4.5), ("thread", 7.0),
        ("asyncio", 7.0), ("loop.time()", 7.0), ("trio", 8.25)]
    for who, t, readings in box:
        expected = _expected(t)
        assert readings == {k: expected[k] for k in readings}, (who, t)
    seen, real, wall = state["outside"]
    assert abs(seen - real) < 5 and abs(wall - real) < 5 and real > EPOCH + 86_400


def test_clocks_outside_an_operator_and_the_datetime_class_are_untouched() -> None:
    """Outside an operator's code every replaced clock is the real one, and ``datetime.datetime`` is the class it
    was (``is``, ``isinstance``, pickling), with ``now`` and ``utcnow`` of its own."""
    async def scenario(world: h.World) -> None:
        Operator(APIServer(world), "op", _ping).start()

    assert run_once(scenario, ReplayChooser([])).violation is None
    assert time.time is not _clocks.real_time  # (replaced for good once an operator ran: the replacement reads the real one)
    assert abs(time.time() - _clocks.real_time()) < 5 and abs(time.monotonic() - _clocks.real_monotonic()) < 5
    now = datetime.datetime.now(UTC)
    assert abs(now.timestamp() - _clocks.real_time()) < 5 and type(now) is datetime.datetime is bound_datetime
    assert pickle.loads(pickle.dumps(now)) == now
    assert datetime.date.today() == datetime.datetime.fromtimestamp(_clocks.real_time()).date()


RETRY_HANDLERS = textwrap.dedent('''
    import asyncio
    import kopf
    from kubernetes_asyncio import client, config

    TRIES = []

    @kopf.on.create("configmaps", labels={"app": "retry"})
    async def make_child(name, namespace, retry, logger, **_):
        TRIES.append(asyncio.get_running_loop().time())
        if retry == 0:
            raise kopf.TemporaryError("the child's namespace is not ready yet", delay=60)
        await config.load_kube_config()
        async with client.ApiClient() as api:
            await client.CoreV1Api(api).create_namespaced_config_map(
                namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"{name}-child")))
''')


def test_kopf_handler_retry_follows_virtual_time(tmp_path: Path) -> None:
    """kopf decides whether a failed handler's delay is over from ``datetime.now()``: on the world's clock the
    handler that failed once with ``delay=60`` is retried 60 virtual seconds later and makes its child, and the
    same plan gives the same trace (on the real clock it was never retried, and replays differed)."""
    handlers = tmp_path / "retry.py"
    handlers.write_text(RETRY_HANDLERS)

    async def scenario(world: h.World) -> None:
        world.horizon = 90
        api = APIServer(world)
        await start_cluster(api)
        kopf_operator(api, "retry-op", handlers).start()
        await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "retry"}))
        world.eventually(lambda: api.peek("ConfigMap", "default", "a-child") is not None or "no child yet",
                         within=75, name="the child exists")

    # (the canonical order: a random seed's draws move with every request kopf makes at its start, and a draw can
    # postpone the retry's delivery within its 2 s window, which is the search's to do, not this test's)
    out = run_once(scenario, ReplayChooser([]), notes=True)
    assert out.violation is None, out.violation
    tries = [n.time for n in out.trace.notes if "Handler 'make_child'" in n.text]
    assert tries == [0.0, 60.0], [(n.time, n.text) for n in out.trace.notes if "make_child" in n.text]
    created = [r.time for r in out.trace if r.label == "create ConfigMap default/a-child"]
    assert created == [60.0]
    again = run_once(scenario, ReplayChooser([]))
    assert again.trace.digest() == out.trace.digest()
