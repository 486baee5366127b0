"""The Kubernetes HTTP API over :class:`~harness.kube.APIServer`: what a real client (lightkube, kubectl) talks to.

One handler, :class:`APIHandler`, maps REST paths, verbs, query parameters,
patch types and ``Status`` error bodies onto the simulated apiserver, following
``k8s.io/apiserver/pkg/endpoints``: ``handlers/get.go`` (get, list, watch),
``handlers/create.go``, ``handlers/update.go``, ``handlers/patch.go``,
``handlers/delete.go``, ``handlers/watch.go`` (the JSON watch stream), and
``discovery`` (``/api``, ``/apis``, ``/api/v1``, ``/apis/{group}/{version}``).
It is served two ways: :class:`Transport`, an httpx transport that runs a client
inside a world (``api.transport(client="op")``), and ``python -m harness serve``
(a loopback TCP port on the real clock).

Every request reaches the apiserver through its public verbs, so an HTTP
client's GET is the same single yield point as a model's ``api.get`` and a
write is the same request point (commit) and response point (where an
ambiguous write loses the response) with the same labels ("create ConfigMap
default/x", "response create ConfigMap default/x"). A PATCH is the apiserver's
update-with-a-transform (:meth:`APIServer._rewrite`, ``rest.UpdatedObjectInfo``).

A watch connection (:class:`_Watch`) is the server end of an informer's watch
(``_informer.py``): the events the server commits are in flight at once, in
revision order, each delivered (written to the connection) as a scheduled step
of the stream's own actor ``"<client>/watch/<Kind>"`` inside
``[commit + latency, commit + latency + max_lag]``, and each carries the
informer's own reception fault points (:func:`~harness.kube._informer.watch_break`):
``watch_end`` closes the stream cleanly before the event is sent (a client
re-watches from the last revision it read), ``watch_drop`` breaks the
connection (the client's read raises ``httpx.ReadError``). A watch from a
compacted revision (the ``compaction`` fault at a watch request with a
``resourceVersion``) is answered, as the watch cache answers it, with HTTP 200
and one ``ERROR`` event carrying a 410 ``Expired`` Status. A LIST or a watch at
``resourceVersion=0`` may be served by a lagging watch cache (``stale_read``).
The client reads what was delivered in its own step, so "the bytes arrived" and
"the client acted on them" are two points, as they are for a real process.

Objects: a body's every top-level field round-trips: ``metadata``, ``spec`` and
``status`` map onto :class:`KubeObject`, every other field (``data``, ``type``,
``rules``...) and the metadata fields it has no slot for (``generateName``) are
kept in ``KubeObject.extra``. Lists are served in etcd's key order (namespace,
then name). Rejected: storing bodies as raw JSON beside the model's objects,
which would give models and HTTP clients two views of one object.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from ._apiserver import ADDED, DELETED, MODIFIED, APIServer, WatchEvent, merge_patch
from ._errors import ApiError, Gone, Invalid, NotFound
from ._informer import DEFAULT_MAX_LAG, note_lost, watch_break
from ._objects import KubeObject, OwnerReference, copy_json, object_ref

if TYPE_CHECKING:
    from harness.sim import Queue as WorldQueue
    from harness.sim import TimerHandle, World

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


# ---------------------------------------------------------------------------------------------- errors
class BadRequest(ApiError):
    reason = "BadRequest"
    code = 400


class MethodNotSupported(ApiError):
    reason = "MethodNotAllowed"
    code = 405


class UnsupportedMediaType(ApiError):
    """415: ``negotiation.NewUnsupportedMediaTypeError`` (a patch type the resource does not take)."""

    reason = "UnsupportedMediaType"
    code = 415

    @classmethod
    def of(cls, accepted: Iterable[str]) -> UnsupportedMediaType:
        return cls("the body of the request was in an unknown format - accepted media types include: "
                   + ", ".join(accepted))


def status_body(err: ApiError, res: Resource | None = None, name: str = "") -> dict[str, Any]:
    """``metav1.Status`` as ``apimachinery/pkg/api/errors`` builds it: reason, code, message and details."""
    out: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                           "message": err.message, "reason": err.reason}
    if res is not None:
        details: dict[str, Any] = {"name": name} if name else {}
        if res.group:
            details["group"] = res.group
        details["kind"] = res.plural
        out["details"] = details
    out["code"] = err.code
    return out


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

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    def discovery(self) -> list[dict[str, Any]]:
        verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
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
    *_builtin("scheduling.k8s.io", "v1", "priorityclasses PriorityClass cluster pc"),
    *_builtin("policy", "v1", "poddisruptionbudgets PodDisruptionBudget status pdb"),
    *_builtin("rbac.authorization.k8s.io", "v1", "roles Role", "rolebindings RoleBinding",
              "clusterroles ClusterRole cluster", "clusterrolebindings ClusterRoleBinding cluster"),
    *_builtin("apiextensions.k8s.io", "v1", "customresourcedefinitions CustomResourceDefinition cluster status crd,crds"),
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


# ------------------------------------------------------------------------------------- label selectors
@dataclass(frozen=True)
class Requirement:
    """``labels.Requirement``: a key, an operator (``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!``) and values."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """``Requirement.Matches`` (apimachinery ``labels/selector.go``): ``!=`` and ``notin`` hold for absent keys."""
        has = self.key in labels
        if self.op in ("=", "==", "in"):
            return has and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not has or labels[self.key] not in self.values
        if self.op == "exists":
            return has
        return not has  # "!": DoesNotExist


_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|\(|\)|,|!)|(?P<word>[^\s,()=!]+))")
_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """``labels.Parse``: comma-separated requirements, equality-based and set-based.

    ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``
    (exists), ``!a`` (does not exist). Keys and values are validated as
    upstream validates them (``validateLabelKey``, ``validateLabelValue``);
    a bad selector is a :class:`BadRequest`, as the list handler answers.
    """
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise BadRequest(f"unable to parse requirement: invalid label selector {text!r}")
        tokens.append(m["op"] or m["word"])
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    out: list[Requirement] = []
    i = 0

    def bad(why: str) -> BadRequest:
        return BadRequest(f"unable to parse requirement: {why}")

    def key_at(j: int) -> str:
        if j >= len(tokens) or not _KEY.match(tokens[j]) or tokens[j] in ("in", "notin"):
            got = repr(tokens[j]) if j < len(tokens) else "'end of string'"
            raise bad(f"found {got}, expected: identifier")
        return tokens[j]

    def value(v: str) -> str:
        if not _VALUE.match(v) or len(v) > 63:
            raise bad(f"values[0]: Invalid value: {v!r}: a valid label must be an empty string or consist of "
                      "alphanumeric characters, '-', '_' or '.'")
        return v

    while i < len(tokens):
        if tokens[i] == "!":
            out.append(Requirement(key_at(i + 1), "!"))
            i += 2
        else:
            key = key_at(i)
            op = tokens[i + 1] if i + 1 < len(tokens) else ","
            if op == ",":
                out.append(Requirement(key, "exists"))
                i += 1
            elif op in ("=", "==", "!="):
                nxt = tokens[i + 2] if i + 2 < len(tokens) else ","
                if nxt == ",":  # "a=" selects the empty value
                    out.append(Requirement(key, op, ("",)))
                    i += 2
                else:
                    out.append(Requirement(key, op, (value(nxt),)))
                    i += 3
            elif op in ("in", "notin"):
                if i + 2 >= len(tokens) or tokens[i + 2] != "(":
                    got = tokens[i + 2] if i + 2 < len(tokens) else "end of string"
                    raise bad(f"found {got!r}, expected: '('")
                j, values = i + 3, []
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        values.append(value(tokens[j]))
                    j += 1
                if j >= len(tokens):
                    raise bad("found 'end of string', expected: ')'")
                out.append(Requirement(key, op, tuple(values)))
                i = j + 1
            else:
                raise bad(f"found {op!r}, expected: '=', '!=', '==', 'in', notin'")
        if i < len(tokens):
            if tokens[i] != ",":
                raise bad(f"found {tokens[i]!r}, expected: ',' or 'end of string'")
            i += 1
    return tuple(out)


def selects(requirements: tuple[Requirement, ...], labels: dict[str, str]) -> bool:
    return all(r.matches(labels) for r in requirements)


#: fields a fieldSelector may name besides ``metadata.name``/``metadata.namespace`` (``GetAttrs`` of each registry)
_FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "status.phase", "status.podIP", "status.nominatedNodeName"),
    "Secret": ("type",),
    "Event": ("reason", "type", "involvedObject.kind", "involvedObject.name", "involvedObject.namespace",
              "involvedObject.uid"),
    "Namespace": ("status.phase",),
    "Node": ("spec.unschedulable",),
}


def parse_field_selector(text: str, kind: str) -> tuple[tuple[str, bool, str], ...]:
    """``fields.ParseSelector``: ``field=value``, ``field==value``, ``field!=value``, comma-separated."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.match(r"^([^=!]+)(==|!=|=)(.*)$", part)
        if m is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        name = m[1].strip()
        if name not in ("metadata.name", "metadata.namespace") and name not in _FIELD_LABELS.get(kind, ()):
            raise BadRequest(f'field label not supported: {name}')
        out.append((name, m[2] == "!=", m[3].strip()))
    return tuple(out)


