"""Issue 17: informers as client-go and controller-runtime build them.

Event filters and enqueuers (item 4): controller-runtime's source turns informer
callbacks into events, every predicate must pass, and the handler maps what is
left to requests. A relist's new keys arrive as creates, so a create predicate
sees them; a tombstone arrives unwrapped with ``delete_state_unknown``.
"""

from __future__ import annotations

from typing import Any

from kube_support import FaultChooser, clean, run, run_with

from harness.kube import (
    APIServer,
    ControllerProcess,
    CreateEvent,
    DeletedFinalStateUnknown,
    DeleteEvent,
    EnqueueRequestForOwner,
    EnqueueRequestsFromMapFunc,
    Funcs,
    GenerationChangedPredicate,
    Informer,
    KubeObject,
    ResourceVersionChangedPredicate,
    UpdateEvent,
    controller_ref,
    watch,
)
from harness.sim import World


class Recorder:
    """A queue that records what is added (a WorkQueue's ``add``, without the dedup)."""

    def __init__(self) -> None:
        self.added: list[str] = []

    def add(self, item: str) -> None:
        self.added.append(item)


async def _sync_then_delete_create_patch(inf: Informer, api: APIServer) -> None:
    """Start ``inf``, wait for its sync, then delete pod a, create pod b and patch b (three events)."""
    inf.start()
    await inf.wait_for_cache_sync()
    await api.delete("Pod", "ns", "a")
    b = await api.create(KubeObject("Pod", "ns", "b"))
    await api.patch("Pod", "ns", b.name, {"spec": {"v": 2}})


def _relist_model(queue: Recorder, deletes: list[DeleteEvent]) -> Any:
    """b is created and its spec changed while the Pod watch may be down; a is deleted meanwhile."""

    def record_delete(e: DeleteEvent) -> bool:
        deletes.append(e)
        return True

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Pod", "ns", "a"))
        inf = Informer(world, api, "Pod", latency=1.0, watch_drops=True)
        # a controller that ignores creates (it creates these pods itself) and reconciles on changes
        watch(inf, queue, None, Funcs(create_func=lambda e: False, delete_func=record_delete))
        await _sync_then_delete_create_patch(inf, api)
        await world.sleep(5.0)

    return scenario


def test_create_predicate_drops_relist_add() -> None:
    queue, deletes = Recorder(), list[DeleteEvent]()
    clean(run(_relist_model(queue, deletes)))
    # watched: the create is filtered, the spec change and the delete reach the queue
    assert queue.added == ["ns/a", "ns/b"]
    assert [(d.object.key, d.delete_state_unknown) for d in deletes] == [("ns/a", False)]

    queue, deletes = Recorder(), []
    chooser = FaultChooser("fault: informer/Pod watch drops")
    clean(run_with(_relist_model(queue, deletes), chooser))
    assert chooser.taken == [
        "fault: informer/Pod watch drops before DELETED ns/a rv=7 is sent; relists after backoff"]
    # relisted: create and update of b coalesce into one add, which the create predicate drops;
    # the missed delete comes as a tombstone, unwrapped, with delete_state_unknown
    assert queue.added == ["ns/a"]
    assert [(d.object.key, d.delete_state_unknown, d.object.resource_version) for d in deletes] == [("ns/a", True, 6)]


