"""The served API applies what kube-apiserver's schemas say: a CRD's structural schema on its custom resources
(``harness/kube/_http/_schema.py``)."""

from __future__ import annotations

from typing import Any

import httpx

import harness as h
from harness.kube import APIServer
from tests.kube.kube_support import clean, run

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APPS = "/apis/example.com/v1/namespaces/default/apps"
MERGE = {"content-type": "application/merge-patch+json"}

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["image"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
                "image": {"type": "string", "pattern": "^[a-z]+$"},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def crd(schema: dict[str, Any] | None) -> dict[str, Any]:
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True}
    if schema is not None:
        version["schema"] = {"openAPIV3Schema": schema}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "apps.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "versions": [version],
                     "names": {"plural": "apps", "singular": "app", "kind": "App"}}}


def app(name: str, spec: Any, **top: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": name}, "spec": spec, **top}


def test_crd_schema_validates_prunes_and_defaults() -> None:
    """A custom resource is decoded, defaulted and validated as apiextensions-apiserver does:
    ``pkg/apiserver/schema/pruning/algorithm.go`` drops fields the schema does not name (not under
    ``x-kubernetes-preserve-unknown-fields``; ``apiVersion``, ``kind`` and ``metadata`` kept at the root),
    ``pkg/apiserver/schema/defaulting/algorithm.go`` fills ``default``s, and ``pkg/registry/customresource/validator.go``
    validates with kube-openapi (``pkg/validation/validate``: ``errors.go``'s ``TooSmall``/``InvalidType``/
    ``EnumFail``/``Required``, converted to field errors by ``apiserver/validation.go`` ``kubeOpenAPIResultToFieldErrors``),
    answered by ``errors.NewInvalid``: 422, reason Invalid, ``<Kind>.<group> "<name>" is invalid: <errors>`` with one
    ``details.causes`` entry per field error. Create, update and patch alike; a version without a schema keeps
    everything (``crd_test`` in ``test_httpapi.py`` covers that too)."""
    got: dict[str, httpx.Response] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="t"), base_url="http://kube") as c:
            assert (await c.post(CRDS, json=crd(SCHEMA))).status_code == 201
            got["small"] = await c.post(APPS, json=app("db", {"image": "pg", "size": 0}))
            got["type"] = await c.post(APPS, json=app("db", {"image": "pg", "size": "big"}))
            got["many"] = await c.post(APPS, json=app("db", {"mode": "slow", "port": True, "image": None}))
            got["pattern"] = await c.post(APPS, json=app("db", {"image": "PG"}))
            got["ok"] = await c.post(APPS, json=app("db", {"image": "pg", "port": "http", "note": None, "junk": 1,
                                                         "config": {"any": {"thing": [1]}}}, junk={"x": 1}))
            got["port"] = await c.post(APPS, json=app("web", {"image": "web", "port": 8080, "size": 10}))
            got["patch"] = await c.patch(f"{APPS}/db", content=b'{"spec":{"size":11}}', headers=MERGE)
            got["put"] = await c.put(f"{APPS}/db", json=app("db", {"image": "pg", "size": -1}))
            got["patched"] = await c.patch(f"{APPS}/db", content=b'{"spec":{"size":5,"extra":1}}', headers=MERGE)
            assert (await c.delete(f"{CRDS}/apps.example.com")).status_code == 200
            assert (await c.post(CRDS, json=crd(None))).status_code == 201
            got["schemaless"] = await c.post(APPS, json=app("free", {"size": "big", "anything": [0]}, junk=1))

    clean(run(scenario))

    small = got["small"].json()
    assert got["small"].status_code == 422 and small["reason"] == "Invalid" and small["code"] == 422
    assert small["message"] == ('App.example.com "db" is invalid: spec.size: Invalid value: 0: spec.size in body '
                                "should be greater than or equal to 1")
    assert small["details"] == {"name": "db", "group": "example.com", "kind": "App", "causes": [
        {"reason": "FieldValueInvalid", "message": "Invalid value: 0: spec.size in body should be greater than or "
         "equal to 1", "field": "spec.size"}]}
    assert got["type"].json()["message"] == ('App.example.com "db" is invalid: spec.size: Invalid value: "string": '
                                             'spec.size in body must be of type integer: "string"')
    assert got["type"].json()["details"]["causes"][0]["reason"] == "FieldValueTypeInvalid"
    many = got["many"].json()
    assert got["many"].status_code == 422 and many["message"].startswith('App.example.com "db" is invalid: [')
    assert {(c["field"], c["reason"], c["message"]) for c in many["details"]["causes"]} == {
        ("spec.mode", "FieldValueNotSupported", 'Unsupported value: "slow": supported values: "fast", "safe"'),
        ("spec.port", "FieldValueTypeInvalid",
         'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'),
        ("spec.image", "FieldValueTypeInvalid",
         'Invalid value: "null": spec.image in body must be of type string: "null"')}
    assert got["pattern"].json()["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "spec.image",
         "message": "Invalid value: \"PG\": spec.image in body should match '^[a-z]+$'"}]

    ok = got["ok"].json()
    assert got["ok"].status_code == 201, ok
    assert ok["spec"] == {"image": "pg", "port": "http", "note": None, "config": {"any": {"thing": [1]}},
                          "size": 3, "mode": "safe"}  # pruned (junk), kept (config, nullable note), defaulted
    assert "junk" not in ok and ok["metadata"]["name"] == "db"
    assert got["port"].status_code == 201 and got["port"].json()["spec"]["port"] == 8080

    for what, bad in (("patch", 11), ("put", -1)):
        assert got[what].status_code == 422, (what, got[what].json())
        assert f"spec.size: Invalid value: {bad}: spec.size in body should be" in got[what].json()["message"]
    patched = got["patched"].json()
    assert got["patched"].status_code == 200 and patched["spec"] == {"image": "pg", "port": "http", "note": None,
                                                                      "config": {"any": {"thing": [1]}},
                                                                      "size": 5, "mode": "safe"}
    free = got["schemaless"].json()
    assert got["schemaless"].status_code == 201 and free["spec"] == {"size": "big", "anything": [0]}
    assert free["junk"] == 1
