"""The served API applies what kube-apiserver's schemas say: a CRD's structural schema on its custom resources
(``harness/kube/_http/_schema.py``)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import yaml  # type: ignore[import-untyped]

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
    everything (``crd_test`` in ``test_httpapi.py`` covers that too). With ``fieldValidation=Strict`` a field pruning
    would drop is a 400 (the strict decoder's error through ``handlers/create.go``'s ``transformDecodeError``)."""
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
            got["strict"] = await c.post(f"{APPS}?fieldValidation=Strict", json=app("s", {"image": "s", "bogus": 1}))
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
    strict = got["strict"].json()  # fieldValidation=Strict (what kubectl sends): the strict decoder's 400
    assert got["strict"].status_code == 400 and strict["reason"] == "BadRequest"
    assert strict["message"] == ('App in version "v1" cannot be handled as a App: strict decoding error: '
                                 'unknown field "spec.bogus"')

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


def _nulls(value: Any) -> bool:
    """Whether a document still has the JSON Schema conversion's ``"null"`` types in it."""
    if isinstance(value, dict):
        return value.get("type") == "null" or isinstance(value.get("type"), list) or any(map(_nulls, value.values()))
    return isinstance(value, list) and any(map(_nulls, value))


def test_openapi_v2_and_v3_served() -> None:
    """``/openapi/v3`` is kube-openapi's ``handler3`` discovery (``pkg/handler3/handler.go``: each group-version's
    ``serverRelativeURL`` with a ``?hash=``), each group-version its OpenAPI 3.0 document; ``/openapi/v2`` the
    swagger 2.0 one (``pkg/handler/handler.go``), 406 when only protobuf is accepted. Built-in kinds carry upstream's
    definitions (``api/openapi-spec``), a CRD's kind the schema ``apiextensions-apiserver``'s
    ``pkg/controller/openapi/builder/builder.go`` builds (its ``openAPIV3Schema`` with ``metadata`` as ObjectMeta
    and ``x-kubernetes-group-version-kind``). The PATCH of each kind lists ``fieldValidation`` and its patch types,
    which cli-runtime's ``query_param_verifier_v3.go`` and kubectl's ``apply/patcher.go``
    (``gvkSupportsPatchOpenAPIV3``) look for before sending ``fieldValidation=Strict`` and a strategic merge patch."""
    got: dict[str, httpx.Response] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="t"), base_url="http://kube") as c:
            got["before"] = await c.get("/openapi/v3")
            assert (await c.post(CRDS, json=crd(SCHEMA))).status_code == 201
            got["root"] = await c.get("/openapi/v3")
            got["apps"] = await c.get("/openapi/v3/apis/apps/v1")
            got["core"] = await c.get("/openapi/v3/api/v1")
            got["crd"] = await c.get("/openapi/v3/apis/example.com/v1")
            got["nope"] = await c.get("/openapi/v3/apis/nope.example.com/v1")
            got["v2"] = await c.get("/openapi/v2", headers={"Accept": "application/json"})
            got["proto"] = await c.get("/openapi/v2", headers={
                "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})

    clean(run(scenario))
    assert "apis/example.com/v1" not in got["before"].json()["paths"]
    root = got["root"].json()["paths"]
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/example.com/v1"} <= set(root)
    assert root["apis/apps/v1"]["serverRelativeURL"].startswith("/openapi/v3/apis/apps/v1?hash=")

    apps = got["apps"].json()
    assert apps["openapi"].startswith("3.0")
    schemas = apps["components"]["schemas"]
    dep = schemas["io.k8s.api.apps.v1.Deployment"]
    assert dep["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert dep["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]
    assert schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]["type"] == "integer"
    assert "io.k8s.api.core.v1.PodSpec" in schemas and "io.k8s.api.core.v1.Pod" not in schemas  # only what it needs
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"
    patch = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert {"fieldValidation", "fieldManager", "dryRun", "force"} <= {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    assert not _nulls(apps) and not _nulls(got["core"].json())
    assert "io.k8s.api.core.v1.Pod" in got["core"].json()["components"]["schemas"]
    assert "/api/v1/nodes/{name}" in got["core"].json()["paths"]  # cluster-scoped: no namespace in the path

    custom = got["crd"].json()
    app_schema = custom["components"]["schemas"]["com.example.v1.App"]
    assert app_schema["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "App"}]
    assert app_schema["properties"]["spec"]["properties"]["size"] == SCHEMA["properties"]["spec"]["properties"]["size"]
    assert app_schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in custom["components"]["schemas"]
    custom_patch = custom["paths"]["/apis/example.com/v1/namespaces/{namespace}/apps/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in custom_patch["requestBody"]["content"]
    assert got["nope"].status_code == 404

    v2 = got["v2"].json()
    assert v2["swagger"] == "2.0" and v2["info"]["version"] == "v1.32.0"
    assert v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["spec"]["$ref"] == (
        "#/definitions/io.k8s.api.core.v1.PodSpec")
    assert "com.example.v1.App" in v2["definitions"] and not _nulls(v2)
    assert got["proto"].status_code == 406 and got["proto"].json()["reason"] == "NotAcceptable"


DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = {"content-type": "application/apply-patch+yaml"}
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers: [{containers}]
"""
WEB = "{name: web, image: nginx}"


def owned(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["manager"], m["operation"]): m for m in doc["metadata"]["managedFields"]}


def test_server_side_apply_field_ownership() -> None:
    """Server-side apply as ``apiserver/pkg/endpoints/handlers/patch.go``'s ``applyPatcher`` and the field manager
    (``fieldmanager/internal``, structured-merge-diff's ``merge.Updater.Apply``) answer it: ``fieldManager`` is
    required (``ValidatePatchOptions``: 422), a YAML or JSON body applies, the object is created when missing;
    ``managedFields`` lists per manager and operation the fields set (``FieldsV1``, ``k:{"name":...}`` for a container);
    setting a field an Update manager owns to another value is 409 with ``internal.NewConflictError``'s message and
    ``FieldManagerConflict`` causes, the same value co-owns it, ``force=true`` takes it; a field the applier stops
    naming is removed when nobody else owns it; ``containers`` merge by name (``x-kubernetes-list-map-keys``);
    an apply to ``/status`` writes status alone and creates nothing (the status store has no create)."""
    got: dict[str, httpx.Response] = {}

    def body(replicas: int, containers: str = WEB, labels: str = "") -> bytes:
        text = DEPLOYMENT.format(replicas=replicas, containers=containers)
        return text.replace("  name: web\n", f"  name: web\n  labels: {{{labels}}}\n" if labels else "  name: web\n")

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="t"), base_url="http://kube") as c:
            got["created"] = await c.post(f"{DEPLOYS}?fieldManager=kubectl-client-side-apply",
                                          content=json_of(body(2)), headers={"content-type": "application/json"})
            got["nomanager"] = await c.patch(f"{DEPLOYS}/web", content=body(3), headers=APPLY)
            got["conflict"] = await c.patch(f"{DEPLOYS}/web?fieldManager=bob", content=body(3), headers=APPLY)
            got["same"] = await c.patch(f"{DEPLOYS}/web?fieldManager=bob", content=body(2, labels="team: a"),
                                        headers=APPLY)
            got["forced"] = await c.patch(f"{DEPLOYS}/web?fieldManager=bob&force=true", content=body(3, labels="team: a"),
                                          headers=APPLY)
            got["dropped"] = await c.patch(f"{DEPLOYS}/web?fieldManager=bob", content=body(3), headers=APPLY)
            got["sidecar"] = await c.patch(f"{DEPLOYS}/web?fieldManager=carol",
                                           content=body(3, "{name: side, image: busybox}"), headers=APPLY)
            status = b'{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"status":{"replicas":3}}'
            got["status"] = await c.patch(f"{DEPLOYS}/web/status?fieldManager=ctrl", content=status, headers=APPLY)
            got["nostatus"] = await c.patch(f"{DEPLOYS}/gone/status?fieldManager=ctrl", content=status, headers=APPLY)
            got["json"] = await c.patch("/api/v1/namespaces/default/configmaps/cfg?fieldManager=bob", headers=APPLY,
                                        content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},'
                                                b'"data":{"a":"1"}}')

    clean(run(scenario))
    assert got["created"].status_code == 201
    csa = owned(got["created"].json())[("kubectl-client-side-apply", "Update")]
    assert csa["apiVersion"] == "apps/v1" and csa["fieldsType"] == "FieldsV1"
    assert csa["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"] == {
        'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}
    assert got["nomanager"].status_code == 422 and got["nomanager"].json()["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
    conflict = got["conflict"].json()
    assert got["conflict"].status_code == 409 and conflict["reason"] == "Conflict"
    assert conflict["message"] == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using '
                                   "apps/v1: .spec.replicas")
    assert conflict["details"]["causes"] == [{"reason": "FieldManagerConflict", "field": ".spec.replicas",
                                              "message": 'conflict with "kubectl-client-side-apply" using apps/v1'}]
    same = got["same"].json()
    assert got["same"].status_code == 200 and same["spec"]["replicas"] == 2 and same["metadata"]["labels"] == {"team": "a"}
    assert "f:replicas" in owned(same)[("bob", "Apply")]["fieldsV1"]["f:spec"]  # co-owned: same value
    assert "f:replicas" in owned(same)[("kubectl-client-side-apply", "Update")]["fieldsV1"]["f:spec"]
    forced = got["forced"].json()
    assert got["forced"].status_code == 200 and forced["spec"]["replicas"] == 3
    assert "f:replicas" not in owned(forced)[("kubectl-client-side-apply", "Update")]["fieldsV1"]["f:spec"]
    dropped = got["dropped"].json()
    assert got["dropped"].status_code == 200 and "labels" not in dropped["metadata"]  # bob's alone: removed
    sidecar = got["sidecar"].json()
    assert [c["name"] for c in sidecar["spec"]["template"]["spec"]["containers"]] == ["web", "side"]
    assert 'k:{"name":"side"}' in owned(sidecar)[("carol", "Apply")]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"]
    assert got["status"].status_code == 200 and got["status"].json()["status"] == {"replicas": 3}
    assert got["status"].json()["spec"]["replicas"] == 3 and got["nostatus"].status_code == 404  # no create on /status
    cfg = got["json"].json()
    assert got["json"].status_code == 201 and cfg["data"] == {"a": "1"}
    assert list(owned(cfg)) == [("bob", "Apply")]


def json_of(text: bytes) -> bytes:
    return json.dumps(yaml.safe_load(text)).encode()