def test_generation_changed_predicate() -> None:
    queue = Recorder()

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Job")
        watch(inf, queue, None, GenerationChangedPredicate())
        inf.start()
        await inf.wait_for_cache_sync()
        await api.create(KubeObject("Job", "ns", "j", spec={"n": 1}))
        await api.patch("Job", "ns", "j", {"status": {"done": True}})  # status only: generation unchanged
        await api.patch("Job", "ns", "j", {"metadata": {"labels": {"x": "y"}}})  # metadata only
        await world.sleep(1.0)
        await api.patch("Job", "ns", "j", {"spec": {"n": 2}})  # spec: generation bumped
        await world.sleep(1.0)

    out = clean(run(scenario))
    assert out.violation is None
    assert queue.added == ["ns/j", "ns/j"]  # the create, then the spec change only
    old = KubeObject("Job", "ns", "j", resource_version=3, generation=1)
    status = KubeObject("Job", "ns", "j", resource_version=4, generation=1)
    spec = KubeObject("Job", "ns", "j", resource_version=5, generation=2)
    p = GenerationChangedPredicate()
    assert not p.update(UpdateEvent(old, status)) and p.update(UpdateEvent(status, spec))
    assert p.create(CreateEvent(old)) and p.delete(DeleteEvent(old))
    rv = ResourceVersionChangedPredicate()
    assert rv.update(UpdateEvent(old, status)) and not rv.update(UpdateEvent(old, old))  # a resync is dropped


def test_owner_and_map_func_enqueuers() -> None:
    owner = KubeObject("ReplicaSet", "ns", "rs", uid="u1")
    other = KubeObject("Deployment", "ns", "d", uid="u2")
    pod = KubeObject("Pod", "ns", "p", owner_references=[controller_ref(owner)])
    moved = KubeObject("Pod", "ns", "p", owner_references=[controller_ref(other)])
    q = Recorder()
    EnqueueRequestForOwner("ReplicaSet").create(CreateEvent(pod), q)
    EnqueueRequestForOwner("ReplicaSet").update(UpdateEvent(pod, moved), q)  # the old owner still hears of it
    EnqueueRequestForOwner("Deployment", only_controller=True).update(UpdateEvent(pod, moved), q)
    assert q.added == ["ns/rs", "ns/rs", "ns/d"]
    q = Recorder()
    by_label = EnqueueRequestsFromMapFunc(lambda o: [f"ns/{o.labels['app']}"] if "app" in o.labels else [])
    by_label.update(UpdateEvent(KubeObject("Pod", "ns", "p", labels={"app": "x"}),
                                KubeObject("Pod", "ns", "p", labels={"app": "x"})), q)
    assert q.added == ["ns/x"]  # old and new map to one request, added once


# ------------------------------------------------------------------ item 3: listeners and handlers
class PostponeActors:
    """Canonical, except that steps of the named actors go last whenever anything else is enabled.

    A deterministic stand-in for a strategy that holds one listener inside its
    window while everything else runs.
    """

    def __init__(self, *actors: str) -> None:
        self.actors = actors

    def schedule(self, options: Any, now: float, can_wait: bool) -> int:
        for i, opt in enumerate(options):
            if opt.actor not in self.actors:
                return int(i)
        return 0

    def choose(self, n: int, point: object) -> int:
        return 0

    def fault(self, point: object) -> bool:
        return False


def _create_then_update(world: World, inf: Informer) -> Any:
    async def user() -> None:
        api = world.state["api"]
        obj = await api.create(KubeObject("Pod", "ns", "a"))
        obj.status["phase"] = "Running"
        await api.update_status(obj)

    return user


def test_lister_ahead_of_handler() -> None:
    """The indexer is updated when a delta is popped; a listener that lags sees an older object than the lister."""
    seen: list[tuple[str, int, int | None]] = []

    async def scenario(world: World) -> None:
        api = world.state["api"] = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", handler_lag=True)
        inf.add_event_handler(
            lambda o: seen.append(("add", o.resource_version, inf.lister.resource_version("ns", "a"))),
            lambda _old, o: seen.append(("update", o.resource_version, inf.lister.resource_version("ns", "a"))),
        )
        inf.start()
        await inf.wait_for_cache_sync()
        await _create_then_update(world, inf)()

    clean(run(scenario))
    assert seen == [("add", 6, 6), ("update", 7, 7)]  # canonical: the handler keeps up with the lister
    seen.clear()
    out = clean(run_with(scenario, PostponeActors("informer/Pod/handler")))
    # held: both deliveries reached the indexer before the handler ran for the first
    assert seen == [("add", 6, 7), ("update", 7, 7)]
    labels = [r.label for r in out.trace]
    assert labels.index("informer/Pod deliver MODIFIED ns/a rv=7") < labels.index("informer/Pod handle add ns/a rv=6")