def _field(obj: KubeObject, name: str) -> str:
    if name == "metadata.name":
        return obj.name
    if name == "metadata.namespace":
        return obj.namespace
    head, _, rest = name.partition(".")
    src: Any = {"spec": obj.spec, "status": obj.status}.get(head, obj.extra.get(head))
    for part in rest.split(".") if rest else ():
        src = src.get(part) if isinstance(src, dict) else None
    return "" if src is None else (str(src).lower() if isinstance(src, bool) else str(src))


# ----------------------------------------------------------------------------------------- encoding
_OWNED_META = ("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "labels",
               "annotations", "ownerReferences", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds")
_DROPPED_META = ("selfLink", "managedFields")


class Codec:
    """JSON <-> :class:`KubeObject`, with timestamps counted from ``epoch`` (Unix seconds; 0 in a world)."""

    def __init__(self, kind_api_version: Callable[[str], str], epoch: float = 0.0) -> None:
        self._api_version = kind_api_version
        self.epoch = epoch

    def timestamp(self, t: float) -> str:
        """``metav1.Time`` marshals to whole seconds, RFC 3339."""
        when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=int(self.epoch + t))
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")

    def encode(self, obj: KubeObject, res: Resource) -> dict[str, Any]:
        meta: dict[str, Any] = {k: copy_json(v) for k, v in (obj.extra.get("metadata") or {}).items()}
        meta["name"] = obj.name
        if res.namespaced:
            meta["namespace"] = obj.namespace
        if obj.uid:
            meta["uid"] = obj.uid
            meta["resourceVersion"] = str(obj.resource_version)
            if obj.generation:
                meta["generation"] = obj.generation
            meta["creationTimestamp"] = self.timestamp(obj.creation_timestamp)
        if obj.deletion_timestamp is not None:
            meta["deletionTimestamp"] = self.timestamp(obj.deletion_timestamp)
            meta["deletionGracePeriodSeconds"] = obj.deletion_grace_period_seconds or 0
        if obj.labels:
            meta["labels"] = dict(obj.labels)
        if obj.annotations:
            meta["annotations"] = dict(obj.annotations)
        if obj.owner_references:
            meta["ownerReferences"] = [self._owner(r) for r in obj.owner_references]
        if obj.finalizers:
            meta["finalizers"] = list(obj.finalizers)
        out: dict[str, Any] = {"apiVersion": res.api_version, "kind": res.kind, "metadata": meta}
        for k, v in obj.extra.items():
            if k not in ("metadata", "apiVersion", "kind"):
                out[k] = copy_json(v)
        if obj.spec:
            out["spec"] = copy_json(obj.spec)
        if obj.status:
            out["status"] = copy_json(obj.status)
        return out

    def _owner(self, ref: OwnerReference) -> dict[str, Any]:
        out: dict[str, Any] = {"apiVersion": self._api_version(ref.kind), "kind": ref.kind, "name": ref.name,
                               "uid": ref.uid}
        if ref.controller:
            out["controller"] = True
        if ref.block_owner_deletion:
            out["blockOwnerDeletion"] = True
        return out

    def decode(self, doc: Any, res: Resource, namespace: str) -> KubeObject:
        """A request body as an object of ``res`` in ``namespace`` (400 for a body that is not one)."""
        if not isinstance(doc, dict):
            raise BadRequest("the body of the request is not a JSON object")
        kind = doc.get("kind")
        if kind not in (None, "", res.kind):
            raise BadRequest(f"the kind of the object ({kind}) does not match the resource ({res.kind})")
        meta = doc.get("metadata") or {}
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        ns = meta.get("namespace") or ""
        if res.namespaced:
            if ns and namespace and ns != namespace:
                raise BadRequest("the namespace of the provided object does not match the namespace sent on the "
                                 "request")
            ns = namespace or ns
        else:
            ns = ""
        for field_name in ("labels", "annotations"):
            got = meta.get(field_name) or {}
            if not isinstance(got, dict) or not all(isinstance(v, str) for v in got.values()):
                raise BadRequest(f"metadata.{field_name} must be a map of strings")
        rv = meta.get("resourceVersion") or ""
        if not isinstance(rv, str) or (rv and not rv.isdigit()):
            raise Invalid(f'{res.kind} "{meta.get("name", "")}" is invalid: metadata.resourceVersion: '
                          f"Invalid value: {rv!r}: must be a decimal string")
        refs = []
        for r in meta.get("ownerReferences") or []:
            if not isinstance(r, dict) or not r.get("uid") or not r.get("name") or not r.get("kind"):
                raise Invalid(f'{res.kind} "{meta.get("name", "")}" is invalid: metadata.ownerReferences: '
                              "Invalid value: an owner reference needs apiVersion, kind, name and uid")
            refs.append(OwnerReference(str(r["uid"]), str(r["kind"]), str(r["name"]), bool(r.get("controller")),
                                       bool(r.get("blockOwnerDeletion"))))
        extra: dict[str, Any] = {k: copy_json(v) for k, v in doc.items()
                                 if k not in ("apiVersion", "kind", "metadata", "spec", "status")}
        meta_extra = {k: copy_json(v) for k, v in meta.items() if k not in _OWNED_META and k not in _DROPPED_META}
        if meta_extra:
            extra["metadata"] = meta_extra
        spec, status = doc.get("spec") or {}, doc.get("status") or {}
        if not isinstance(spec, dict) or not isinstance(status, dict):
            raise BadRequest("spec and status must be objects")
        return KubeObject(
            res.kind, ns, str(meta.get("name") or ""), uid=str(meta.get("uid") or ""),
            resource_version=int(rv or 0), labels=dict(meta.get("labels") or {}),
            annotations=dict(meta.get("annotations") or {}), owner_references=refs,
            finalizers=[str(f) for f in meta.get("finalizers") or []], spec=copy_json(spec),
            status=copy_json(status), extra=extra,
        )


