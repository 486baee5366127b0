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
    CreateEvent,
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


def _relist_model(queue: Recorder, deletes: list[DeleteEvent]) -> Any:
    """b is created and its spec changed while the Pod watch may be down; a is deleted meanwhile."""

    def record_delete(e: DeleteEvent) -> bool:
        deletes.append(e)
        return True

    async def scenario(world: World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("Pod", "ns", "a"))
        inf = Informer(world, api, "Pod", latency=1.0, watch_drops=True)
        # a controller that ignores creates (it creates these pods itself) and reconciles on changes
        watch(inf, queue, None, Funcs(create_func=lambda e: False, delete_func=record_delete))
        inf.start()
        await inf.wait_for_cache_sync()
        await api.delete("Pod", "ns", "a")
        b = await api.create(KubeObject("Pod", "ns", "b"))
        await api.patch("Pod", "ns", b.name, {"spec": {"v": 2}})
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
    assert chooser.taken == ["fault: informer/Pod watch drops before DELETED ns/a rv=2"]
    # relisted: create and update of b coalesce into one add, which the create predicate drops;
    # the missed delete comes as a tombstone, unwrapped, with delete_state_unknown
    assert queue.added == ["ns/a"]
    assert [(d.object.key, d.delete_state_unknown, d.object.resource_version) for d in deletes] == [("ns/a", True, 1)]


def test_generation_changed_predicate() -> None:
    queue = Recorder()

    async def scenario(world: World) -> None:
        api = APIServer(world)
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


# ------------------------------------------------------------------ item 3 (part): handlers
def test_async_handler_is_refused_at_registration() -> None:
    """An ``async def`` handler would be called and never awaited: refused when registered, not warned at run time."""
    import pytest

    from harness import UsageError

    async def scenario(world: World) -> None:
        api = APIServer(world)
        inf = Informer(world, api, "Pod")

        async def on_add(obj: KubeObject) -> None:  # pragma: no cover - never registered
            await api.delete("Pod", obj.namespace, obj.name)

        with pytest.raises(UsageError, match=r"the on_add handler .*on_add.* is a coroutine function .* Make it a plain"):
            inf.add_event_handler(on_add)  # type: ignore[arg-type]
        world.state["refused"] = True

    clean(run(scenario))


def test_late_handler_gets_synthetic_adds() -> None:
    early: list[str] = []
    late: list[tuple[str, int, float]] = []

    async def scenario(world: World) -> None:
        api = APIServer(world)
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
    assert late == [("ns/b", 1, 1.0), ("ns/a", 2, 1.0)]  # cache order, each once, to the new handler only
    labels = [(r.actor, r.label) for r in out.trace if "synthetic" in r.label]
    assert labels == [
        ("informer/Pod/late-handler-2", "informer/Pod synthetic add ns/b rv=1"),
        ("informer/Pod/late-handler-2", "informer/Pod synthetic add ns/a rv=2"),
    ]