def test_two_handlers_lag_independently() -> None:
    """Each handler has its own buffer and steps: holding one listener does not hold the other."""
    first: list[int] = []
    second: list[tuple[int, int]] = []

    async def scenario(world: World) -> None:
        api = world.state["api"] = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", handler_lag=True)
        inf.add_event_handler(lambda o: first.append(o.resource_version), lambda _o, n: first.append(n.resource_version))
        inf.add_event_handler(
            lambda o: second.append((o.resource_version, len(first))),
            lambda _o, n: second.append((n.resource_version, len(first))),
        )
        inf.start()
        await inf.wait_for_cache_sync()
        await _create_then_update(world, inf)()

    out = clean(run(scenario))
    assert first == [6, 7] and second == [(6, 1), (7, 2)]  # canonical: in step
    actors = {r.actor for r in out.trace if " handle " in r.label}
    assert actors == {"informer/Pod/handler", "informer/Pod/handler-2"}
    for held, other in (("informer/Pod/handler", "second"), ("informer/Pod/handler-2", "first")):
        first.clear()
        second.clear()
        clean(run_with(scenario, PostponeActors(held)))
        assert first == [6, 7]
        if other == "second":  # the second handler saw both before the first saw either
            assert second == [(6, 0), (7, 0)]
        else:  # the first ran ahead: the second saw each event after the first had seen both
            assert second == [(6, 2), (7, 2)]


def test_async_handler_blocks_its_listener() -> None:
    """An async handler awaits the API on its listener: that listener waits, the lister and other listeners do not."""
    log: list[tuple[str, str, float]] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", handler_lag=True)

        async def on_add(pod: KubeObject) -> None:
            log.append(("async start", pod.name, world.now))
            await api.create(KubeObject("ConfigMap", "ns", f"seen-{pod.name}"))  # a request from the handler
            await world.sleep(1.0, "slow handler")
            log.append(("async end", pod.name, world.now))

        inf.add_event_handler(on_add)
        inf.add_event_handler(lambda pod: log.append(("sync", pod.name, world.now)))
        inf.start()
        await inf.wait_for_cache_sync()
        await api.create(KubeObject("Pod", "ns", "a"))
        await api.create(KubeObject("Pod", "ns", "b"))
        await world.step("look")
        log.append(("lister", ",".join(inf.lister.list_keys()), world.now))
        world.state["api"] = api

    out = clean(run(scenario))
    assert log == [
        ("async start", "a", 0.0),
        ("sync", "a", 0.0),
        ("lister", "ns/a,ns/b", 0.0),  # the indexer has b while the async listener is still on a
        ("sync", "b", 0.0),  # and so has the other listener
        ("async end", "a", 1.0),
        ("async start", "b", 1.0),  # b waited in the async listener's buffer until a's handler returned
        ("async end", "b", 2.0),
    ]
    # the handler's request is a step of the listener's own actor
    assert [r.label for r in out.trace if r.actor == "informer/Pod/handler" and "ConfigMap" in r.label][:2] == [
        "create ConfigMap ns/seen-a", "response create ConfigMap ns/seen-a"]
    for seed in range(20):  # under any schedule: b's handler never starts before a's returned
        log.clear()
        clean(run(scenario, seed=seed))
        order = [(what, name) for what, name, _t in log if what.startswith("async")]
        assert order == [("async start", "a"), ("async end", "a"), ("async start", "b"), ("async end", "b")]