# ------------------------------------------------------------------------------------------- patches
#: RFC 7386 (``evanphx/json-patch`` ``MergePatch``): objects merge, ``null`` deletes, anything else replaces;
#: the apiserver's own (``APIServer.patch`` applies it too), under the name this module's patch table uses
json_merge_patch = merge_patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise Invalid(f"the server rejected our request due to an error in our request: invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str], path: str) -> Any:
    for p in parts:
        if isinstance(doc, dict) and p in doc:
            doc = doc[p]
        elif isinstance(doc, list) and p.isdigit() and int(p) < len(doc):
            doc = doc[int(p)]
        else:
            raise Invalid(f"the server rejected our request due to an error in our request: "
                          f"doc is missing path: {path!r}")
    return doc


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902 (``evanphx/json-patch`` ``Patch.Apply``): add, remove, replace, move, copy, test; 422 on failure."""
    if not isinstance(ops, list):
        raise BadRequest("a JSON patch is a list of operations")
    doc = copy_json(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise BadRequest(f"a JSON patch operation needs 'op' and 'path': {op!r}")
        kind, path = op["op"], op["path"]
        parts = _pointer(path)
        if kind == "test":
            if _walk(doc, parts, path) != op.get("value"):
                raise Invalid(f"the server rejected our request due to an error in our request: testing value "
                              f"{path} failed: test failed")
            continue
        if kind in ("move", "copy"):
            src = _pointer(op.get("from", ""))
            value = copy_json(_walk(doc, src, op.get("from", "")))
            if kind == "move":
                doc = _remove(doc, src, op.get("from", ""))
        elif kind in ("add", "replace"):
            if "value" not in op:
                raise BadRequest(f"a JSON patch '{kind}' needs a value")
            value = copy_json(op["value"])
        elif kind == "remove":
            doc = _remove(doc, parts, path)
            continue
        else:
            raise BadRequest(f"unexpected kind of JSON patch operation: {kind!r}")
        if not parts:
            doc = value
            continue
        parent = _walk(doc, parts[:-1], path)
        last = parts[-1]
        if isinstance(parent, dict):
            if kind == "replace" and last not in parent:
                raise Invalid(f"the server rejected our request due to an error in our request: replace operation "
                              f"does not apply: doc is missing key: {path}")
            parent[last] = value
        elif isinstance(parent, list):
            if last == "-" and kind != "replace":
                parent.append(value)
            elif last.isdigit() and int(last) <= len(parent) - (kind == "replace"):
                if kind == "replace":
                    parent[int(last)] = value
                else:
                    parent.insert(int(last), value)
            else:
                raise Invalid(f"the server rejected our request due to an error in our request: "
                              f"index out of range: {path}")
        else:
            raise Invalid(f"the server rejected our request due to an error in our request: "
                          f"doc is missing path: {path!r}")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise Invalid("the server rejected our request due to an error in our request: cannot remove the root")
    parent = _walk(doc, parts[:-1], path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise Invalid(f"the server rejected our request due to an error in our request: remove operation does not "
                      f"apply: doc is missing path: {path!r}")
    return doc


#: ``patchMergeKey`` of the built-in types' lists (``k8s.io/api`` struct tags): a list named so merges by that key.
#: ``ports`` merges by ``containerPort`` in a container and by ``port`` in a Service (chosen by what the items have).
_MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
    "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath", "imagePullSecrets": "name",
    "hostAliases": "ip", "conditions": "type", "ownerReferences": "uid", "ports": "containerPort",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name", "schedulingGates": "name",
}
#: primitive lists with ``patchStrategy:"merge"``: a patch adds to the set (``metadata.finalizers``)
_MERGE_SETS = frozenset({"finalizers"})


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """``strategicpatch.StrategicMergeMapPatch`` for the built-in types (``apimachinery/pkg/util/strategicpatch``).

    Where it differs from a merge patch: lists with a ``patchMergeKey`` merge
    item by item (``containers`` by ``name``, ``conditions`` by ``type``,
    ``ownerReferences`` by ``uid``) and ``metadata.finalizers`` adds to the set;
    the directives ``$patch: replace|delete|merge``, ``$retainKeys``,
    ``$deleteFromPrimitiveList/<field>`` are honoured and ``$setElementOrder``
    is read as upstream reads it only for order, which here is kept as the
    server had it (new items appended).
    """
    if not isinstance(patch, dict):
        return copy_json(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy_json(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out: dict[str, Any] = copy_json(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            if isinstance(out.get(name), list) and isinstance(v, list):
                out[name] = [x for x in out[name] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            merged = strategic_merge_patch(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            out[k] = _merge_list(k, out.get(k), v)
        else:
            out[k] = copy_json(v)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _merge_list(name: str, cur: Any, patch: list[Any]) -> list[Any]:
    if name in _MERGE_SETS and all(not isinstance(x, (dict, list)) for x in patch):
        base = list(cur) if isinstance(cur, list) else []
        return base + [x for x in patch if x not in base]
    key = _MERGE_KEYS.get(name)
    if key is None or not all(isinstance(x, dict) for x in patch):
        if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
            return [x for x in patch if not (isinstance(x, dict) and "$patch" in x)]
        out_list: list[Any] = copy_json(patch)
        return out_list
    if name == "ports" and any("port" in x and "containerPort" not in x for x in patch):
        key = "port"
    if any(x.get("$patch") == "replace" for x in patch):
        return [copy_json(x) for x in patch if "$patch" not in x]
    out = [copy_json(x) for x in cur] if isinstance(cur, list) else []
    for item in patch:
        at = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if at is not None:
                del out[at]
        elif at is None:
            out.append({k: copy_json(v) for k, v in item.items() if k != "$patch"})
        else:
            merged = strategic_merge_patch(out[at], item)
            out[at] = merged
    return out


# ------------------------------------------------------------------------------------------- replies
@dataclass
class Reply:
    """An HTTP answer: a status code and a JSON document (or, for a watch, the stream)."""

    code: int
    doc: Any = None
    watch: _Watch | None = None

    def body(self) -> bytes:
        return _dumps(self.doc) if self.doc is not None else b""


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass
class _Path:
    group: str
    version: str
    namespace: str = ""
    plural: str = ""
    name: str = ""
    subresource: str = ""
    query: dict[str, str] = field(default_factory=dict)


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


# ------------------------------------------------------------------------------------------- handler
class APIHandler:
    """The REST API of one :class:`APIServer`: call :meth:`handle` with a request, get a :class:`Reply`.

    ``epoch`` is the Unix time virtual time 0 stands for in timestamps (0 in a
    world, so runs print the same; ``serve`` passes the real start time).
    """

    def __init__(self, api: APIServer, *, epoch: float = 0.0) -> None:
        self.api = api
        self.world: World = api._world
        self.codec = Codec(self._kind_api_version, epoch)
        self._builtin = {(r.group, r.plural): r for r in BUILTIN_RESOURCES}
        self._builtin_kinds = {r.kind: r for r in BUILTIN_RESOURCES}

    # ----------------------------------------------------------------- resources
    def resources(self) -> list[Resource]:
        """Every resource served now: the built-ins, then each CRD's, in CRD creation order."""
        out = list(BUILTIN_RESOURCES)
        for crd in self.api._store.get(CRD_KIND, {}).values():
            if crd.deletion_timestamp is None:
                out.extend(crd_resources(crd))
        return out

    def _resolve(self, group: str, version: str, plural: str) -> Resource | None:
        res = self._builtin.get((group, plural))
        if res is not None:
            return res if res.version == version else None
        for crd in self.api._store.get(CRD_KIND, {}).values():
            if crd.spec.get("group") == group and crd.deletion_timestamp is None:
                for r in crd_resources(crd):
                    if r.plural == plural and r.version == version:
                        return r
        return None

    def resource_of(self, kind: str) -> Resource | None:
        """The resource serving ``kind`` (its first served version), or None."""
        res = self._builtin_kinds.get(kind)
        if res is not None:
            return res
        return next((r for r in self.resources() if r.kind == kind), None)

    def _kind_api_version(self, kind: str) -> str:
        res = self.resource_of(kind)
        return res.api_version if res is not None else "v1"

    # ------------------------------------------------------------------ requests
    async def handle(self, method: str, target: str, headers: dict[str, str], body: bytes, client: str,
                     options: WatchOptions | None = None) -> Reply:
        """One HTTP request (``target`` is the path and query); errors come back as ``Status`` replies.

        ``client`` names the caller's watch streams ("<client>/watch/<Kind>"); ``options`` are their lag window
        and fault flags."""
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        where = _split(url.path)
        if isinstance(where, str):
            return self._discovery(method, where)
        res = self._resolve(where.group, where.version, where.plural)
        if res is None:
            return Reply(404, status_body(NotFound("the server could not find the requested resource")))
        where.query = query
        try:
            return await self._serve(method.upper(), res, where, headers, body, client, options or WatchOptions())
        except ApiError as err:
            return Reply(err.code, status_body(err, res, where.name))

    async def _serve(self, method: str, res: Resource, p: _Path, headers: dict[str, str], body: bytes,
                     client: str, options: WatchOptions) -> Reply:
        if res.namespaced is False and p.namespace:
            raise NotFound("the server could not find the requested resource")
        if p.subresource and not (p.subresource == "status" and res.status):
            raise NotFound("the server could not find the requested resource")
        q = p.query
        if not p.name:
            if method == "GET" and q.get("watch") in ("1", "true"):
                return await self._watch(res, p, client, options)
            if method == "GET":
                return await self._list(res, p)
            if method == "POST":
                return await self._create(res, p, _parse(body))
            raise MethodNotSupported(f"the server does not allow this method on the requested resource ({method})")
        ns = p.namespace if res.namespaced else ""
        if method == "GET":
            return Reply(200, self.codec.encode(await self.api.get(res.kind, ns, p.name), res))
        if method == "PUT":
            return await self._update(res, p, ns, _parse(body))
        if method == "PATCH":
            ctype = headers.get("content-type", "").split(";")[0].strip()
            return await self._patch(res, p, ns, ctype, body)
        if method == "DELETE":
            return await self._delete(res, p, ns, _parse(body) if body.strip() else {})
        raise MethodNotSupported(f"the server does not allow this method on the requested resource ({method})")

    def _discovery(self, method: str, where: str) -> Reply:
        """``discovery.APIVersionHandler``/``APIGroupHandler``: what kubectl reads before anything else."""
        if method.upper() != "GET":
            return Reply(405, status_body(MethodNotSupported("the server does not allow this method")))
        served = self.resources()
        groups: dict[str, list[str]] = {}
        for r in served:
            if r.group and r.version not in groups.setdefault(r.group, []):
                groups[r.group].append(r.version)

        def group(name: str) -> dict[str, Any]:
            versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups[name]]
            return {"name": name, "versions": versions, "preferredVersion": versions[0]}

        if where == "api":
            return Reply(200, {"kind": "APIVersions", "versions": ["v1"],
                               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
        if where == "apis":
            return Reply(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [group(g) for g in groups]})
        if where.startswith("group:") and where[6:] in groups:
            return Reply(200, {"kind": "APIGroup", "apiVersion": "v1", **group(where[6:])})
        if where.startswith("resources:"):
            gv = where.split(":", 1)[1]
            g, v = gv.split("/", 1)
            listed = [d for r in served if r.group == g and r.version == v for d in r.discovery()]
            if listed:
                return Reply(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                   "groupVersion": f"{g}/{v}" if g else v, "resources": listed})
        if where == "version":
            return Reply(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-race-harness",
                               "platform": "linux/amd64"})
        if where == "root":
            return Reply(200, {"paths": ["/api", "/api/v1", "/apis", "/version",
                                         *(f"/apis/{g}/{v}" for g, vs in groups.items() for v in vs)]})
        return Reply(404, status_body(NotFound("the server could not find the requested resource")))

    # ------------------------------------------------------------------ verbs
    async def _list(self, res: Resource, p: _Path) -> Reply:
        """``handlers/get.go`` ListResource: selectors, resourceVersion semantics, limit/continue (key order)."""
        q = p.query
        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""), res.kind)
        limit = int(q["limit"]) if q.get("limit", "").isdigit() else 0
        rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
        if rv and not rv.isdigit():
            raise BadRequest(f'invalid resource version "{rv}"')
        at: int | None = None
        start = ""
        if q.get("continue"):
            at, start = _continue_token(q["continue"])
        elif match == "Exact" and rv:
            at = int(rv)
        namespace = p.namespace if res.namespaced and p.namespace else None
        objects = await self.api.list(res.kind, namespace, resource_version=rv if at is None else "", at=at)
        served_rv = at if at is not None else self.api.listed_rv
        items = sorted((o for o in objects if selects(labels, o.labels) and _fields_match(fields, o)),
                       key=lambda o: (o.namespace, o.name))
        if start:
            items = [o for o in items if f"{o.namespace}/{o.name}" > start]
        meta: dict[str, Any] = {"resourceVersion": str(served_rv)}
        if limit and len(items) > limit:
            last = items[limit - 1]
            meta["continue"] = _make_continue(served_rv, f"{last.namespace}/{last.name}")
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return Reply(200, {"kind": f"{res.kind}List", "apiVersion": res.api_version, "metadata": meta,
                           "items": [self.codec.encode(o, res) for o in items]})

    async def _create(self, res: Resource, p: _Path, doc: Any) -> Reply:
        """``handlers/create.go``: 201 with the object; ``generateName`` names it when ``name`` is empty."""
        obj = self.codec.decode(doc, res, p.namespace)
        generate = str((obj.extra.get("metadata") or {}).get("generateName") or "")
        if not obj.name and not generate:
            raise Invalid(f'{res.kind} "" is invalid: metadata.name: Required value: name or generateName is '
                          "required")
        if res.namespaced and not obj.namespace:
            raise BadRequest("the namespace of the object is not set and the request names none")
        obj.uid, obj.resource_version = "", 0  # server-owned: a create ignores what the client sent
        if res.kind == CRD_KIND:
            _accept_crd(obj)
        out = await self.api.create(obj, generate_name=generate)
        return Reply(201, self.codec.encode(out, res))

    async def _update(self, res: Resource, p: _Path, ns: str, doc: Any) -> Reply:
        """``handlers/update.go``: the body's resourceVersion is the precondition (409 Conflict when stale)."""
        obj = self.codec.decode(doc, res, ns)
        if obj.name != p.name:
            raise BadRequest(f"the name of the object ({obj.name}) does not match the name on the URL ({p.name})")
        if p.subresource == "status":
            out = await self.api.update_status(obj)
        elif res.status:
            out = await self.api.update(obj)
        else:  # no status subresource: the main resource writes status too
            out = await self.api._rewrite("update", res.kind, ns, p.name, lambda _cur: obj, keep_status=False)
        return Reply(200, self.codec.encode(out, res))

    async def _patch(self, res: Resource, p: _Path, ns: str, ctype: str, body: bytes) -> Reply:
        """``handlers/patch.go``: the patch is applied to the object read at the commit (never a lost update)."""
        accepted = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_MERGE_PATCH] if res.builtin else [])
        if ctype not in accepted:  # apply-patch+yaml (server-side apply) is not served
            raise UnsupportedMediaType.of(accepted)
        patch = _parse(body)
        apply: Callable[[Any, Any], Any] = {JSON_PATCH: json_patch, MERGE_PATCH: json_merge_patch,
                                            STRATEGIC_MERGE_PATCH: strategic_merge_patch}[ctype]
        status_only = p.subresource == "status"

        def build(cur: KubeObject) -> KubeObject:
            doc = self.codec.encode(cur, res)
            patched = apply(doc, patch)
            new = self.codec.decode(patched, res, ns)
            if new.name != cur.name:
                raise BadRequest(f"the name of the object ({new.name}) does not match the name on the URL ({cur.name})")
            if not new.resource_version:  # a patch that does not name a revision is unconditional
                new.resource_version = cur.resource_version
            return new

        verb = "patch_status" if status_only else "patch"
        out = await self.api._rewrite(verb, res.kind, ns, p.name, build, status_only=status_only,
                                      keep_status=res.status)
        return Reply(200, self.codec.encode(out, res))

    async def _delete(self, res: Resource, p: _Path, ns: str, doc: Any) -> Reply:
        """``handlers/delete.go``: DeleteOptions (preconditions, propagationPolicy, gracePeriodSeconds).

        200 with the object while it is still there (finalizers, a grace
        period) or when the registry returns deleted objects (Pods, custom
        resources: ``ReturnDeletedObject``); else 200 with a Success Status.
        """
        if not isinstance(doc, dict):
            raise BadRequest("DeleteOptions must be a JSON object")
        q = p.query
        pre = doc.get("preconditions") or {}
        uid = pre.get("uid") or None
        rv = pre.get("resourceVersion") or None
        if rv is not None and not str(rv).isdigit():
            raise BadRequest(f"invalid precondition resourceVersion {rv!r}")
        policy = doc.get("propagationPolicy") or q.get("propagationPolicy") or None
        orphan = doc.get("orphanDependents", q.get("orphanDependents"))
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan in (True, "true") else "Background"
        grace = doc.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
        if policy not in (None, "Background", "Foreground", "Orphan"):
            raise Invalid(f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                          f'"{policy}": supported values: "Foreground", "Background", "Orphan", "nil"')
        out = await self.api.delete(res.kind, ns, p.name, uid=uid, resource_version=None if rv is None else int(rv),
                                    propagation=policy, grace_period_seconds=None if grace is None else int(grace))
        still = self.api._store.get(res.kind, {}).get(out.key)
        if (still is not None and still.uid == out.uid) or res.kind == "Pod" or not res.builtin:
            return Reply(200, self.codec.encode(out, res))
        details: dict[str, Any] = {"name": p.name, "kind": res.plural, "uid": out.uid}
        if res.group:
            details = {"name": p.name, "group": res.group, "kind": res.plural, "uid": out.uid}
        return Reply(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                           "details": details})

    async def _watch(self, res: Resource, p: _Path, client: str, options: WatchOptions) -> Reply:
        """``handlers/watch.go`` over the watch cache: see :class:`_Watch`."""
        q = p.query
        labels = parse_label_selector(q.get("labelSelector", ""))
        fields = parse_field_selector(q.get("fieldSelector", ""), res.kind)
        rv = q.get("resourceVersion", "")
        if rv and not rv.isdigit():
            raise BadRequest(f'invalid resource version "{rv}"')
        timeout = q.get("timeoutSeconds", "")
        namespace = p.namespace if res.namespaced and p.namespace else None
        stream = _Watch(self, res, client, options, namespace, labels, fields,
                        bookmarks=q.get("allowWatchBookmarks") in ("1", "true"),
                        timeout=float(timeout) if timeout.isdigit() else None)
        await stream.open(rv)
        return Reply(200, watch=stream)


