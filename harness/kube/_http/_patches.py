"""The three patch formats a PATCH may carry: JSON merge patch, JSON patch and strategic merge patch.

Each is a pure function of the encoded object and the patch; the handler
applies it to the object read at the commit (``handlers/patch.go``).
"""

from __future__ import annotations

from typing import Any

from .._errors import Invalid
from .._merge import merge_patch
from .._objects import copy_json
from ._status import BadRequest

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