def test_async_handler_crashes_with_its_process() -> None:
    """A crash while an async handler awaits ends that listener; the restarted process's listener handles it anew."""
    log: list[tuple[str, int, float]] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))

        def build(proc: ControllerProcess) -> Informer:
            inf = Informer(world, api, "Pod", handler_lag=True, process=proc)

            async def on_add(pod: KubeObject) -> None:
                log.append(("start", proc.incarnation, world.now))
                await api.create(KubeObject("ConfigMap", "ns", f"seen-{pod.name}-{proc.incarnation}"))
                log.append(("end", proc.incarnation, world.now))

            inf.add_event_handler(on_add)
            inf.start()
            return inf

        ControllerProcess(world, "ctl", build, crash_faults=True).start()
        await api.create(KubeObject("Pod", "ns", "a"))
        await world.sleep(5.0)

    chooser = FaultChooser("fault: ctl crashes")
    out = clean(run_with(scenario, chooser))
    assert chooser.taken == ["fault: ctl crashes before create ConfigMap ns/seen-a-1"]
    # the first never returned; the canonical run restarts at once (the restart delay is a window)
    assert log == [("start", 1, 0.0), ("start", 2, 0.0), ("end", 2, 0.0)]
    assert "create ConfigMap ns/seen-a-2" in [r.label for r in out.trace if r.actor == "informer/Pod/handler#2"]


def test_async_handler_is_refused_without_a_listener() -> None:
    """Without handler_lag an ``async def`` handler would be called and never awaited: refused when registered."""
    import pytest

    from harness import UsageError

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod")

        async def on_add(obj: KubeObject) -> None:  # pragma: no cover - never registered
            await api.delete("Pod", obj.namespace, obj.name)

        with pytest.raises(UsageError, match=r"the on_add handler .*on_add.* is a coroutine function .* "
                                             r"Pass Informer\(\.\.\., handler_lag=True\)"):
            inf.add_event_handler(on_add)  # type: ignore[arg-type]
        world.state["refused"] = True

    assert clean(run(scenario)).violation is None


def test_late_handler_gets_synthetic_adds() -> None:
    early: list[str] = []
    late: list[tuple[str, int, float]] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        for n in ("b", "a"):
            await api.create(KubeObject("Pod", "ns", n))
        inf = Informer(world, api, "Pod")
        inf.add_event_handler(lambda o: early.append(o.key))
        inf.start()
        await inf.wait_for_cache_sync()
        await world.sleep(1.0)
        inf.add_event_handler(lambda o: late.append((o.key, o.resource_version, world.now)))
        assert late == []  # delivered as steps of their own, not inside the registering call
        await world.sleep(1.0)

    out = clean(run(scenario))
    assert early == ["ns/b", "ns/a"]  # the first handler saw each object once: no synthetic add for it
    assert late == [("ns/b", 6, 1.0), ("ns/a", 7, 1.0)]  # cache order, each once, to the new handler only
    labels = [(r.actor, r.label) for r in out.trace if "synthetic" in r.label]
    assert labels == [
        ("informer/Pod/late-handler-2", "informer/Pod synthetic add ns/b rv=6"),
        ("informer/Pod/late-handler-2", "informer/Pod synthetic add ns/a rv=7"),
    ]


# ------------------------------------------------------------------ items 1-2: reflector and DeltaFIFO
class Recording(FaultChooser):
    """A FaultChooser that also keeps every option it was offered (to read windows)."""

    def __init__(self, *prefixes: str, once: bool = True) -> None:
        super().__init__(*prefixes, once=once)
        self.offered: dict[str, tuple[float, float]] = {}

    def schedule(self, options: Any, now: float, can_wait: bool) -> int:
        for opt in options:
            self.offered.setdefault(f"{opt.label}@{opt.nominal:g}", (opt.nominal, opt.latest))
        return 0


def _writer_model(events: list[tuple[Any, ...]], **informer: Any) -> Any:
    """a exists; while the watch is open, a is deleted and b created then changed."""

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Pod", "ns", "a"))
        inf = Informer(world, api, "Pod", latency=1.0, **informer)
        world.state["inf"] = inf
        inf.add_event_handler(
            lambda o: events.append(("add", o.key, o.resource_version)),
            lambda old, new: events.append(("update", new.key, old.resource_version, new.resource_version)),
            lambda o: events.append(("tombstone", o.key, o.obj.resource_version)
                                    if isinstance(o, DeletedFinalStateUnknown) else ("delete", o.key, o.resource_version)),
        )
        await _sync_then_delete_create_patch(inf, api)
        await world.sleep(10.0)

    return scenario


