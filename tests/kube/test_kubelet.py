"""The kubelet component: a graceful delete only marks a pod; the kubelet's final DELETE (UID precondition) removes it
once its containers stop, at a time the search chooses within the grace period."""

from __future__ import annotations

from typing import Any

from kube_support import clean, failing_seeds, run

from harness.kube import APIServer, Kubelet, KubeObject, NotFound
from harness.sim import World


async def _delete_and_recreate(world: World, seen: dict[str, Any]) -> None:
    api = APIServer(world, namespaces=("ns",))
    Kubelet(world, api, exits_after=1.0).start()
    await api.create(KubeObject("Pod", "ns", "p", spec={"nodeName": "node-1", "terminationGracePeriodSeconds": 10}))
    await world.sleep(0.5, "user looks")
    await api.delete("Pod", "ns", "p")
    marked = api.peek("Pod", "ns", "p")
    seen["marked"] = marked is not None and marked.deletion_timestamp is not None
    start = world.now
    while api.peek("Pod", "ns", "p") is not None:
        await world.sleep(0.1, "user waits until the pod is gone")
    seen["gone_after"] = world.now - start


def test_the_kubelet_removes_a_terminating_pod_within_its_grace_period() -> None:
    seen: dict[str, Any] = {}
    clean(run(lambda w: _delete_and_recreate(w, seen)))
    assert seen["marked"]  # the graceful DELETE only marked it
    assert 1.0 <= seen["gone_after"] <= 1.3, seen  # canonical: the containers exit after exits_after
    # the exit time is a choice within the grace period: some seeds take longer, none past the grace period
    late = []
    for seed in range(10):
        s: dict[str, Any] = {}
        clean(run(lambda w: _delete_and_recreate(w, s), seed=seed))  # noqa: B023 - run at once
        late.append(s["gone_after"])
    assert max(late) > 1.3 and max(late) <= 10.3, late


async def _force_and_recreate(world: World) -> None:
    """The user deletes gracefully, then force-deletes and re-creates the name while the kubelet's containers are
    still stopping: the kubelet's final DELETE carries the old pod's UID and must not remove the new pod."""
    api = APIServer(world, namespaces=("ns",))
    Kubelet(world, api, exits_after=1.0).start()
    spec = {"nodeName": "node-1", "terminationGracePeriodSeconds": 10}
    await api.create(KubeObject("Pod", "ns", "p", spec=dict(spec)))
    await world.sleep(0.5, "user looks")
    await api.delete("Pod", "ns", "p")
    await world.sleep(0.2, "user loses patience")
    try:
        await api.delete("Pod", "ns", "p", grace_period_seconds=0)
    except NotFound:  # the kubelet was quicker (its response may come late)
        pass
    new = await api.create(KubeObject("Pod", "ns", "p", spec=dict(spec)))
    await world.sleep(20.0, "user watches the new pod")
    live = api.peek("Pod", "ns", "p")
    world.invariant(lambda: live is not None and live.uid == new.uid, "the re-created pod stays")


def test_the_kubelet_never_deletes_a_recreated_pod_of_the_same_name() -> None:
    assert failing_seeds(_force_and_recreate, 10) == []