def _parse(body: bytes) -> Any:
    try:
        return json.loads(body or b"{}")
    except ValueError as exc:
        raise BadRequest(f"the body of the request is not valid JSON: {exc}") from None


def _fields_match(fields: tuple[tuple[str, bool, str], ...], obj: KubeObject) -> bool:
    return all((_field(obj, name) == value) != negated for name, negated, value in fields)


def _make_continue(rv: int, start: str) -> str:
    """``storage.EncodeContinue``: the revision of the first page and the last key served, base64 JSON."""
    return base64.urlsafe_b64encode(_dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})).decode()


def _continue_token(token: str) -> tuple[int, str]:
    try:
        got = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(got["rv"]), str(got["start"])
    except (ValueError, KeyError, TypeError):
        raise BadRequest("continue key is not valid: the continue token could not be decoded") from None


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


# ------------------------------------------------------------------------------------------- watches
@dataclass(frozen=True)
class WatchOptions:
    """A client's watch streams: the window of each delivery and the fault flags (as an :class:`Informer`'s)."""

    max_lag: float = DEFAULT_MAX_LAG
    latency: float = 0.0
    watch_drops: bool = False
    watch_ends: bool = False
    compactions: bool = False


_END = b""  # the server closed the stream (a clean end: the response body ends)
_BROKEN = object()  # the connection broke (the client's read raises)


