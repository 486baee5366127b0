"""OpenAPI v2 and v3 documents of what is served: kubectl reads them to validate, to explain, and to learn which
query parameters (``fieldValidation``) the server takes.

The built-in kinds' schemas are upstream's: the ``definitions`` of Kubernetes
1.32's ``api/openapi-spec/swagger.json``, as the ``kubernetes-validate``
package ships them (converted to JSON Schema: each ``type`` also admits
``null``, objects forbid extra properties, ``IntOrString`` is a ``oneOf``;
:func:`_openapi_schema` turns that back). A custom resource's schema is built
from its CRD version's ``openAPIV3Schema`` as ``apiextensions-apiserver``'s
``pkg/controller/openapi/builder`` does: the schema, ``apiVersion``/``kind`` as
strings, ``metadata`` as ``ObjectMeta``, and ``x-kubernetes-group-version-kind``.

Paths list each resource's collection and item with the verbs served and,
as upstream's do, the ``dryRun``, ``fieldManager`` and ``fieldValidation``
query parameters of the writes and the GVK extension on each operation:
``cli-runtime``'s ``queryParamVerifierV3`` looks for ``fieldValidation`` on the
PATCH of the kind to decide the server validates, and skips client-side
validation (which would need the v2 document as protobuf).
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from typing import Any

from .._objects import copy_json
from ._codec import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from ._resources import Resource

#: the Kubernetes release whose definitions are served (the version ``/version`` reports)
SCHEMA_RELEASE = "v1.32.0"
_V2_REF, _V3_REF = "#/definitions/", "#/components/schemas/"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def builtin_definitions() -> dict[str, Any]:
    """Upstream's definitions by name (``io.k8s.api.apps.v1.Deployment``...), with ``$ref`` as ``#/definitions/``;
    empty when the ``kubernetes-validate`` package is not installed."""
    try:
        root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"{SCHEMA_RELEASE}-local-strict"
        doc = json.loads((root / "_definitions.json").read_text(encoding="utf-8"))
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return {}
    return {name: _openapi_schema(schema, name) for name, schema in doc["$defs"].items()}


def _openapi_schema(schema: Any, name: str = "", prop: str = "") -> Any:
    """A definition as the OpenAPI document has it: the strict JSON Schema conversion undone."""
    if isinstance(schema, list):
        return [_openapi_schema(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    if "oneOf" in schema and name.endswith("intstr.IntOrString"):
        return {"type": "string", "format": "int-or-string",
                **{k: v for k, v in schema.items() if k not in ("oneOf", "type")}}
    if "oneOf" in schema and name.endswith("resource.Quantity"):
        return {"type": "string", **{k: v for k, v in schema.items() if k not in ("oneOf", "type")}}
    out: dict[str, Any] = {}
    for k, v in schema.items():
        if k == "type" and isinstance(v, list):
            kept = [t for t in v if t != "null"]
            if kept:
                out[k] = kept[0]
        elif (k == "additionalProperties" and v is False) or (k == "enum" and prop in ("apiVersion", "kind")):
            continue
        elif k == "$ref" and isinstance(v, str):
            out[k] = _V2_REF + v.rsplit("/", 1)[-1]
        elif k == "properties" and isinstance(v, dict):
            out[k] = {p: _openapi_schema(s, prop=p) for p, s in v.items()}
        else:
            out[k] = _openapi_schema(v)
    return out


def crd_definition(res: Resource, schema: dict[str, Any] | None) -> dict[str, Any]:
    """A custom resource's definition (``builder.BuildOpenAPIV2``/``V3``): its schema, with the object's
    ``apiVersion``, ``kind`` and ``metadata`` described as for every kind; a version without a schema is an object
    that keeps any field."""
    out: dict[str, Any] = copy_json(schema) if schema else {"type": "object",
                                                            "x-kubernetes-preserve-unknown-fields": True}
    props = out.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema of this "
                           "representation of an object."}
    props["kind"] = {"type": "string", "description": "Kind is a string value representing the REST resource this "
                     "object represents."}
    props["metadata"] = {"$ref": _V2_REF + _OBJECT_META, "description": "Standard object's metadata."}
    out["x-kubernetes-group-version-kind"] = [{"group": res.group, "version": res.version, "kind": res.kind}]
    return out


def _refs(value: Any, into: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            into.add(ref.rsplit("/", 1)[-1])
        for v in value.values():
            _refs(v, into)
    elif isinstance(value, list):
        for v in value:
            _refs(v, into)


def closure(defs: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """The definitions ``roots`` need (themselves and every one they reference), sorted by name."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        found: set[str] = set()
        _refs(defs[name], found)
        todo.extend(found - seen)
    return {name: defs[name] for name in sorted(seen)}


