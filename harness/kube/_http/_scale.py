"""The ``scale`` subresource: an ``autoscaling/v1`` ``Scale`` read from and written to its object.

Deployments, ReplicaSets and StatefulSets serve it (``pkg/registry/apps/*/storage/storage.go`` ``ScaleREST``:
``spec.replicas``, ``status.replicas`` and ``status.selector``, the object's label selector as a string); a
CustomResourceDefinition's version serves it when it declares ``subresources.scale`` with ``specReplicasPath``,
``statusReplicasPath`` and optionally ``labelSelectorPath`` (``apiextensions-apiserver/pkg/registry/
customresource/etcd.go`` ``ScaleREST``). A GET answers the Scale; a PUT or PATCH of it writes ``spec.replicas`` into
the object (a Scale's resourceVersion, when it has one, is the precondition) and answers the new Scale. Discovery
lists ``<plural>/scale`` with the ``autoscaling/v1`` ``Scale`` kind, which is how kubectl finds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._errors import Invalid, NotFound
from .._objects import KubeObject, copy_json
from ._codec import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, _parse
from ._patches import json_merge_patch, json_patch
from ._resources import CRD_KIND, Resource, _Path
from ._status import BadRequest, MethodNotSupported, UnsupportedMediaType

if TYPE_CHECKING:
    from ._handler import APIHandler

#: (specReplicasPath, statusReplicasPath, labelSelectorPath) of the built-in kinds with a scale subresource
_BUILTIN: dict[str, tuple[str, str, str]] = {
    kind: (".spec.replicas", ".status.replicas", "") for kind in ("Deployment", "ReplicaSet", "StatefulSet")
}


def scale_paths(handler: APIHandler, res: Resource) -> tuple[str, str, str] | None:
    """Where ``res`` keeps its replicas and selector, or None when it serves no scale subresource."""
    if res.builtin:
        return _BUILTIN.get(res.kind) if res.group == "apps" else None
    for crd in handler.api._store.get(CRD_KIND, {}).values():
        spec = crd.spec
        if spec.get("group") != res.group or (spec.get("names") or {}).get("plural") != res.plural:
            continue
        for v in spec.get("versions") or []:
            if v.get("name") == res.version:
                scale = (v.get("subresources") or spec.get("subresources") or {}).get("scale")
                if isinstance(scale, dict) and scale.get("specReplicasPath"):
                    return (str(scale["specReplicasPath"]), str(scale.get("statusReplicasPath") or ""),
                            str(scale.get("labelSelectorPath") or ""))
    return None


def scale_discovery(handler: APIHandler, res: Resource) -> list[dict[str, Any]]:
    """The ``<plural>/scale`` entry discovery lists for ``res`` (none when it has no scale subresource)."""
    if scale_paths(handler, res) is None:
        return []
    return [{"name": f"{res.plural}/scale", "singularName": "", "namespaced": res.namespaced, "group": "autoscaling",
             "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}]


async def serve_scale(handler: APIHandler, method: str, res: Resource, p: _Path, ns: str, ctype: str,
                      body: bytes) -> tuple[int, dict[str, Any]]:
    """GET, PUT or PATCH ``.../<name>/scale``: the status code and the Scale answered."""
    paths = scale_paths(handler, res)
    if paths is None or not p.name:
        raise NotFound("the server could not find the requested resource")
    api = handler.api
    if method == "GET":
        return 200, _scale_of(handler, res, await api.get(res.kind, ns, p.name), paths)
    if method not in ("PUT", "PATCH"):
        raise MethodNotSupported(f"the server does not allow this method on the requested resource ({method})")
    if method == "PATCH" and ctype not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        raise UnsupportedMediaType.of([JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH])
    sent = _parse(body)

    def build(cur: KubeObject) -> KubeObject:
        scale = _scale_of(handler, res, cur, paths)
        # a Scale has no patch strategy of its own: a strategic merge patch merges as a JSON merge patch
        patch = json_patch if ctype == JSON_PATCH else json_merge_patch
        wanted = sent if method == "PUT" else patch(scale, sent)
        if not isinstance(wanted, dict):
            raise BadRequest("the body of the request is not a Scale")
        replicas = (wanted.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            # ValidateScale (pkg/apis/autoscaling/validation): spec.replicas must be >= 0
            raise Invalid(f'Scale.autoscaling "{cur.name}" is invalid: spec.replicas: Invalid value: '
                          f"{replicas}: must be greater than or equal to 0")
        rv = str((wanted.get("metadata") or {}).get("resourceVersion") or "")
        if rv and not rv.isdigit():
            raise BadRequest(f'invalid resource version "{rv}"')
        new = cur.deepcopy()
        new.resource_version = int(rv) if rv else cur.resource_version  # a Scale's revision is a precondition
        _set(new, paths[0], replicas)
        return new

    if p.dry:
        from ._dryrun import DryRun

        out = DryRun(api).rewrite("patch", res.kind, ns, p.name, build, keep_status=True)
    else:
        out = await api._rewrite("update_scale", res.kind, ns, p.name, build, keep_status=True)
    return 200, _scale_of(handler, res, out, paths)


def _scale_of(handler: APIHandler, res: Resource, obj: KubeObject, paths: tuple[str, str, str]) -> dict[str, Any]:
    """``autoscaling/v1`` ``Scale`` of ``obj`` (metadata as the object's: name, namespace, uid, revision)."""
    doc = handler.codec.encode(obj, res)
    meta = {k: doc["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in doc["metadata"]}
    spec_path, status_path, selector_path = paths
    replicas = _get(doc, spec_path)
    if replicas is None and res.builtin:
        replicas = 1  # apps/v1 defaulting (SetDefaults_Deployment and the others): an unset replicas is 1
    status: dict[str, Any] = {"replicas": _get(doc, status_path) or 0 if status_path else 0}
    selector = (_selector_string(doc.get("spec", {}).get("selector")) if res.builtin
                else _get(doc, selector_path) if selector_path else None)
    if selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta,
            "spec": {"replicas": replicas or 0}, "status": status}


def _fields(path: str) -> list[str]:
    return [f for f in path.split(".") if f]


def _get(doc: Any, path: str) -> Any:
    for f in _fields(path):
        if not isinstance(doc, dict):
            return None
        doc = doc.get(f)
    return doc


def _set(obj: KubeObject, path: str, value: Any) -> None:
    """Write ``value`` at ``path`` (``.spec.replicas``) in ``obj``: spec and status are its own fields, the rest
    its extra JSON."""
    fields = _fields(path)
    if not fields:
        raise BadRequest(f"the scale path {path!r} names no field")
    top: dict[str, Any]
    if fields[0] == "spec":
        top = obj.spec = copy_json(obj.spec)
    elif fields[0] == "status":
        top = obj.status = copy_json(obj.status)
    else:
        obj.extra = copy_json(obj.extra)
        top = obj.extra.setdefault(fields[0], {})
    if len(fields) == 1:
        raise BadRequest(f"the scale path {path!r} names no field inside {fields[0]}")
    for f in fields[1:-1]:
        top = top.setdefault(f, {})
    top[fields[-1]] = value


def _selector_string(selector: Any) -> str:
    """``metav1.LabelSelectorAsSelector(...).String()``: requirements sorted by key, comma-separated."""
    if not isinstance(selector, dict):
        return ""
    reqs: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), sorted(e.get("values") or [])
        text = {"In": f"{key} in ({','.join(values)})", "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op)
        if text is not None:
            reqs.append((key, text))
    return ",".join(t for _k, t in sorted(reqs, key=lambda r: r[0]))