class _Watch:
    """The server end of one watch connection: events in flight in revision order, each sent in its window.

    ``resourceVersion`` (``handlers/watch.go``, the cacher's ``Watch``):
    unset or ``""`` sends the current state as ADDED events, then what comes
    next; ``"0"`` does the same from the watch cache, which may lag
    (``stale_read``); ``"N"`` sends every event after ``N``, or, if ``N`` is
    compacted away, one ``ERROR`` event with a 410 ``Expired`` Status. The
    selectors filter as the cacher's ``filterWithAttrsFunction`` does: an
    object that stops matching is sent as DELETED, one that starts as ADDED.
    ``timeoutSeconds`` closes the stream after that long (with a BOOKMARK
    first when ``allowWatchBookmarks``); without it the stream stays open.
    """

    def __init__(self, handler: APIHandler, res: Resource, client: str, options: WatchOptions, namespace: str | None,
                 labels: tuple[Requirement, ...], fields: tuple[tuple[str, bool, str], ...], *, bookmarks: bool,
                 timeout: float | None) -> None:
        self._handler = handler
        self._api = handler.api
        self._world = handler.world
        self.res = res
        self.client = client
        self.name = f"{client}/watch/{res.kind}"
        self._namespace = namespace
        self._labels = labels
        self._fields = fields
        self._bookmarks = bookmarks
        self._timeout = timeout
        self.options = options
        self.buffer: WorldQueue[Any] = self._world.Queue()
        self._pending: deque[tuple[str, KubeObject, float]] = deque()
        self._passing: set[str] = set()
        self._last_rv = 0  # the revision of the last event sent
        self._timer: TimerHandle | None = None
        self._end_timer: TimerHandle | None = None
        self._stop: Callable[[], None] | None = None
        self.closed = False

    def _matches(self, obj: KubeObject) -> bool:
        return ((self._namespace is None or obj.namespace == self._namespace) and selects(self._labels, obj.labels)
                and _fields_match(self._fields, obj))

    async def open(self, rv: str) -> None:
        """The watch request: one yield point, then the initial events and the subscription, atomically."""
        world, api, kind = self._world, self._api, self.res.kind
        where = object_ref(kind, self._namespace or "", "*")
        await world.step(f"watch {where}" + (f" from rv={rv}" if rv else ""), key=f"{kind} *")
        world.touch(f"{kind} *", decides=False)
        if rv and rv != "0":
            start = int(rv)
            if 0 < start < api.resource_version and world.fault(
                "compaction", f"{self.name} watch from rv={start} gets 410 Gone (the server compacted past it)",
                default=self.options.compactions,
            ):
                api.compact()
            try:
                events = api.events_since(kind, start)
            except Gone as err:
                if world.noting:
                    world.note(f"{self.name}: watch from rv={start} is too old (compacted at rv={api.compacted_rv}): "
                               "an ERROR event with a 410 Status", kind="watch", rv=start)
                self.buffer.put_nowait(_event_line("ERROR", status_body(err)))
                self.buffer.put_nowait(_END)
                self.closed = True
                return
            self._passing = {o.key for o in api.snapshot_at(kind, start) if self._matches(o)}
            self._last_rv = start
            initial = [(e.type, e.object) for e in events]
        else:
            stale = api.stale_revision(kind, f"{self.name} watch served by a lagging watch cache") if rv == "0" else None
            at = api.resource_version if stale is None else stale[0]
            objects = api.snapshot_at(kind, at) if stale is not None else api.snapshot(kind)[0]
            initial = [(ADDED, o) for o in sorted(objects, key=lambda o: (o.namespace, o.name))]
            if stale is not None:
                initial += [(e.type, e.object) for e in api.events_since(kind, at)]
            self._last_rv = at
        now = world.now
        for what, obj in initial:
            self._queue(what, obj, now)
        self._stop = api.watch(kind, self._on_event)
        if self._timeout is not None:
            self._end_timer = world.call_later(self._timeout, self._time_out, label=f"{self.name} timeoutSeconds "
                                               f"elapsed: the server ends the watch", actor=self.name)
        self._pump()

    def _on_event(self, ev: WatchEvent) -> None:
        if not self.closed:
            self._queue(ev.type, ev.object, self._world.now)
            self._pump()

    def _queue(self, what: str, obj: KubeObject, at: float) -> None:
        """The cacher's filter: which event (if any) this connection sends for ``obj``."""
        was, now = obj.key in self._passing, what != DELETED and self._matches(obj)
        if what == DELETED:
            if not was:
                return
            self._passing.discard(obj.key)
        elif now and not was:
            what = ADDED
            self._passing.add(obj.key)
        elif was and not now:
            what = DELETED
            self._passing.discard(obj.key)
        elif not now:
            return
        elif what == ADDED:
            what = MODIFIED if was else ADDED
        self._pending.append((what, obj, at))

    def _pump(self) -> None:
        if self.closed or self._timer is not None or not self._pending:
            return
        what, obj, at = self._pending[0]
        when = at + self.options.latency
        self._timer = self._world.call_at(
            when, self._send, label=f"{self.name} deliver {what} {obj.key} rv={obj.resource_version}",
            actor=self.name, key=obj.ref, rv=obj.resource_version, latest=when + self.options.max_lag)

    def _send(self) -> None:
        """Write the head event to the connection, unless the watch breaks before it (the informer's points)."""
        self._timer = None
        if self.closed or not self._pending:
            return
        what, obj, _at = self._pending[0]
        broke = watch_break(
            self._world, self.name, WatchEvent(what, obj), self._last_rv, drops=self.options.watch_drops,
            ends=self.options.watch_ends, drop_then="the connection breaks (the client's read fails)",
            end_then=f"the stream ends; the client may re-watch from rv={self._last_rv}",
        )
        if broke is not None:
            if self._world.noting:
                note_lost(self._world, [WatchEvent(w, o) for w, o, _ in self._pending], broke == "drop",
                          "the client's read fails" if broke == "drop" else "the response body ends")
            self._close(_BROKEN if broke == "drop" else _END)
            return
        self._pending.popleft()
        self._last_rv = max(self._last_rv, obj.resource_version)
        if self._world._fp is not None:  # the watch event read: the commit of that revision
            self._world.touch(obj.ref, said=f"{what} rv={obj.resource_version}", version=obj.resource_version)
        self.buffer.put_nowait(_event_line(what, self._handler.codec.encode(obj, self.res)))
        self._pump()

    def _time_out(self) -> None:
        self._end_timer = None
        if self.closed:
            return
        if self._bookmarks:  # a bookmark right before the timeout closes the watch (cacher.go, 1.27+)
            self.buffer.put_nowait(_event_line("BOOKMARK", {"kind": self.res.kind, "apiVersion": self.res.api_version,
                                                            "metadata": {"resourceVersion": str(self._last_rv)}}))
        self._close(_END)

    def _close(self, how: object) -> None:
        self.stop()
        self.buffer.put_nowait(how)

    def stop(self) -> None:
        """The connection is gone (either end closed it): no more events, no timers left behind."""
        self.closed = True
        if self._stop is not None:
            self._stop()
            self._stop = None
        for t in (self._timer, self._end_timer):
            if t is not None:
                t.cancel()
        self._timer = self._end_timer = None
        self._pending.clear()

    async def read(self) -> bytes | None:
        """The client reads the next chunk: one JSON line per event, in order (a yield point of the client).

        None when the stream ended; raises :class:`ConnectionResetError` when it broke.
        """
        item = await self.buffer.get(f"{self.client} reads watch {self.res.kind}")
        if item is _BROKEN:
            raise ConnectionResetError(f"{self.name}: the watch connection broke")
        return None if item == _END else item