def kind_definitions(served: list[Resource], crd_schemas: dict[Resource, dict[str, Any] | None]) -> dict[str, str]:
    """Each served kind's definition name: upstream's for built-ins (by their GVK extension), ``<reversed group>.
    <version>.<Kind>`` for custom resources, as the CRD builder names them."""
    by_gvk = {(g["group"], g["version"], g["kind"]): name for name, d in builtin_definitions().items()
              for g in d.get("x-kubernetes-group-version-kind") or []}
    out: dict[str, str] = {}
    for r in served:
        if r in crd_schemas:
            out[f"{r.api_version}/{r.kind}"] = ".".join(reversed(r.group.split("."))) + f".{r.version}.{r.kind}"
        elif (r.group, r.version, r.kind) in by_gvk:
            out[f"{r.api_version}/{r.kind}"] = by_gvk[(r.group, r.version, r.kind)]
    return out


def _params(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "in": "query", "type": "string", "uniqueItems": True} for n in names]


def paths(served: list[Resource], v3: bool) -> dict[str, Any]:
    """The collection and item path of each resource, with the verbs served and the write parameters upstream
    lists (``endpoints/installer.go`` ``registerResourceHandlers``)."""
    out: dict[str, Any] = {}
    writes = ("dryRun", "fieldManager", "fieldValidation")
    for r in served:
        base = f"/apis/{r.group}/{r.version}" if r.group else f"/api/{r.version}"
        scope = f"{base}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else f"{base}/{r.plural}"
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}

        def op(action: str, verb: str, *params: str, gvk: dict[str, str] = gvk, r: Resource = r) -> dict[str, Any]:
            parameters = _params(*params)
            if v3:
                parameters = [{"name": p["name"], "in": "query", "schema": {"type": "string", "uniqueItems": True}}
                              for p in parameters]
            return {"operationId": f"{action}{r.kind}", "tags": [r.api_version],
                    "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk,
                    "parameters": parameters, "responses": {"200": {"description": "OK"}}}

        if r.review:
            out[f"{base}/{r.plural}"] = {"post": op("create", "post", *writes)}
            continue
        out[scope] = {"get": op("list", "list"), "post": op("create", "post", *writes)}
        patch = op("patch", "patch", *writes, "force")
        if v3:  # kubectl's patcher merges strategically only where the PATCH takes it (gvkSupportsPatchOpenAPIV3)
            types = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_MERGE_PATCH] if r.builtin else [])
            patch["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in types}}
        out[f"{scope}/{{name}}"] = {"get": op("read", "get"), "put": op("replace", "put", *writes), "patch": patch,
                                    "delete": op("delete", "delete", "dryRun")}
    return out


def v3_schemas(defs: dict[str, Any]) -> dict[str, Any]:
    """v2 definitions as v3 component schemas: references moved, and a reference with siblings wrapped in
    ``allOf`` (kube-openapi's v3 builder does so, as OpenAPI 3.0 ignores a ``$ref``'s siblings)."""
    def move(value: Any) -> Any:
        if isinstance(value, list):
            return [move(v) for v in value]
        if not isinstance(value, dict):
            return value
        if isinstance(value.get("$ref"), str):
            ref = {"$ref": _V3_REF + value["$ref"].rsplit("/", 1)[-1]}
            rest = {k: move(v) for k, v in value.items() if k != "$ref"}
            return {"allOf": [ref], **rest} if rest else ref
        return {k: move(v) for k, v in value.items()}
    out: dict[str, Any] = move(defs)
    return out


def etag(doc: Any) -> str:
    """The hash a v3 discovery entry carries (``?hash=``): of the document's canonical JSON."""
    return hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:128].upper()


def document(path: str, served: list[Resource], crd_schemas: dict[Resource, dict[str, Any] | None]) -> Any:
    """The document at ``path`` (``/openapi/v2``, ``/openapi/v3``, ``/openapi/v3/api/v1``,
    ``/openapi/v3/apis/<group>/<version>``), or None when there is none there."""
    defs = dict(builtin_definitions())
    names = kind_definitions(served, crd_schemas)
    for r, schema in crd_schemas.items():
        defs[names[f"{r.api_version}/{r.kind}"]] = crd_definition(r, schema)
    info = {"title": "Kubernetes", "version": SCHEMA_RELEASE}
    listed = [r for r in served if f"{r.api_version}/{r.kind}" in names]
    if path == "/openapi/v2":
        return {"swagger": "2.0", "info": info, "paths": paths(listed, v3=False),
                "definitions": closure(defs, sorted(set(names.values())))}
    by_gv: dict[str, list[Resource]] = {}
    for r in listed:
        by_gv.setdefault(f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}", []).append(r)

    def gv_doc(gv: str) -> dict[str, Any]:
        roots = sorted({names[f"{r.api_version}/{r.kind}"] for r in by_gv[gv]})
        return {"openapi": "3.0.0", "info": info, "paths": paths(by_gv[gv], v3=True),
                "components": {"schemas": v3_schemas(closure(defs, roots))}}

    if path == "/openapi/v3":
        return {"paths": {gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={etag(gv_doc(gv))}"}
                          for gv in sorted(by_gv)}}
    gv = path.removeprefix("/openapi/v3/")
    return gv_doc(gv) if gv in by_gv else None