WATCHED = [("add", "ns/a", 6), ("delete", "ns/a", 7), ("add", "ns/b", 8), ("update", "ns/b", 8, 9)]


def test_watch_end_resumes_without_relist() -> None:
    events: list[tuple[Any, ...]] = []
    out = clean(run(_writer_model(events, watch_ends=True)))
    assert events == WATCHED
    events.clear()
    chooser = FaultChooser("fault: informer/Pod watch ends")
    out = clean(run_with(_writer_model(events, watch_ends=True), chooser))
    assert chooser.taken == [
        "fault: informer/Pod watch ends before DELETED ns/a rv=7 is sent; resumes from the last received rv=6"]
    assert events == WATCHED  # nothing lost, nothing duplicated, no tombstone
    labels = [r.label for r in out.trace]
    assert labels.count("informer/Pod list") == 1 and "informer/Pod re-watch from rv=6" in labels


def test_compaction_gives_410_then_relist_after_backoff() -> None:
    events: list[tuple[Any, ...]] = []
    chooser = Recording("fault: informer/Pod watch ends", "fault: informer/Pod re-watch gets 410 Gone")
    out = clean(run_with(_writer_model(events, watch_ends=True, compactions=True), chooser))
    assert chooser.taken == [
        "fault: informer/Pod watch ends before DELETED ns/a rv=7 is sent; resumes from the last received rv=6",
        "fault: informer/Pod re-watch gets 410 Gone (the server compacted past the last received rv=6)",
    ]
    steps = [(r.label, r.time) for r in out.trace if r.actor == "informer/Pod"]
    rewatch = next(t for label, t in steps if label.startswith("informer/Pod re-watch"))
    relist = [t for label, t in steps if label == "informer/Pod list"][1]
    assert relist == rewatch + 0.8  # client-go's first backoff, at its nominal time
    assert chooser.offered[f"informer/Pod list@{relist:g}"] == (relist, relist + 0.8)  # jitter 1.0: up to 2x
    # the relist's Replace: the missed delete is a tombstone (first, as RealFIFO queues it), b's two states one add
    assert events == [("add", "ns/a", 6), ("tombstone", "ns/a", 6), ("add", "ns/b", 9)]


def test_backoff_matches_client_go() -> None:
    """800 ms doubling to a 30 s cap; after 2 minutes without a failure it starts again at 800 ms."""

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", watch_ends=True, compactions=True)
        inf.start()
        await inf.wait_for_cache_sync()
        # 61 s apart: past each relist and its jitter, but within 2 minutes of the last failure;
        # then 190 s of health before the last one
        for i, pause in enumerate([61.0] * 8 + [190.0, 0.0]):
            await api.create(KubeObject("Pod", "ns", f"p{i}"))  # the watch ends before it, then 410
            await world.sleep(pause)
        await world.sleep(61.0)

    chooser = FaultChooser("fault: informer/Pod watch ends", "fault: informer/Pod re-watch gets 410 Gone", once=False)
    out = clean(run_with(scenario, chooser))
    steps = [(r.label, r.time) for r in out.trace if r.actor == "informer/Pod" and "410 Gone" not in r.label]
    backoffs = []
    for i, (label, t) in enumerate(steps):
        if label.startswith("informer/Pod re-watch"):
            nxt = steps[i + 1]
            assert nxt[0] == "informer/Pod list"
            backoffs.append(round(nxt[1] - t, 6))
    assert backoffs == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0, 0.8]


