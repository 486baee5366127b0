"""What runs beside a served apiserver, as in a cluster: the system namespaces, the namespace controller and the
garbage collector over every served kind (``kube-controller-manager``'s, which a model starts itself if it wants).

``serve`` calls :func:`start_cluster`; a model's world never does, so its runs (and their pinned
resourceVersions and traces) stay as they were. The garbage collector is :class:`~harness.kube.GarbageCollector`,
one over the built-in kinds, told of each CustomResourceDefinition's kind as it is established (upstream's
graph builder re-reads discovery for the same reason: ``garbagecollector.go`` ``Sync``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._gc import GarbageCollector
from .._informer import Informer
from .._namespaces import NamespaceController, ensure_system_namespaces
from .._objects import KubeObject
from ._resources import BUILTIN_RESOURCES, CRD_KIND

if TYPE_CHECKING:
    from ._handler import APIHandler

#: kinds the collector leaves alone: Events are many and never own anything here
_NOT_COLLECTED = frozenset({"Event"})


async def start_cluster(handler: APIHandler) -> GarbageCollector:
    """Create the system namespaces, then start the namespace controller and the garbage collector; served
    Namespaces get the ``kubernetes`` finalizer from now on (the controller is there to remove it)."""
    api, world = handler.api, handler.world
    await ensure_system_namespaces(api)
    namespaces = NamespaceController(world, api)
    namespaces.start()
    handler.namespace_lifecycle = True
    gc = GarbageCollector(world, api, [r.kind for r in BUILTIN_RESOURCES if r.kind not in _NOT_COLLECTED])
    gc.start()
    crds = Informer(world, api, CRD_KIND, name="garbagecollector/informer/crds")

    def established(crd: KubeObject) -> None:
        kind = (crd.spec.get("names") or {}).get("kind")
        if kind:
            gc.collect_kind(kind)

    crds.add_event_handler(established, lambda _old, crd: established(crd))
    crds.start()
    return gc
