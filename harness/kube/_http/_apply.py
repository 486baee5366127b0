"""Server-side apply and field ownership: ``managedFields``, what each manager owns, and apply's conflicts.

kube-apiserver's field manager (``apiserver/pkg/endpoints/handlers/fieldmanager``
over ``sigs.k8s.io/structured-merge-diff``) records, per manager and
operation, the set of fields it set, as ``FieldsV1`` (``f:<field>`` for a map
key, ``k:{"name":"web"}`` for an item of a keyed list, ``.`` for a node that is
itself owned). An **Update** (create, update, a non-apply patch) gives its
manager the fields whose values it changed and takes them from the others. An
**Apply** (PATCH ``application/apply-patch+yaml``) makes its manager own
exactly the fields of its configuration: fields it owned before and no longer
names are removed unless someone else owns them, and setting a field another
manager owns to a different value is a conflict (409) unless ``force=true``,
which takes the field over.

Covered, not structured-merge-diff's full semantics: a list is atomic except
the keyed ones of :data:`LIST_KEYS` (``containers`` by name...), which merge
item by item; ``metadata`` tracks ``labels`` and ``annotations`` only; ``status``
is not tracked; types are not converted between versions.
"""

from __future__ import annotations

import json
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no annotations

from .._errors import ApiError
from .._objects import copy_json
from ._status import BadRequest

#: the keyed lists (``x-kubernetes-list-type: map``) merged and owned item by item; every other list is atomic
LIST_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "env": "name",
             "volumes": "name", "volumeMounts": "mountPath", "imagePullSecrets": "name", "ports": "containerPort"}
#: top-level fields no manager owns (the server's, or status, which is not tracked here)
_UNTRACKED = frozenset({"apiVersion", "kind", "metadata", "status"})

Path = tuple[str, ...]


class ApplyConflict(ApiError):
    """409 ``errors.NewApplyConflict``: one ``FieldManagerConflict`` cause per field another manager owns."""

    reason = "Conflict"
    code = 409

    def __init__(self, message: str, causes: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.causes = causes


def parse_apply(body: bytes) -> dict[str, Any]:
    """An apply patch's body: one object, as YAML or JSON (JSON is YAML); 400 for anything else."""
    try:
        cfg = yaml.safe_load(body.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise BadRequest(f"error decoding YAML: {err}") from None
    if not isinstance(cfg, dict):
        raise BadRequest("an apply patch is one object, as YAML or JSON")
    return cfg


# ----------------------------------------------------------------------------------------- field sets
def _item_token(name: str, item: Any) -> str | None:
    key = LIST_KEYS.get(name)
    if key is None or not isinstance(item, dict) or key not in item:
        return None
    return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))


def _walk(value: Any, prefix: Path, out: set[Path]) -> None:
    for k, v in value.items():
        p = (*prefix, f"f:{k}")
        if isinstance(v, dict) and v:
            _walk(v, p, out)
        elif isinstance(v, list) and v and all(_item_token(k, x) for x in v):
            for item in v:
                ip = (*p, str(_item_token(k, item)))
                out.add(ip)
                _walk(item, ip, out)
        else:
            out.add(p)


def fieldset(doc: dict[str, Any]) -> set[Path]:
    """The fields ``doc`` sets, as paths of ``FieldsV1`` tokens (leaves, and each keyed list item)."""
    out: set[Path] = set()
    _walk({k: v for k, v in doc.items() if k not in _UNTRACKED}, (), out)
    meta = doc.get("metadata") or {}
    _walk({k: meta[k] for k in ("labels", "annotations") if meta.get(k)}, ("f:metadata",), out)
    return out


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    """``FieldsV1`` (``fieldpath.Set.ToJSON``): nested tokens, ``.`` marking an owned node that has children."""
    root: dict[str, Any] = {}
    for p in sorted(paths):
        node = root
        for tok in p:
            node = node.setdefault(tok, {})
    for p in paths:
        node = root
        for tok in p:
            node = node[tok]
        if node and "." not in node:
            node["."] = {}
    return _sorted(root)


