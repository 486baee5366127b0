"""Namespaces as a cluster has them: the ones kube-apiserver makes at start, and the namespace controller.

A cluster starts with ``default`` (``pkg/controlplane/controller/kubernetesservice``'s bootstrap) and
``kube-system``, ``kube-public``, ``kube-node-lease`` (``pkg/controlplane/controller/systemnamespaces``):
:func:`ensure_system_namespaces` creates those absent. A model's apiserver never gets them unasked (its
resourceVersions and traces are pinned by its tests); ``serve`` asks.

A Namespace created through the served API carries ``spec.finalizers: ["kubernetes"]`` and ``status.phase:
Active`` (``pkg/registry/core/namespace/strategy.go`` ``PrepareForCreate``), and its DELETE only marks it
Terminating (``namespace/storage/storage.go`` ``Delete``; the rule is ``Registry._delete``'s). The
:class:`NamespaceController` then does what ``pkg/controller/namespace/deletion/namespaced_resources_deleter.go``
does: it deletes every object in the namespace (background propagation), waits while any remains (an object
with finalizers, a Pod in its grace period), then removes ``kubernetes`` from ``spec.finalizers`` (the
``/finalize`` subresource), and the apiserver removes the Namespace.

:func:`lifecycle_refusal` is the NamespaceLifecycle admission plugin's part that holds here
(``plugin/pkg/admission/namespace/lifecycle/admission.go``): ``default``, ``kube-system`` and ``kube-public`` may
not be deleted, and nothing new is created in a Terminating namespace.

Not modelled: the ``NamespaceDeletionDiscoveryFailure``/``NamespaceContentRemaining`` conditions, and the
admission's 404 for a create in a namespace that does not exist (a served scenario's objects often live in
namespaces it never created as objects).
"""

from __future__ import annotations

from harness.sim import World

from ._apiserver import APIServer
from ._controller import Controller, Result
from ._errors import AlreadyExists, ApiError, NotFound
from ._informer import Informer
from ._objects import KubeObject

#: the namespaces a cluster has from its start
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: ``v1.FinalizerKubernetes``: the spec finalizer the namespace controller owns
NAMESPACE_FINALIZER = "kubernetes"
#: seconds between two looks at a namespace whose content is still going (upstream's estimate is the longest
#: remaining grace period; one second keeps a served namespace's deletion prompt)
CONTENT_RECHECK = 1.0


def new_namespace(name: str) -> KubeObject:
    """A Namespace as ``strategy.go`` ``PrepareForCreate`` leaves it: Active, with the ``kubernetes`` finalizer."""
    return KubeObject("Namespace", "", name, spec={"finalizers": [NAMESPACE_FINALIZER]}, status={"phase": "Active"})


def prepare_namespace(obj: KubeObject) -> None:
    """``PrepareForCreate``: phase Active and ``kubernetes`` among ``spec.finalizers`` (a served create)."""
    finalizers = list(obj.spec.get("finalizers") or [])
    if NAMESPACE_FINALIZER not in finalizers:
        finalizers.append(NAMESPACE_FINALIZER)
    obj.spec = {**obj.spec, "finalizers": finalizers}
    obj.status = {**obj.status, "phase": "Active"}


#: ``lifecycle.immortalNamespaces``: the namespaces a DELETE is refused for
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


def lifecycle_refusal(api: APIServer, verb: str, kind: str, namespace: str, name: str) -> str | None:
    """Why the NamespaceLifecycle admission forbids this request (the reason of its 403), or None."""
    if verb == "delete" and kind == "Namespace" and name in IMMORTAL_NAMESPACES:
        return "this namespace may not be deleted"
    if verb == "create" and namespace:
        ns = api._store.get("Namespace", {}).get(namespace)
        if ns is not None and ns.deletion_timestamp is not None:
            return f"unable to create new content in namespace {namespace} because it is being terminated"
    return None


async def ensure_system_namespaces(api: APIServer) -> None:
    """Create the :data:`SYSTEM_NAMESPACES` that do not exist yet (each a request, as the bootstrap's are)."""
    for name in SYSTEM_NAMESPACES:
        if api.peek("Namespace", "", name) is None:
            try:
                await api.create(new_namespace(name))
            except AlreadyExists:
                pass


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
