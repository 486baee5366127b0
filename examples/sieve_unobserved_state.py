"""Sieve's unobserved state: a watch drop hides a DELETED event, and a handler ignores the relist's tombstone.

A quota controller counts a namespace's Pods in memory from its informer's events. When the watch drops
and the reflector relists, a Pod deleted meanwhile comes back to ``OnDelete`` as a
``DeletedFinalStateUnknown`` tombstone, not as a Pod (client-go, tools/cache/controller.go: "OnDelete will
get the final state of the item if it is known, otherwise it will get an object of type
DeletedFinalStateUnknown"). A handler that only handles Pods never counts that delete: the controller
believes a Pod that is gone still uses quota (Sieve, Sun et al., OSDI 2022: unobserved states). Fixed: the
handler unwraps the tombstone. Where the watch drops is the search's choice.
"""

from __future__ import annotations

import harness as h
from harness.kube import APIServer, DeletedFinalStateUnknown, Informer, KubeObject

NS = "team-a"


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Two Pods created, one deleted; the quota controller's count must end at the Pods that exist."""
    api = APIServer(world, namespaces=(NS,))  # the team's namespace exists before the run
    pods = Informer(world, api, "Pod", name="quota/informer/Pod", watch_drops=True)
    used: set[str] = set()

    def on_delete(obj: KubeObject | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            if not fixed:
                return  # the bug: "not a Pod", so not counted
            obj = obj.obj
        used.discard(obj.key)

    pods.add_event_handler(lambda p: used.add(p.key), None, on_delete)
    pods.start()
    world.at_end(lambda: used == {p.key for p in api.peek_all("Pod")} or
                 f"quota counts {sorted(used)}, but the Pods are {sorted(p.key for p in api.peek_all('Pod'))}",
                 "the quota counts exactly the Pods that exist")
    await pods.wait_for_cache_sync()
    for name in ("web-1", "web-2"):
        await api.create(KubeObject("Pod", NS, name))
    await world.sleep(1.0, "user waits")
    await api.delete("Pod", NS, "web-1")
    await world.sleep(10.0, "user waits")