def _sorted(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted(node[k]) for k in sorted(node)}


def from_fields_v1(fields: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(fields, dict):
        return out
    for tok, sub in fields.items():
        if tok == ".":
            out.add(prefix)
        elif isinstance(sub, dict) and sub:
            out |= from_fields_v1(sub, (*prefix, tok))
        else:
            out.add((*prefix, tok))
    return out


def path_string(p: Path) -> str:
    """A path as ``fieldpath.Path.String`` prints it: ``.spec.template.spec.containers[name="web"].image``."""
    out = ""
    for tok in p:
        if tok.startswith("k:"):
            out += "".join(f"[{k}={json.dumps(v)}]" for k, v in json.loads(tok[2:]).items())
        else:
            out += "." + tok[2:]
    return out


_MISSING = object()


def value_at(doc: Any, p: Path) -> Any:
    for tok in p:
        if tok.startswith("f:") and isinstance(doc, dict):
            doc = doc.get(tok[2:], _MISSING)
        elif tok.startswith("k:") and isinstance(doc, list):
            want = json.loads(tok[2:])
            doc = next((x for x in doc if isinstance(x, dict) and all(x.get(k) == v for k, v in want.items())),
                       _MISSING)
        else:
            return _MISSING
        if doc is _MISSING:
            return _MISSING
    return doc


def _remove(doc: Any, p: Path) -> None:
    parent = value_at(doc, p[:-1]) if len(p) > 1 else doc
    tok = p[-1]
    if tok.startswith("f:") and isinstance(parent, dict):
        parent.pop(tok[2:], None)
    elif tok.startswith("k:") and isinstance(parent, list):
        want = json.loads(tok[2:])
        parent[:] = [x for x in parent if not (isinstance(x, dict) and all(x.get(k) == v for k, v in want.items()))]


def _merge(live: Any, cfg: Any, name: str = "") -> Any:
    """``cfg`` applied onto ``live``: maps merge, keyed lists merge item by item, anything else is replaced."""
    if isinstance(live, dict) and isinstance(cfg, dict):
        out = copy_json(live)
        for k, v in cfg.items():
            out[k] = _merge(out[k], v, k) if k in out else copy_json(v)
        return out
    if isinstance(live, list) and isinstance(cfg, list) and cfg and all(_item_token(name, x) for x in cfg) \
            and all(_item_token(name, x) for x in live):
        merged = copy_json(live)
        for item in cfg:
            at = next((i for i, x in enumerate(merged) if _item_token(name, x) == _item_token(name, item)), None)
            if at is None:
                merged.append(copy_json(item))
            else:
                merged[at] = _merge(merged[at], item)
        return merged
    return copy_json(cfg)


# ----------------------------------------------------------------------------------------- managers
Managers = list[dict[str, Any]]


def managers_of(doc: dict[str, Any]) -> Managers:
    out: Managers = copy_json((doc.get("metadata") or {}).get("managedFields") or [])
    return out


def _entry(manager: str, operation: str, api_version: str, time: str, paths: set[Path]) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}


def _identity(entry: dict[str, Any]) -> tuple[str, str, str]:
    return entry.get("manager", ""), entry.get("operation", ""), entry.get("apiVersion", "")


def _replace(managers: Managers, manager: str, operation: str, api_version: str, time: str,
             paths: set[Path]) -> Managers:
    """Managers with the entry of (manager, operation, apiVersion) set to ``paths``; empty entries dropped."""
    out = [m for m in managers if _identity(m) != (manager, operation, api_version)]
    if paths:
        out.append(_entry(manager, operation, api_version, time, paths))
    return [m for m in out if from_fields_v1(m.get("fieldsV1"))]