# ------------------------------------------------------------------ the FIFO: received, or not yet sent
class HoldPopsAfterFault(FaultChooser):
    """Fires the named faults; informer pops run only when nothing else can, and after a fault as late as they may.

    Before the fault the user's writes all land first (a burst the informer has
    received and not yet popped); after it, the pops wait inside their windows
    while the reflector re-watches or relists, as a slow consumer does.
    """

    def __init__(self, informer: str, *prefixes: str) -> None:
        super().__init__(*prefixes)
        self.pop = f"{informer} deliver"

    def schedule(self, options: Any, now: float, can_wait: bool) -> int:
        for i, opt in enumerate(options):
            if not opt.label.startswith(self.pop):
                return int(i)
        return len(options) if self.taken and can_wait else 0


def _burst_model(events: list[tuple[Any, ...]]) -> Any:
    """After sync: q created, b created then its status changed, c created, all at one instant."""

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        inf = Informer(world, api, "Pod", watch_ends=True, watch_drops=True)
        inf.add_event_handler(
            lambda o: events.append(("add", o.key, o.resource_version)),
            lambda old, new: events.append(("update", new.key, old.resource_version, new.resource_version)),
            lambda o: events.append(("tombstone", o.key, o.obj.resource_version)
                                    if isinstance(o, DeletedFinalStateUnknown) else ("delete", o.key, o.resource_version)),
        )
        inf.start()
        await inf.wait_for_cache_sync()
        for name in ("q", "b"):
            await api.create(KubeObject("Pod", "ns", name))  # rv 1, 2
        await api.patch("Pod", "ns", "b", {"status": {"phase": "Running"}})  # rv 3
        await api.create(KubeObject("Pod", "ns", "c"))  # rv 4
        await world.sleep(5.0)

    return scenario


def test_received_deltas_survive_watch_end() -> None:
    """What the reflector received stays in the FIFO and is delivered; only what was not sent is fetched again.

    client-go: ``handleAnyWatch`` puts each event in the FIFO as it reads it and
    records its revision (``setLastSyncResourceVersion``); a closed watch is
    re-opened from that revision (``Reflector.watch``), and nothing empties the
    FIFO, which ``processLoop`` keeps popping meanwhile. Here the watch ends
    after rv 7: q and b (rv 6, 7) were received, b's status change (rv 8) and c
    (rv 9) were not.
    """
    events: list[tuple[Any, ...]] = []
    chooser = HoldPopsAfterFault("informer/Pod", "fault: informer/Pod watch ends before MODIFIED ns/b")
    out = clean(run_with(_burst_model(events), chooser))
    assert chooser.taken == [
        "fault: informer/Pod watch ends before MODIFIED ns/b rv=8 is sent; resumes from the last received rv=7"]
    assert events == [("add", "ns/q", 6), ("add", "ns/b", 7), ("update", "ns/b", 7, 8), ("add", "ns/c", 9)]
    labels = [r.label for r in out.trace if r.actor == "informer/Pod"]
    rewatch = labels.index("informer/Pod re-watch from rv=7")  # not from rv=0: q and b were received
    # b (received) is still queued at the re-watch and delivered after it, once; rv 8 and 9 come from the re-watch
    assert labels.index("informer/Pod deliver ADDED ns/b rv=7") > rewatch
    assert labels.count("informer/Pod deliver ADDED ns/b rv=7") == 1
    assert labels.index("informer/Pod deliver MODIFIED ns/b rv=8") > labels.index("informer/Pod deliver ADDED ns/b rv=7")

    # A watch that fails instead (the watch_drop shorthand: relist after the backoff): the received
    # intermediate state of b (rv 7) is still delivered, before the relist's coalesced rv 8; the
    # stream that was discarded before would have shown b only at rv 8.
    events.clear()
    chooser = HoldPopsAfterFault("informer/Pod", "fault: informer/Pod watch drops before MODIFIED ns/b")
    out = clean(run_with(_burst_model(events), chooser))
    assert chooser.taken == [
        "fault: informer/Pod watch drops before MODIFIED ns/b rv=8 is sent; relists after backoff"]
    assert events == [("add", "ns/q", 6), ("add", "ns/b", 7), ("update", "ns/b", 7, 8), ("add", "ns/c", 9)]
    labels = [r.label for r in out.trace if r.actor == "informer/Pod"]
    assert labels.count("informer/Pod list") == 2
    # the relist's deltas were queued behind b's ADDED and popped as one delta in their turn
    assert labels.index("informer/Pod deliver ADDED ns/b rv=7") > labels.index("informer/Pod list", 1)
    assert "informer/Pod deliver relist of 3 objects rv=9" in labels