class _Chunks:
    """The body of a watch response as an async iterator: a plain class, not an async generator, so a client that
    stops reading leaves nothing for Trio to finalize. ``broken`` makes the client library's read error."""

    def __init__(self, watch: _Watch, broken: Callable[[str], BaseException]) -> None:
        self._watch = watch
        self._broken = broken

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        try:
            chunk = await self._watch.read()
        except ConnectionResetError as exc:
            raise self._broken(str(exc)) from None
        if chunk is None:
            raise StopAsyncIteration
        return chunk


def _event_line(what: str, obj: dict[str, Any]) -> bytes:
    return _dumps({"type": what, "object": obj}) + b"\n"


# ------------------------------------------------------------------------------------------- transport
class Transport:
    """An httpx transport that hands each request to :class:`APIHandler` inside the world (``api.transport()``).

    It works with ``httpx.AsyncClient(transport=...)`` and with clients built
    on httpx forks of the same interface (lightkube 1.x uses ``httpx2``): the
    response is built from the module the request came from. httpx is never
    imported by the harness itself. Requests run in the calling actor, so they
    are that actor's yield points; a client's own ``anyio.fail_after`` runs in
    virtual time. ``max_lag``, ``latency`` and the fault flags are the watch
    streams' (as an :class:`Informer`'s).
    """

    def __init__(self, api: APIServer, client: str, *, max_lag: float | None = None, latency: float = 0.0,
                 watch_drops: bool = False, watch_ends: bool = False, compactions: bool = False) -> None:
        self.handler = _handler_of(api)
        self.client = client
        self.options = WatchOptions(DEFAULT_MAX_LAG if max_lag is None else max_lag, latency, watch_drops, watch_ends,
                                    compactions)
        self._streams: list[_Watch] = []

    async def handle_async_request(self, request: Any) -> Any:
        http = sys.modules[type(request).__module__.partition(".")[0]]  # httpx, or a fork of it
        body = await request.aread()
        target = request.url.raw_path.decode("ascii")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in request.headers.raw}
        reply = await self.handler.handle(request.method, target, headers, body, self.client, self.options)
        if reply.watch is not None:
            self._streams.append(reply.watch)
            stream = _watch_body_class(http)(reply.watch, request)
            return http.Response(reply.code, headers=[("Content-Type", JSON), ("Transfer-Encoding", "chunked")],
                                 stream=stream, request=request)
        return http.Response(reply.code, headers=[("Content-Type", JSON)], content=reply.body(), request=request)

    async def aclose(self) -> None:
        for s in self._streams:
            s.stop()
        self._streams.clear()

    async def __aenter__(self) -> Transport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_BODY_CLASSES: dict[str, type] = {}


