"""The namespace controller: what ``kube-controller-manager`` does with a Namespace being deleted.

The namespaces a cluster starts with, how a Namespace is created and the NamespaceLifecycle admission are the
apiserver's own (``_lifecycle.py``): every :class:`~harness.kube.APIServer` has them. A Namespace's DELETE only
marks it Terminating (``namespace/storage/storage.go`` ``Delete``; the rule is ``Registry._delete``'s). The
:class:`NamespaceController` (started by ``start_cluster``) then does what
``pkg/controller/namespace/deletion/namespaced_resources_deleter.go`` does: it deletes every object in the
namespace (background propagation), waits while any remains (an object with finalizers, a Pod in its grace
period), then removes ``kubernetes`` from ``spec.finalizers`` (the ``/finalize`` subresource), and the apiserver
removes the Namespace.

Not modelled: the ``NamespaceDeletionDiscoveryFailure``/``NamespaceContentRemaining`` conditions.
"""

from __future__ import annotations

from harness.sim import World

from ._apiserver import APIServer
from ._controller import Controller, Result
from ._errors import ApiError, NotFound
from ._informer import Informer
from ._lifecycle import NAMESPACE_FINALIZER
from ._objects import KubeObject

#: seconds between two looks at a namespace whose content is still going (upstream's estimate is the longest
#: remaining grace period; one second keeps a served namespace's deletion prompt)
CONTENT_RECHECK = 1.0


class NamespaceController:
    """``NamespaceController``: empties a Terminating namespace, then finalizes it."""

    def __init__(self, world: World, api: APIServer, *, name: str = "namespace-controller") -> None:
        self._api = api
        self.informer = Informer(world, api, "Namespace", name=f"{name}/informer/Namespace")
        self.controller: Controller[str] = Controller(world, name, self._sync, error_types=(ApiError,))
        self.informer.add_event_handler(lambda ns: self.controller.enqueue(ns.name),
                                        lambda _old, ns: self.controller.enqueue(ns.name))

    def start(self) -> None:
        self.informer.start()
        self.controller.start()

    async def _sync(self, name: str) -> Result | None:
        """``syncNamespaceFromKey`` then ``deleter.Delete``."""
        api = self._api
        try:
            ns = await api.get("Namespace", "", name)
        except NotFound:
            return None
        if ns.deletion_timestamp is None or NAMESPACE_FINALIZER not in (ns.spec.get("finalizers") or []):
            return None
        remaining = 0
        for kind in list(api._store):  # every kind the apiserver holds objects of (the discovery walk upstream)
            if kind == "Namespace":
                continue
            for obj in await api.list(kind, name):
                if obj.deletion_timestamp is None:
                    try:
                        await api.delete(kind, name, obj.name, uid=obj.uid, propagation="Background")
                    except NotFound:
                        continue
                if api.peek(kind, name, obj.name) is not None:
                    remaining += 1  # finalizers or a grace period hold it
        if remaining:
            return Result(requeue_after=CONTENT_RECHECK)  # look again once what is left had time to go

        def finalize(cur: KubeObject) -> KubeObject:
            rest = [f for f in cur.spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER]
            cur.spec = {**cur.spec, "finalizers": rest}
            return cur

        await api._rewrite("finalize", "Namespace", "", name, finalize)
        return None
