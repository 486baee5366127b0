"""The node's kubelet, as far as a pod's deletion goes: the containers stop, then the final DELETE.

A graceful ``DELETE`` of a Pod only marks it (``deletionTimestamp``, a grace
period); the object stays until the kubelet has stopped its containers and
unmounted its volumes and sends the final ``DELETE`` with grace period 0 and
the pod's UID as precondition (``pkg/kubelet/status/status_manager.go``:
``syncPod`` -> ``canBeDeleted`` -> ``Delete`` with ``Preconditions{UID}``).
How long the containers take to exit is the search's choice: ``exits_after``
seconds nominally, any time up to the pod's grace period (a container that
ignores SIGTERM is killed at its end). Every model whose race involves a
terminating pod needs this; one the model writes itself tends to forget the
UID precondition (and deletes a re-created pod of the same name).
"""

from __future__ import annotations

from harness.sim import World

from ._apiserver import APIServer
from ._controller import Controller
from ._errors import Conflict, NotFound
from ._events import watch
from ._informer import Informer
from ._process import ControllerProcess


class Kubelet:
    """The kubelet's pod workers over every Pod (one node for the whole cluster: the race needs no scheduling).

    Its informer is ``<name>/informer/Pod``, its workers ``<name>/pod-workers/worker-<i>``: declare
    ``world.share_memory(name)`` when nothing else shares its memory.
    """

    def __init__(
        self, world: World, api: APIServer, *, exits_after: float = 3.0, name: str = "kubelet",
        process: ControllerProcess | None = None,
    ) -> None:
        self._world, self._api, self.exits_after = world, api, exits_after
        self.pods = Informer(world, api, "Pod", name=f"{name}/informer/Pod", process=process)
        self.controller: Controller[str] = Controller(world, f"{name}/pod-workers", self._sync_pod, process=process)
        watch(self.pods, self.controller.queue)

    def start(self) -> Kubelet:
        """Start its informer and pod workers; returns itself (``Kubelet(world, api).start()``)."""
        self.pods.start()
        self.controller.start()
        return self

    async def _sync_pod(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        pod = self.pods.lister.try_get(namespace, name)
        if pod is None or pod.deletion_timestamp is None or pod.deletion_grace_period_seconds == 0:
            return
        grace = pod.deletion_grace_period_seconds or 0
        await self._world.sleep(self.exits_after, f"kubelet: {pod.key} stopped and its volumes unmounted",
                                window=max(0.0, grace - self.exits_after))
        try:
            await self._api.confirm_delete(namespace, name, uid=pod.uid)
        except (NotFound, Conflict):  # gone already, or the name is another pod's now
            pass