def _watch_body_class(http: Any) -> type:
    """A response stream class of the client's own httpx module (its client checks the type)."""
    cls = _BODY_CLASSES.get(http.__name__)
    if cls is None:
        base = http.AsyncByteStream

        class WatchBody(base):  # type: ignore[misc, valid-type]
            def __init__(self, watch: _Watch, request: Any) -> None:
                self._watch = watch
                self._request = request

            def __aiter__(self) -> _Chunks:
                return _Chunks(self._watch, lambda why: http.ReadError(why, request=self._request))

            async def aclose(self) -> None:
                self._watch.stop()

        cls = _BODY_CLASSES[http.__name__] = WatchBody
    return cls


def _handler_of(api: APIServer) -> APIHandler:
    """One handler per apiserver (the transports of several clients share it)."""
    handler: APIHandler | None = getattr(api, "_http_handler", None)
    if handler is None:
        handler = APIHandler(api)
        api._http_handler = handler  # type: ignore[attr-defined]  # one per apiserver, made on first use
    return handler


def owner_reference(obj: dict[str, Any], *, controller: bool = True) -> dict[str, Any]:
    """A controller reference to a JSON object, as ``metav1.NewControllerRef`` builds it."""
    meta = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": meta["name"], "uid": meta["uid"],
            "controller": controller, "blockOwnerDeletion": controller}

