"""What the HTTP API serves and how a path names it: resources, discovery entries, CRDs and REST paths.

:class:`Resource` is one served resource (``metav1.APIResource``): the
built-ins, and those each CustomResourceDefinition adds while it exists
(:func:`_accept_crd` checks and establishes a CRD as its controllers would).
:func:`_split` reads a request path as ``RequestInfoFactory`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._errors import Invalid
from .._objects import KubeObject, copy_json


# ------------------------------------------------------------------------------------------- resources
@dataclass(frozen=True)
class Resource:
    """One served resource: what discovery lists (``metav1.APIResource``) and what a path names."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    status: bool = False  # has a status subresource
    builtin: bool = True  # served by kube-apiserver itself (strategic merge patch applies)
    review: bool = False  # create-only and never stored: a review answered at once (SelfSubjectAccessReview)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def discovery(self) -> list[dict[str, Any]]:
        verbs = ["create"] if self.review else ["create", "delete", "get", "list", "patch", "update", "watch"]
        out: list[dict[str, Any]] = [{"name": self.plural, "singularName": self.singular,
                                      "namespaced": self.namespaced, "kind": self.kind, "verbs": verbs}]
        if self.short_names:
            out[0]["shortNames"] = list(self.short_names)
        if self.status:
            out.append({"name": f"{self.plural}/status", "singularName": "", "namespaced": self.namespaced,
                        "kind": self.kind, "verbs": ["get", "patch", "update"]})
        return out


def _builtin(group: str, version: str, *specs: str) -> list[Resource]:
    """``"plural Kind [cluster] [status] [short,names]"`` per resource."""
    out = []
    for spec in specs:
        plural, kind, *flags = spec.split()
        shorts = tuple(f for flag in flags if flag not in ("cluster", "status") for f in flag.split(","))
        out.append(Resource(group, version, plural, kind, "cluster" not in flags, shorts, "status" in flags))
    return out


#: The built-in resources served (a subset of kube-apiserver's, with their short names and status subresources).
BUILTIN_RESOURCES: tuple[Resource, ...] = (
    *_builtin("", "v1", "pods Pod status po", "services Service status svc", "configmaps ConfigMap cm",
              "secrets Secret", "nodes Node cluster status no", "namespaces Namespace cluster status ns",
              "events Event ev", "endpoints Endpoints ep", "persistentvolumes PersistentVolume cluster status pv",
              "persistentvolumeclaims PersistentVolumeClaim status pvc", "serviceaccounts ServiceAccount sa",
              "resourcequotas ResourceQuota status quota"),
    *_builtin("apps", "v1", "deployments Deployment status deploy", "replicasets ReplicaSet status rs",
              "statefulsets StatefulSet status sts", "daemonsets DaemonSet status ds",
              "controllerrevisions ControllerRevision"),
    *_builtin("batch", "v1", "jobs Job status", "cronjobs CronJob status cj"),
    *_builtin("coordination.k8s.io", "v1", "leases Lease"),
    # the same Events as core/v1's, in the newer shape EventRecorders of client-go's tools/events write (_codec.py)
    *_builtin("events.k8s.io", "v1", "events Event ev"),
    *_builtin("scheduling.k8s.io", "v1", "priorityclasses PriorityClass cluster pc"),
    *_builtin("policy", "v1", "poddisruptionbudgets PodDisruptionBudget status pdb"),
    *_builtin("rbac.authorization.k8s.io", "v1", "roles Role", "rolebindings RoleBinding",
              "clusterroles ClusterRole cluster", "clusterrolebindings ClusterRoleBinding cluster"),
    *_builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions CustomResourceDefinition cluster status crd,crds"),
    # the admission webhooks the served API calls (_webhooks.py)
    *_builtin("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations MutatingWebhookConfiguration cluster",
              "validatingwebhookconfigurations ValidatingWebhookConfiguration cluster"),
)
#: the reviews kube-apiserver answers without storing anything (pkg/registry/authorization/selfsubject*review):
#: this apiserver has no authorization, so everything is allowed, which is what `kubectl auth can-i` asks
REVIEW_RESOURCES: tuple[Resource, ...] = tuple(
    Resource("authorization.k8s.io", "v1", plural, kind, namespaced=False, review=True)
    for plural, kind in (("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
                         ("selfsubjectrulesreviews", "SelfSubjectRulesReview"))
)
CRD_KIND = "CustomResourceDefinition"


def crd_resources(crd: KubeObject) -> list[Resource]:
    """The resources a CRD serves: one per served version (``spec.versions[].served``)."""
    spec = crd.spec
    names = spec.get("names") or {}
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served", True):
            continue
        out.append(Resource(
            spec.get("group", ""), v.get("name", ""), names.get("plural", ""), names.get("kind", ""),
            spec.get("scope", "Namespaced") == "Namespaced", tuple(names.get("shortNames") or ()),
            "status" in (v.get("subresources") or spec.get("subresources") or {}), builtin=False,
        ))
    return out

@dataclass
class _Path:
    group: str
    version: str
    namespace: str = ""
    plural: str = ""
    name: str = ""
    subresource: str = ""
    query: dict[str, str] = field(default_factory=dict)
    dry: bool = False  # dryRun=All: the answer computed, nothing written
    agent: str = ""  # the User-Agent: an Update's default field manager


def _split(path: str) -> _Path | str:
    """``/api/v1/...`` or ``/apis/{group}/{version}/...`` into its parts (``RequestInfoFactory.NewRequestInfo``);
    a discovery path comes back as the string naming it."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        return "root"
    if parts[0] == "api":
        if len(parts) == 1:
            return "api"
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) <= 2:
            return "apis" if len(parts) == 1 else "group:" + parts[1]
        group, version, rest = parts[1], parts[2], parts[3:]
    elif parts[0] == "version":
        return "version"
    else:
        return "unknown"
    if not rest:
        return f"resources:{group}/{version}"
    p = _Path(group, version)
    # namespaces/{ns}/{resource}/...; namespaces/{name}[/status|finalize] is the Namespace itself
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        p.namespace, rest = rest[1], rest[2:]
    p.plural = rest[0]
    if len(rest) > 1:
        p.name = rest[1]
    if len(rest) > 2:
        p.subresource = rest[2]
    if len(rest) > 3:
        return "unknown"
    return p

def _accept_crd(crd: KubeObject) -> None:
    """Check the names a CRD asks for and mark it Established (the CRD controllers' work, done at once here)."""
    spec = crd.spec
    names = spec.get("names") or {}
    missing = [f for f, v in (("spec.group", spec.get("group")), ("spec.names.plural", names.get("plural")),
                              ("spec.names.kind", names.get("kind")), ("spec.versions", spec.get("versions")))
               if not v]
    if missing:
        raise Invalid(f'CustomResourceDefinition.apiextensions.k8s.io "{crd.name}" is invalid: '
                      + ", ".join(f"{m}: Required value" for m in missing))
    if crd.name != f"{names['plural']}.{spec['group']}":
        raise Invalid(f'CustomResourceDefinition.apiextensions.k8s.io "{crd.name}" is invalid: metadata.name: '
                      f"Invalid value: \"{crd.name}\": must be spec.names.plural+\".\"+spec.group")
    crd.status = {"acceptedNames": copy_json(names), "storedVersions": [
        v["name"] for v in spec["versions"] if v.get("storage")], "conditions": [
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted"}]}
