"""``meta.k8s.io/v1`` ``Table``: what a GET answers when its Accept asks ``as=Table`` (``kubectl get``'s default).

kube-apiserver converts a list or an object to rows with the kind's printer
(``pkg/printers/internalversion/printers.go``); a kind without one gets the default convertor's
``Name``/``Created At`` (``apiserver/pkg/registry/rest/table.go``), and a custom resource its
``additionalPrinterColumns`` after ``Name``, ``Age`` when it declares none
(``apiextensions-apiserver/pkg/registry/customresource/tableconvertor``). Columns here: the printers' default
(priority 0) columns of a few common kinds, computed from the object as far as this apiserver keeps what they show;
the wide (priority 1) columns are left out. Each row carries the object as ``includeObject`` asks (``Object``,
``Metadata``, the default, or ``None``), which kubectl reads for ``--show-labels`` and sorting.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .._objects import copy_json
from ._resources import CRD_KIND, Resource

if TYPE_CHECKING:
    from ._handler import APIHandler

Row = Callable[[dict[str, Any], str], list[Any]]  # (object, its age) -> the cells after Name


def wants_table(headers: dict[str, str]) -> bool:
    """Whether the Accept header asks for a ``meta.k8s.io`` Table (``as=Table;g=meta.k8s.io``, any version)."""
    for media in headers.get("accept", "").split(","):
        params = {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in media.split(";")[1:])}
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io":
            return True
    return False


def human_duration(seconds: float) -> str:
    """``apimachinery/pkg/util/duration`` ``HumanDuration``: the AGE kubectl shows (``5m30s``, ``3h``, ``2d4h``)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _column(name: str, kind: str = "string", fmt: str = "", description: str = "") -> dict[str, Any]:
    return {"name": name, "type": kind, "format": fmt, "description": description, "priority": 0}


