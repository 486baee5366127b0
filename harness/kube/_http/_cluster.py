"""What runs beside a served apiserver, as in a cluster: the namespace controller and the garbage collector over
every served kind (``kube-controller-manager``'s, which a model starts itself if it wants).

The cluster's namespaces (``default``, ``kube-system``, ...) are every apiserver's own from its start
(``_lifecycle.py``). ``serve`` calls :func:`start_cluster`; a model's world does only if its scenario asks
(``await harness.kube.start_cluster(api)``, what a scenario for a real operator usually wants: a deleted
Namespace is then emptied and removed, and an owner's children go with it), so a model's runs stay as they
were. The garbage collector is :class:`~harness.kube.GarbageCollector`,
one over the built-in kinds, told of each CustomResourceDefinition's kind as it is established (upstream's
graph builder re-reads discovery for the same reason: ``garbagecollector.go`` ``Sync``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._apiserver import APIServer
from .._gc import GarbageCollector
from .._informer import Informer
from .._namespaces import NamespaceController
from .._objects import KubeObject
from ._handler import _handler_of
from ._resources import BUILTIN_RESOURCES, CRD_KIND

if TYPE_CHECKING:
    from ._handler import APIHandler

#: kinds the collector leaves alone: Events are many and never own anything here
_NOT_COLLECTED = frozenset({"Event"})


async def start_cluster(api: APIServer | APIHandler) -> GarbageCollector:
    """What ``kube-controller-manager`` runs beside the apiserver: the namespace controller (a deleted Namespace
    is emptied, then removed; without it, it stays Terminating, as in envtest) and the garbage collector over
    every served kind. The namespaces themselves (``default``, ``kube-system``, ...) are the apiserver's from
    its start."""
    handler = api if not isinstance(api, APIServer) else _handler_of(api)
    api, world = handler.api, handler.world
    namespaces = NamespaceController(world, api)
    namespaces.start()
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
