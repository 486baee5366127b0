"""Informers, listers and cache lag (section 0.4)."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kube_support import FaultChooser, clean, run, run_with

from harness.kube import (
    ApiError,
    APIServer,
    DeletedFinalStateUnknown,
    Informer,
    KubeObject,
    NotFound,
)
from harness.sim import World

PROPERTY = settings(derandomize=True, database=None, max_examples=50, deadline=None)


def recorder(informer: Informer, events: list[tuple[Any, ...]]) -> None:
    def on_delete(obj: KubeObject | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            events.append(("tombstone", obj.key, obj.obj.resource_version))
        else:
            events.append(("delete", obj.key, obj.resource_version))

    informer.add_event_handler(
        lambda o: events.append(("add", o.key, o.resource_version)),
        lambda old, new: events.append(("update", new.key, old.resource_version, new.resource_version)),
        on_delete,
    )


def test_initial_list_syncs_and_adds_existing_objects() -> None:
    events: list[tuple[Any, ...]] = []
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Pod", "ns", "a"))
        inf = Informer(world, api, "Pod")
        recorder(inf, events)
        inf.start()
        box["synced_before"] = inf.has_synced()
        await inf.wait_for_cache_sync()
        box["synced_after"] = inf.has_synced()

    out = clean(run(scenario))
    assert box == {"synced_before": False, "synced_after": True}
    assert events == [("add", "ns/a", 6)]
    assert "informer/Pod list" in [r.label for r in out.trace]


def test_lister_lags_until_event_delivered() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Queue")
        inf.start()
        await inf.wait_for_cache_sync()
        created = await api.create(KubeObject("Queue", "ns", "q"))
        try:
            inf.lister.get("ns", "q")
        except NotFound:
            box["lagging"] = True
        created.status["x"] = 1
        await api.update_status(created)  # the ADDED event is delivered before this request
        box["after_one"] = inf.lister.get("ns", "q").resource_version
        await world.step("let the informer catch up")
        box["after_two"] = inf.lister.get("ns", "q").resource_version

    out = clean(run(scenario))
    assert box == {"lagging": True, "after_one": 6, "after_two": 7}  # (revisions 1 to 5 are the namespaces)
    assert "informer/Queue deliver ADDED ns/q rv=6" in [r.label for r in out.trace]


def test_lister_returns_copies() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Queue", "ns", "q", spec={"a": [1]}))
        inf = Informer(world, api, "Queue")
        inf.start()
        await inf.wait_for_cache_sync()
        inf.lister.get("ns", "q").spec["a"].append(2)
        inf.lister.list()[0].spec["a"].append(3)
        box["spec"] = inf.lister.get("ns", "q").spec
        box["server"] = api.peek("Queue", "ns", "q")

    clean(run(scenario))
    assert box["spec"] == {"a": [1]} and box["server"].spec == {"a": [1]}


def test_handlers_run_after_store_update() -> None:
    seen: list[int | None] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod")
        inf.add_event_handler(on_add=lambda o: seen.append(inf.lister.resource_version(o.namespace, o.name)))
        inf.start()
        await api.create(KubeObject("Pod", "ns", "a"))

    clean(run(scenario))
    assert seen == [6]


def test_store_can_be_ahead_of_handlers() -> None:
    """With handler_lag, a handler may run when the store already holds a newer event (0.4b)."""
    gaps: list[tuple[int, int | None]] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", handler_lag=True)
        inf.add_event_handler(on_add=lambda o: gaps.append((o.resource_version, inf.lister.resource_version("ns", "a"))))
        inf.start()
        obj = await api.create(KubeObject("Pod", "ns", "a"))
        obj.status["phase"] = "Running"
        await api.update_status(obj)

    found = False
    for seed in range(40):
        gaps.clear()
        clean(run(scenario, seed=seed))
        if gaps and gaps[0] == (6, 7):
            found = True
            break
    assert found


def test_informers_of_different_kinds_can_reorder() -> None:
    order: list[str] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        for kind in ("Pod", "PodGroup"):
            inf = Informer(world, api, kind)
            inf.add_event_handler(on_add=lambda o: order.append(o.kind))
            inf.start()
        await api.create(KubeObject("Pod", "ns", "p"))  # committed first
        await api.create(KubeObject("PodGroup", "ns", "pg"))

    clean(run(scenario))
    assert order == ["Pod", "PodGroup"]  # canonical: commit order
    orders = set()
    for seed in range(30):
        order.clear()
        clean(run(scenario, seed=seed))
        orders.add(tuple(order))
    assert ("PodGroup", "Pod") in orders


def test_one_informer_delivers_in_rv_order() -> None:
    rvs: list[int] = []

    async def writer(api: APIServer, name: str) -> None:
        obj = await api.create(KubeObject("Pod", "ns", name))
        await api.patch("Pod", "ns", name, {"status": {"n": 1}})
        await api.delete("Pod", "ns", obj.name)

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod")
        # only watch events: a LIST's objects come in key order, not RV order
        inf.add_event_handler(
            lambda o: rvs.append(o.resource_version) if inf.has_synced() else None,
            lambda _o, n: rvs.append(n.resource_version) if inf.has_synced() else None,
            lambda o: rvs.append(o.resource_version) if isinstance(o, KubeObject) else None,
        )
        inf.start()
        for n in ("a", "b", "c"):
            world.spawn(f"writer-{n}", writer, api, n)

    for seed in range(30):
        rvs.clear()
        clean(run(scenario, seed=seed))
        # the initial list may coalesce early events (it may come late, inside its window)
        assert rvs == sorted(set(rvs)) and (not rvs or rvs[-1] == 14)


def _relist_scenario(events: list[tuple[Any, ...]]) -> Any:
    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Pod", "ns", "a"))
        inf = Informer(world, api, "Pod", latency=1.0, watch_drops=True)
        recorder(inf, events)
        inf.start()
        await inf.wait_for_cache_sync()
        await api.delete("Pod", "ns", "a")  # will be missed
        b = await api.create(KubeObject("Pod", "ns", "b"))  # will be seen only through the relist
        await api.patch("Pod", "ns", b.name, {"spec": {"v": 2}})  # intermediate state coalesced
        world.state["relists"] = inf
        await world.sleep(5.0)

    return scenario


def test_relist_turns_missed_delete_into_tombstone() -> None:
    events: list[tuple[Any, ...]] = []
    chooser = FaultChooser("fault: informer/Pod watch drops")
    out = clean(run_with(_relist_scenario(events), chooser))
    # the DELETED's point comes first: nothing after rv 6 was sent before the watch failed
    assert chooser.taken == [
        "fault: informer/Pod watch drops before DELETED ns/a rv=7 is sent; relists after backoff"]
    # Replace: the tombstone first, then the listed objects (RealFIFO's reconcileReplacement)
    assert events == [("add", "ns/a", 6), ("tombstone", "ns/a", 6), ("add", "ns/b", 9)]
    steps = [(r.label, r.time) for r in out.trace if r.actor == "informer/Pod"]
    fault_at = next(t for label, t in steps if "watch drops" in label)
    assert [t for label, t in steps if label == "informer/Pod list"][1] == fault_at + 0.8  # client-go's backoff


def test_relist_coalesces_intermediate_states_and_adds_missed_creates() -> None:
    events: list[tuple[Any, ...]] = []
    clean(run_with(_relist_scenario(events), FaultChooser("fault: informer/Pod watch drops")))
    b_events = [e for e in events if e[1] == "ns/b"]
    assert b_events == [("add", "ns/b", 9)]  # rv 8 (the create) was never shown
    without_fault: list[tuple[Any, ...]] = []
    clean(run(_relist_scenario(without_fault)))
    assert without_fault == [("add", "ns/a", 6), ("delete", "ns/a", 7), ("add", "ns/b", 8), ("update", "ns/b", 8, 9)]


def test_duplicate_delivery_is_a_sync() -> None:
    """client-go: the second copy is an update with the same resourceVersion, which ``OnUpdate`` marks as a sync.

    ``distribute`` hands a sync only to listeners with a resync period; a
    repeated DELETED reaches every handler again (``RealFIFO`` queues it,
    ``processDeltas`` calls ``OnDelete``).
    """
    for resync, expected in (
        (0.0, [("add", "ns/a", 6), ("delete", "ns/a", 7), ("delete", "ns/a", 7)]),
        (600.0, [("add", "ns/a", 6), ("update", "ns/a", 6, 6), ("delete", "ns/a", 7), ("delete", "ns/a", 7)]),
    ):
        events: list[tuple[Any, ...]] = []

        async def scenario(world: World, resync: float = resync, events: list[tuple[Any, ...]] = events) -> None:
            api = APIServer(world, namespaces=("ns",))
            inf = Informer(world, api, "Pod", duplicates=True, resync_period=resync)
            recorder(inf, events)
            inf.start()
            await inf.wait_for_cache_sync()
            await api.create(KubeObject("Pod", "ns", "a"))
            await world.sleep(1.0)
            await api.delete("Pod", "ns", "a")
            await world.sleep(1.0)
            inf.stop()

        chooser = FaultChooser("fault: informer/Pod delivers ADDED", "fault: informer/Pod delivers DELETED")
        clean(run_with(scenario, chooser))
        assert chooser.taken == ["fault: informer/Pod delivers ADDED ns/a rv=6 twice",
                                 "fault: informer/Pod delivers DELETED ns/a rv=7 twice"]
        assert events == expected, resync


def test_resync_redelivers_cached_objects_without_apiserver_calls() -> None:
    events: list[tuple[Any, ...]] = []
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Pod", "ns", "a"))
        inf = Informer(world, api, "Pod", resync_period=10.0)
        recorder(inf, events)
        inf.start()
        await world.sleep(25.0)
        box["calls"] = api.count()
        inf.stop()

    clean(run(scenario))
    assert events == [("add", "ns/a", 6), ("update", "ns/a", 6, 6), ("update", "ns/a", 6, 6)]
    assert box["calls"] == 1


@PROPERTY
@given(
    ops=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["create", "patch", "delete"])), max_size=12),
    seed=st.integers(0, 2**16),
    drops=st.booleans(),
    dups=st.booleans(),
)
def test_property_lister_rv_between_delivered_and_server(
    ops: list[tuple[str, str]], seed: int, drops: bool, dups: bool
) -> None:
    """The lister never shows an RV newer than the apiserver's, nor older than what its informer delivered."""

    async def writer(api: APIServer, todo: list[tuple[str, str]]) -> None:
        for name, verb in todo:
            with contextlib.suppress(ApiError):  # NotFound / AlreadyExists belong to the random program
                if verb == "create":
                    await api.create(KubeObject("Pod", "ns", name))
                elif verb == "patch":
                    await api.patch("Pod", "ns", name, {"status": {"n": name}})
                else:
                    await api.delete("Pod", "ns", name)

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", watch_drops=drops, duplicates=dups)
        inf.start()
        high: dict[str, int] = {}

        def lister_within_bounds() -> str | None:
            for key in inf.lister.list_keys():
                ns, name = key.split("/")
                rv = inf.lister.resource_version(ns, name)
                assert rv is not None
                stored = api.peek("Pod", ns, name)
                newest = stored.resource_version if stored is not None else api.resource_version
                if rv > newest:
                    return f"lister shows {key} at rv={rv}, newer than the apiserver's {newest}"
                if rv < inf.delivered_rv.get(key, 0):
                    return f"lister shows {key} at rv={rv}, older than the delivered {inf.delivered_rv[key]}"
                if rv < high.get(key, 0):
                    return f"lister went back in time for {key}: {high[key]} -> {rv}"
                high[key] = rv
            return None

        world.invariant(lister_within_bounds, name="lister between delivered and apiserver")
        world.spawn("writer-1", writer, api, ops[::2])
        world.spawn("writer-2", writer, api, ops[1::2])

    clean(run(scenario, seed=seed))