def _pod(obj: dict[str, Any], age: str) -> list[Any]:
    """``printPod``'s Ready, Status, Restarts, Age (the status without the containers' waiting reasons)."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    reason = status.get("reason") or status.get("phase") or "Pending"
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    return [f"{ready}/{len(spec.get('containers') or [])}", reason, restarts, age]


def _replicas(obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    spec = obj.get("spec") or {}
    return int(spec.get("replicas", 1)), obj.get("status") or {}


def _deployment(obj: dict[str, Any], age: str) -> list[Any]:
    want, status = _replicas(obj)
    return [f"{status.get('readyReplicas', 0)}/{want}", status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0), age]


def _replicaset(obj: dict[str, Any], age: str) -> list[Any]:
    want, status = _replicas(obj)
    return [want, status.get("replicas", 0), status.get("readyReplicas", 0), age]


def _statefulset(obj: dict[str, Any], age: str) -> list[Any]:
    want, status = _replicas(obj)
    return [f"{status.get('readyReplicas', 0)}/{want}", age]


def _service(obj: dict[str, Any], age: str) -> list[Any]:
    spec = obj.get("spec") or {}
    ports = ",".join(f"{p.get('port')}{':' + str(p['nodePort']) if p.get('nodePort') else ''}/{p.get('protocol', 'TCP')}"
                     for p in spec.get("ports") or [])
    external = ",".join(spec.get("externalIPs") or []) or "<none>"
    return [spec.get("type", "ClusterIP"), spec.get("clusterIP") or "<none>", external, ports or "<none>", age]


def _data(obj: dict[str, Any]) -> int:
    return len(obj.get("data") or {}) + len(obj.get("binaryData") or obj.get("stringData") or {})


#: the default columns of ``printers.go`` ``AddHandlers`` for a few kinds: (columns after Name, cells)
PRINTERS: dict[str, tuple[list[dict[str, Any]], Row]] = {
    "Pod": ([_column("Ready"), _column("Status"), _column("Restarts", "string"), _column("Age")], _pod),
    "Deployment": ([_column("Ready"), _column("Up-to-date", "string"), _column("Available", "string"),
                    _column("Age")], _deployment),
    "ReplicaSet": ([_column("Desired", "integer"), _column("Current", "integer"), _column("Ready", "integer"),
                    _column("Age")], _replicaset),
    "StatefulSet": ([_column("Ready"), _column("Age")], _statefulset),
    "Service": ([_column("Type"), _column("Cluster-IP"), _column("External-IP"), _column("Port(s)"), _column("Age")],
                _service),
    "ConfigMap": ([_column("Data"), _column("Age")], lambda o, age: [_data(o), age]),
    "Secret": ([_column("Type"), _column("Data"), _column("Age")],
               lambda o, age: [o.get("type", "Opaque"), _data(o), age]),
    "Namespace": ([_column("Status"), _column("Age")],
                  lambda o, age: [(o.get("status") or {}).get("phase", "Active"), age]),
}
_NAME = _column("Name", fmt="name", description="Name must be unique within a namespace.")


def as_table(handler: APIHandler, res: Resource, doc: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
    """The Table of ``doc`` (a list's answer or one object's) for ``res``."""
    items = doc.get("items") if doc.get("kind", "").endswith("List") and "items" in doc else [doc]
    now = handler.codec.epoch + handler.world.now
    columns, row = _printer(handler, res, now)
    include = query.get("includeObject", "Metadata")
    rows = []
    for obj in items or []:
        meta = obj.get("metadata") or {}
        row_doc: dict[str, Any] = {"cells": [meta.get("name", ""), *row(obj, _age(meta.get("creationTimestamp"), now))]}
        if include == "Object":
            row_doc["object"] = copy_json(obj)
        elif include != "None":
            row_doc["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                 "metadata": copy_json(meta)}
        rows.append(row_doc)
    # a list's revision and paging, or the one object's revision
    list_meta = {k: v for k, v in (doc.get("metadata") or {}).items()
                 if k in ("resourceVersion", "continue", "remainingItemCount")}
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": [_NAME, *columns], "rows": rows}


def _age(stamp: Any, now: float) -> str:
    """``translateTimestampSince``: ``<unknown>`` without a timestamp."""
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "<unknown>"
    return human_duration(now - when)


def _printer(handler: APIHandler, res: Resource, now: float) -> tuple[list[dict[str, Any]], Row]:
    """The kind's columns after Name and its cells: a built-in printer, a CRD's printer columns, or the default."""
    if res.builtin:
        if res.kind in PRINTERS:
            return PRINTERS[res.kind]
        return [_column("Created At", "date", description="CreationTimestamp is a timestamp representing the "
                        "server time when this object was created.")], \
            lambda o, _age: [(o.get("metadata") or {}).get("creationTimestamp", "")]
    printed = _crd_columns(handler, res)
    columns = [_column(c.get("name", ""), str(c.get("type", "string")), str(c.get("format", "")),
                       str(c.get("description", ""))) for c in printed]

    def cells(obj: dict[str, Any], _age_: str) -> list[Any]:
        out: list[Any] = []
        for c in printed:
            value = _json_path(obj, str(c.get("jsonPath", "")))
            if c.get("type") == "date" and value is not None:
                value = _age(value, now)
            out.append(value)
        return out

    return columns, cells


def _crd_columns(handler: APIHandler, res: Resource) -> list[dict[str, Any]]:
    """The version's ``additionalPrinterColumns`` (``Age`` from ``.metadata.creationTimestamp`` when none)."""
    for crd in handler.api._store.get(CRD_KIND, {}).values():
        spec = crd.spec
        if spec.get("group") == res.group and (spec.get("names") or {}).get("plural") == res.plural:
            for v in spec.get("versions") or []:
                if v.get("name") == res.version and v.get("additionalPrinterColumns"):
                    return list(v["additionalPrinterColumns"])
    return [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]


def _json_path(doc: Any, path: str) -> Any:
    """A printer column's simple JSONPath (``.spec.size``); a path that finds nothing is an empty cell (None)."""
    for field in (f for f in path.strip("{}").split(".") if f):
        if not isinstance(doc, dict):
            return None
        doc = doc.get(field)
    return doc