def test_replace_tombstones_missing_keys() -> None:
    """``Replace`` tombstones every known key the list lacks, with the newest object the informer holds for it.

    Known: queued in the FIFO (the newest queued object, and no second delete
    for a key whose last queued delta is a delete) or in the indexer and not
    queued (the indexer's object): client-go's ``RealFIFO.Replace``
    (``reconcileReplacement``) and ``DeltaFIFO.Replace`` agree on these keys and
    objects. Listed objects the cache already has at the same resourceVersion
    are syncs: no handler without a resync period hears of them.
    """
    events: list[tuple[Any, ...]] = []
    initial = ("x", "y", "z", "v", "u")

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        for name in initial:
            await api.create(KubeObject("Pod", "ns", name))  # rv 6-10, listed at sync
        inf = Informer(world, api, "Pod", watch_drops=True)
        inf.add_event_handler(
            lambda o: events.append(("add", o.key, o.resource_version)),
            lambda old, new: events.append(("update", new.key, old.resource_version, new.resource_version)),
            lambda o: events.append(("tombstone", o.key, o.obj.resource_version)
                                    if isinstance(o, DeletedFinalStateUnknown) else ("delete", o.key, o.resource_version)),
        )
        inf.start()
        await inf.wait_for_cache_sync()
        # received (in the FIFO when the watch fails): q's create is popped at once, the rest stay queued
        await api.create(KubeObject("Pod", "ns", "q"))  # rv 11
        await api.patch("Pod", "ns", "y", {"status": {"phase": "Running"}})  # rv 12: y queued, newer than the indexer
        await api.create(KubeObject("Pod", "ns", "w"))  # rv 13: w queued, never in the indexer
        await api.delete("Pod", "ns", "z")  # rv 14: z's last queued delta is a delete
        # not yet sent when the watch fails: seen only through the relist
        for name in ("x", "y", "w"):
            await api.delete("Pod", "ns", name)  # rv 15-17
        await api.patch("Pod", "ns", "u", {"status": {"phase": "Running"}})  # rv 18
        await world.sleep(5.0)

    chooser = HoldPopsAfterFault("informer/Pod", "fault: informer/Pod watch drops before DELETED ns/x")
    out = clean(run_with(scenario, chooser))
    assert chooser.taken == [
        "fault: informer/Pod watch drops before DELETED ns/x rv=15 is sent; relists after backoff"]
    assert events[:5] == [("add", f"ns/{n}", rv) for rv, n in enumerate(initial, 6)]
    assert events[5:] == [
        ("add", "ns/q", 11),  # popped in the step that learnt of the failure
        # received deltas, still delivered one by one after the relist was queued behind them
        ("update", "ns/y", 7, 12), ("add", "ns/w", 13), ("delete", "ns/z", 14),
        # Replace: queued keys first, each with its newest queued object: y at rv 12 (the indexer had
        # rv 7 when the list came), w at rv 13 (never in the indexer then); z already ends in a delete
        ("tombstone", "ns/y", 12), ("tombstone", "ns/w", 13),
        # then indexer keys not queued: x with the indexer's object
        ("tombstone", "ns/x", 6),
        # then the list: q and v unchanged (syncs, no handler hears of them), u changed
        ("update", "ns/u", 10, 18),
    ]
    labels = [r.label for r in out.trace if r.actor == "informer/Pod"]
    assert labels.index("informer/Pod list", 1) < labels.index("informer/Pod deliver MODIFIED ns/y rv=12")