def track_update(old: dict[str, Any] | None, new: dict[str, Any], manager: str, api_version: str,
                 time: str) -> Managers:
    """The managers after an Update by ``manager`` from ``old`` (None for a create) to ``new``: it owns what it
    changed (added to what it owned), the others lose those fields, and fields removed are nobody's."""
    managers = managers_of(old) if old is not None else []
    before = fieldset(old) if old is not None else set()
    after = fieldset(new)
    changed = {p for p in after if old is None or value_at(old, p) != value_at(new, p)}
    gone = before - after
    out: Managers = []
    for m in managers:
        owned = from_fields_v1(m.get("fieldsV1")) - changed - gone
        if owned:
            out.append({**m, "fieldsV1": to_fields_v1(owned)})
    mine = next((from_fields_v1(m.get("fieldsV1")) for m in out if _identity(m) == (manager, "Update", api_version)),
                set())
    return _replace(out, manager, "Update", api_version, time, (mine & after) | changed)


def apply(live: dict[str, Any] | None, cfg: dict[str, Any], manager: str, api_version: str, time: str,
          force: bool) -> tuple[dict[str, Any], Managers]:
    """The object after ``manager`` applies ``cfg`` to ``live`` (None: apply creates it), and its managers;
    :class:`ApplyConflict` when ``cfg`` sets a field another manager owns to another value, unless ``force``."""
    base: dict[str, Any] = copy_json(live) if live is not None else {}
    managers = managers_of(base)
    applied = fieldset(cfg)
    conflicts: list[tuple[str, Path]] = []
    others: list[tuple[dict[str, Any], set[Path]]] = []
    for m in managers:
        owned = from_fields_v1(m.get("fieldsV1"))
        if _identity(m)[:2] == (manager, "Apply"):
            continue
        clash = sorted(p for p in applied & owned
                       if p[-1].startswith("f:") and value_at(cfg, p) != value_at(base, p))
        conflicts.extend((_who(m), p) for p in clash)
        others.append((m, owned - set(clash) if force else owned))
    if conflicts and not force:
        raise _conflict(conflicts)
    previous = next((from_fields_v1(m.get("fieldsV1")) for m in managers if _identity(m)[:2] == (manager, "Apply")),
                    set())
    kept_by_others = set().union(*(owned for _m, owned in others)) if others else set()
    for p in sorted(previous - applied - kept_by_others, key=len, reverse=True):
        _remove(base, p)
    merged = _merge(base, {k: v for k, v in cfg.items() if k != "metadata"})
    meta = merged.setdefault("metadata", {})
    for k in ("labels", "annotations"):
        if (cfg.get("metadata") or {}).get(k):
            meta[k] = _merge(meta.get(k) or {}, cfg["metadata"][k])
    out = [{**m, "fieldsV1": to_fields_v1(owned)} for m, owned in others if owned]
    out = [m for m in managers if _identity(m)[:2] == (manager, "Apply")] + out  # keep order: apply entry first
    out = _replace([m for m in out if _identity(m)[:2] != (manager, "Apply")], manager, "Apply", api_version, time,
                   applied)
    return merged, out


def _who(entry: dict[str, Any]) -> str:
    """``printManager``: an Update manager with the apiVersion it used (its time is not part of its identity)."""
    name = json.dumps(entry.get("manager", ""))
    return f"{name} using {entry.get('apiVersion', '')}" if entry.get("operation") == "Update" else name


def _conflict(conflicts: list[tuple[str, Path]]) -> ApplyConflict:
    """``internal.NewConflictError``'s message and causes (``fieldmanager/internal/conflict.go``)."""
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": path_string(p)}
              for who, p in conflicts]
    if len(conflicts) == 1:
        who, p = conflicts[0]
        return ApplyConflict(f"Apply failed with 1 conflict: conflict with {who}: {path_string(p)}", causes)
    lines: list[str] = []
    for who in sorted({w for w, _ in conflicts}):
        lines.append(f"conflicts with {who}:")
        lines.extend(f"- {path_string(p)}" for w, p in conflicts if w == who)
    return ApplyConflict(f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines), causes)
