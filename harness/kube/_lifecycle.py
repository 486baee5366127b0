"""Namespaces as kube-apiserver keeps them: the ones it starts with, how a Namespace is created, and the
NamespaceLifecycle admission that refuses writes into a namespace that is missing or going.

Every :class:`~harness.kube.APIServer` starts with the namespaces kube-apiserver's bootstrap makes
(``pkg/controlplane/controller/systemnamespaces/system_namespaces_controller.go``, whose ``sync`` creates each of
the list kube-apiserver gives it that is missing: ``kube-system``, ``kube-public``, ``kube-node-lease``,
``default``, in that order), stored at construction: no request and no step, so a model's steps are what they
were; their revisions (1 to 4) and uids come before any object of the run, as a cluster's own objects do.

A Namespace, created however, is what ``pkg/registry/core/namespace/strategy.go`` ``PrepareForCreate`` and
``pkg/apis/core/v1/defaults.go`` ``SetDefaults_Namespace`` make of it (:func:`prepare_namespace`): phase
Active, ``kubernetes`` in ``spec.finalizers`` (the namespace controller's, ``harness.kube.start_cluster``), the
label ``kubernetes.io/metadata.name``. Its DELETE only marks it Terminating; without a namespace controller
(envtest, a model that starts none) it stays so, as it does upstream.

:func:`lifecycle_refusal` is ``k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``
``Lifecycle.Admit`` (which handles Create, Update and Delete):
``default``, ``kube-system`` and ``kube-public`` may not be deleted (403); a create or an update of a namespaced
object in a namespace that does not exist is 404 ``namespaces "x" not found`` (the plugin's live GET of the
namespace, returned as is); a create in a Terminating namespace is 403 with the ``NamespaceTerminating`` cause.
Deletes of namespaced objects, and every write of a cluster-scoped one, pass.
"""

from __future__ import annotations

import re
from typing import Any

from ._errors import ApiError, Forbidden, NotFound
from ._objects import KubeObject

#: The namespaces a cluster has from its start, in the order the bootstrap creates them
#: (``systemnamespaces`` ``sync``: ``metav1.NamespaceSystem``, ``NamespacePublic``, ``NamespaceNodeLease``,
#: ``NamespaceDefault``)
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "default")
#: ``v1.FinalizerKubernetes``: the spec finalizer the namespace controller owns
NAMESPACE_FINALIZER = "kubernetes"
#: ``v1.LabelMetadataName``: the label every Namespace carries with its own name
METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
#: ``lifecycle.immortalNamespaces`` (kube-apiserver's default): the namespaces a DELETE is refused for
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def invalid_namespace_name(name: str) -> str:
    """Why ``name`` cannot name a Namespace (``ValidateNamespaceName``: a DNS-1123 label), or ""."""
    if not isinstance(name, str) or not name:
        return "is not a name"
    if len(name) > 63:
        return "is longer than 63 characters"
    if not _DNS1123_LABEL.fullmatch(name):
        return "is not a DNS-1123 label"
    return ""


def new_namespace(name: str) -> KubeObject:
    """A Namespace as the apiserver stores it once created (:func:`prepare_namespace`)."""
    ns = KubeObject("Namespace", "", name)
    prepare_namespace(ns)
    return ns


def prepare_namespace(obj: KubeObject) -> None:
    """``PrepareForCreate`` and ``SetDefaults_Namespace``: phase Active, ``kubernetes`` among ``spec.finalizers``,
    the ``kubernetes.io/metadata.name`` label (set to the name whatever the request said)."""
    finalizers = list(obj.spec.get("finalizers") or [])
    if NAMESPACE_FINALIZER not in finalizers:
        finalizers.append(NAMESPACE_FINALIZER)
    obj.spec = {**obj.spec, "finalizers": finalizers}
    obj.status = {**obj.status, "phase": "Active"}
    obj.labels = {**obj.labels, METADATA_NAME_LABEL: obj.name}


def lifecycle_refusal(namespaces: dict[str, KubeObject], verb: str, kind: str, namespace: str,
                      name: str) -> ApiError | None:
    """What ``Lifecycle.Admit`` refuses this write with, or None. ``verb`` is ``create``, ``update`` (every
    write to an existing object: PUT, PATCH, apply, status) or ``delete``; ``namespaces`` the stored ones."""
    if kind == "Namespace":
        if verb == "delete" and name in IMMORTAL_NAMESPACES:
            return Forbidden.of(kind, name, "this namespace may not be deleted")
        return None  # every other write of a Namespace passes
    if not namespace or verb == "delete":
        return None  # cluster-scoped objects, and deletes of namespaced ones, always pass
    ns = namespaces.get(namespace)
    if ns is None:
        err = NotFound.of("Namespace", namespace)
        err.details = {"name": namespace, "kind": "namespaces"}  # type: ignore[attr-defined]  # the GET's own
        return err
    if verb == "create" and ns.status.get("phase") == "Terminating":
        refused = Forbidden.of(kind, name, f"unable to create new content in namespace {namespace} because it is "
                                           "being terminated")
        cause: dict[str, Any] = {"reason": "NamespaceTerminating", "message": f"namespace {namespace} is being "
                                 "terminated", "field": "metadata.namespace"}
        refused.causes = [cause]  # type: ignore[attr-defined]  # status_body reports them in details.causes
        return refused
    return None
