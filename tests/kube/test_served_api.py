"""The served API answers as kube-apiserver does: query booleans, media types, dryRun, DELETE's answer per kind,
status lines, the self-subject reviews (``harness/kube/_http/``), and ``serve``'s exit on a signal."""

from __future__ import annotations

import base64
from typing import Any

import httpx

import harness as h
from harness.kube import APIServer, KubeObject
from harness.kube._http._handler import _handler_of
from tests.kube.kube_support import clean, run

NS = "default"
CMS = "/api/v1/namespaces/default/configmaps"


def raw(api: APIServer, name: str = "raw") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=api.transport(client=name), base_url="http://kube")


def test_watch_param_accepts_true_forms() -> None:
    """``watch`` is read by ``runtime.Convert_Slice_string_To_bool``
    (staging/src/k8s.io/apimachinery/pkg/runtime/conversion.go), which the generated
    ``Convert_url_Values_To_v1_ListOptions`` calls for ``ListOptions.Watch`` and ``AllowWatchBookmarks``:
    absent, ``0`` and ``false`` in any case are false, every other value is true (``strconv.ParseBool`` is not
    used, so no value is a 400); ``handlers/get.go`` ``ListResource`` then serves a watch for true."""
    truthy = ["true", "True", "1", "t", "T", "TRUE", "", "yes"]
    falsy = ["false", "0", "False", "FALSE"]
    got: dict[str, bool] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "x"))
        handler = _handler_of(api)
        for value in truthy + falsy:
            reply = await handler.handle("GET", f"{CMS}?watch={value}", {}, b"", "t")
            assert reply.code == 200, (value, reply.doc)
            got[value] = reply.watch is not None
            if reply.watch is not None:
                reply.watch.stop()
            else:
                assert reply.doc["kind"] == "ConfigMapList", reply.doc
        plain = await handler.handle("GET", CMS, {}, b"", "t")
        assert plain.watch is None and plain.doc["kind"] == "ConfigMapList"

    clean(run(scenario))
    assert got == {**{v: True for v in truthy}, **{v: False for v in falsy}}


def test_protobuf_body_is_415() -> None:
    """A body the server does not read is ``negotiation.NewUnsupportedMediaTypeError``
    (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation/errors.go), raised by
    ``negotiation.NegotiateInputSerializer`` in ``handlers/create.go``/``update.go``/``delete.go``: 415 with reason
    ``UnsupportedMediaType``. Protobuf is read for the built-in kinds Go clients send it for (``_protobuf.py``,
    tests/kube/test_served_protobuf.py); a protobuf body of another kind (a CustomResourceDefinition, which
    client-go's scheme leaves to JSON) is a 415 that names it, as is a media type neither JSON nor protobuf (CBOR,
    which kube-apiserver 1.32 serves only behind a feature gate: client-go then retries in JSON, ``rest/client.go``
    ``requestClientContentConfigProvider``); a JSON body without a Content-Type is still read."""
    got: dict[str, httpx.Response] = {}
    proto = {"Content-Type": "application/vnd.kubernetes.protobuf"}

    def envelope(api_version: str, kind: str) -> bytes:  # k8s\x00 + runtime.Unknown{typeMeta{apiVersion, kind}}
        type_meta = b"\n" + bytes([len(api_version)]) + api_version.encode() + b"\x12" + bytes([len(kind)]) + kind.encode()
        return b"k8s\x00\n" + bytes([len(type_meta)]) + type_meta

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with raw(api) as c:
            crds, crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "apiextensions.k8s.io/v1"
            got["create"] = await c.post(crds, content=envelope(crd, "CustomResourceDefinition"), headers=proto)
            got["update"] = await c.put(f"{crds}/w.example", content=envelope(crd, "CustomResourceDefinition"),
                                        headers=proto)
            got["cbor"] = await c.post(CMS, content=b"\xd9\xd9\xf7\xa0", headers={"Content-Type": "application/cbor"})
            got["json"] = await c.post(CMS, content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}')
        assert api.peek("ConfigMap", NS, "y") is not None

    clean(run(scenario))
    crd = "CustomResourceDefinition (apiextensions.k8s.io/v1)"
    for what, named in (("create", crd), ("update", crd), ("cbor", "application/json")):
        body = got[what].json()
        assert got[what].status_code == 415, (what, body)
        assert (body["kind"], body["status"], body["reason"], body["code"]) == (
            "Status", "Failure", "UnsupportedMediaType", 415), (what, body)
        assert named in body["message"] and "application/json" in body["message"], (what, body)
    assert got["json"].status_code == 201


def test_dry_run_never_writes() -> None:
    """``dryRun=All`` runs the write through ``DryRunnableStorage``
    (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/dryrun.go): every check, the same status code and
    the object as it would be, nothing stored (no revision, no watch event); an unknown value fails
    ``ValidateDryRun`` (staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go) as a 422
    ``Invalid`` of the verb's options (``handlers/create.go``, ``update.go``, ``patch.go``, ``delete.go``)."""
    got: dict[str, httpx.Response] = {}
    events: list[Any] = []
    before: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "x", labels={"a": "1"}))
        await api.create(KubeObject("ConfigMap", NS, "held", finalizers=["example.com/hold"]))
        before["rv"], before["x"] = api.resource_version, api.peek("ConfigMap", NS, "x")
        before["held"] = api.peek("ConfigMap", NS, "held")
        api.watch("ConfigMap", events.append)
        async with raw(api) as c:
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y"}, "data": {"k": "v"}}
            got["create"] = await c.post(f"{CMS}?dryRun=All", json=cm)
            got["generate"] = await c.post(f"{CMS}?dryRun=All", json={**cm, "metadata": {"generateName": "g-"}})
            got["exists"] = await c.post(f"{CMS}?dryRun=All", json={**cm, "metadata": {"name": "x"}})
            got["update"] = await c.put(f"{CMS}/x?dryRun=All", json={**cm, "metadata": {"name": "x"}})
            got["stale"] = await c.put(f"{CMS}/x?dryRun=All",
                                       json={**cm, "metadata": {"name": "x", "resourceVersion": "1000"}})
            for ctype, body in (("application/merge-patch+json", b'{"data":{"m":"1"}}'),
                                ("application/json-patch+json", b'[{"op":"add","path":"/data","value":{"j":"1"}}]'),
                                ("application/strategic-merge-patch+json", b'{"data":{"s":"1"}}')):
                got[ctype] = await c.patch(f"{CMS}/x?dryRun=All", content=body, headers={"Content-Type": ctype})
            got["delete"] = await c.request("DELETE", f"{CMS}/x?dryRun=All")
            got["delete_body"] = await c.request("DELETE", f"{CMS}/x", json={"dryRun": ["All"]})
            got["delete_held"] = await c.request("DELETE", f"{CMS}/held?dryRun=All")
            got["missing"] = await c.request("DELETE", f"{CMS}/nope?dryRun=All")
            got["unknown"] = await c.post(f"{CMS}?dryRun=Some", json=cm)
            got["unknown_delete"] = await c.request("DELETE", f"{CMS}/x", json={"dryRun": ["Some"]})
        assert api.resource_version == before["rv"]
        assert api.peek("ConfigMap", NS, "x") == before["x"] and api.peek("ConfigMap", NS, "held") == before["held"]
        assert api.peek("ConfigMap", NS, "y") is None and len(api.peek_all("ConfigMap")) == 2

    clean(run(scenario))
    assert events == []
    created = got["create"].json()
    assert got["create"].status_code == 201 and created["data"] == {"k": "v"} and created["metadata"]["uid"]
    assert "resourceVersion" not in created["metadata"] and created["metadata"]["name"] == "y"
    assert got["generate"].status_code == 201 and got["generate"].json()["metadata"]["name"].startswith("g-")
    assert (got["exists"].status_code, got["exists"].json()["reason"]) == (409, "AlreadyExists")
    assert got["update"].status_code == 200 and got["update"].json()["data"] == {"k": "v"}
    assert got["update"].json()["metadata"]["resourceVersion"] == str(before["x"].resource_version)
    assert (got["stale"].status_code, got["stale"].json()["reason"]) == (409, "Conflict")
    for ctype, data in (("application/merge-patch+json", {"m": "1"}), ("application/json-patch+json", {"j": "1"}),
                        ("application/strategic-merge-patch+json", {"s": "1"})):
        assert got[ctype].status_code == 200, got[ctype].json()
        assert got[ctype].json()["data"] == data and got[ctype].json()["metadata"]["labels"] == {"a": "1"}
    for what in ("delete", "delete_body"):
        assert got[what].status_code == 200 and got[what].json()["kind"] == "Status", got[what].json()
    held = got["delete_held"].json()
    assert held["kind"] == "ConfigMap" and held["metadata"]["deletionTimestamp"]
    assert (got["missing"].status_code, got["missing"].json()["reason"]) == (404, "NotFound")
    for what in ("unknown", "unknown_delete"):
        assert (got[what].status_code, got[what].json()["reason"]) == (422, "Invalid"), got[what].json()
        assert 'supported values: "All"' in got[what].json()["message"]


def test_delete_answers_as_upstream_per_kind() -> None:
    """``store.go`` ``finalizeDelete`` (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go) answers
    a removed object with itself where the kind's store sets ``ReturnDeletedObject`` (pkg/registry/core/service/
    storage/storage.go, pod/storage/storage.go, namespace/storage/storage.go, persistentvolume/storage/storage.go,
    serviceaccount/storage/storage.go; custom resources in apiextensions-apiserver/pkg/registry/customresource/etcd.go)
    and with a Success Status elsewhere (ConfigMap); an object only marked for deletion is answered with itself,
    200, or 202 when ``orphanDependents`` is false (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go).
    The official client reads ``delete_namespaced_service``'s answer as a ``V1Service``."""
    got: dict[str, httpx.Response] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("Service", NS, "svc"))
        await api.create(KubeObject("ServiceAccount", NS, "sa"))
        await api.create(KubeObject("ConfigMap", NS, "cm"))
        await api.create(KubeObject("ConfigMap", NS, "held", finalizers=["example.com/hold"]))
        await api.create(KubeObject("ConfigMap", NS, "held2", finalizers=["example.com/hold"]))
        async with raw(api) as c:
            got["svc"] = await c.request("DELETE", "/api/v1/namespaces/default/services/svc")
            got["sa"] = await c.request("DELETE", "/api/v1/namespaces/default/serviceaccounts/sa")
            got["cm"] = await c.request("DELETE", f"{CMS}/cm")
            got["held"] = await c.request("DELETE", f"{CMS}/held")
            got["held2"] = await c.request("DELETE", f"{CMS}/held2", json={"orphanDependents": False})

    clean(run(scenario))
    for what, kind in (("svc", "Service"), ("sa", "ServiceAccount")):
        assert got[what].status_code == 200 and got[what].json()["kind"] == kind, got[what].json()
    cm = got["cm"].json()
    assert got["cm"].status_code == 200
    assert (cm["kind"], cm["status"], cm["details"]["name"], cm["details"]["kind"]) == (
        "Status", "Success", "cm", "configmaps")
    assert got["held"].status_code == 200 and got["held"].json()["metadata"]["deletionTimestamp"]
    assert got["held2"].status_code == 202 and got["held2"].json()["kind"] == "ConfigMap"
    try:
        from kubernetes.client import ApiClient, V1Service
    except ImportError:
        return

    # what delete_namespaced_service does with the body (its response type is V1Service)
    service = ApiClient().deserialize(got["svc"].text, "V1Service", "application/json")
    assert isinstance(service, V1Service) and service.metadata.name == "svc"


def test_self_subject_reviews_are_allowed() -> None:
    """Issue 49 item 11: `kubectl auth can-i` POSTs a SelfSubjectAccessReview
    (pkg/registry/authorization/selfsubjectaccessreview/rest.go answers it at once, storing nothing); with no
    authorization here everything is allowed. Discovery lists both reviews with the one verb they take."""
    import json

    async def scenario(world: h.World) -> None:
        handler = _handler_of(APIServer(world))
        body = json.dumps({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                           "spec": {"resourceAttributes": {"verb": "create", "resource": "pods",
                                                           "namespace": "default"}}}).encode()
        reply = await handler.handle("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                     {"content-type": "application/json"}, body, "kubectl")
        got["access"] = (reply.code, reply.doc)
        reply = await handler.handle("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                                     {"content-type": "application/json"},
                                     b'{"kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}', "kubectl")
        got["rules"] = (reply.code, reply.doc)
        reply = await handler.handle("GET", "/apis/authorization.k8s.io/v1", {}, b"", "kubectl")
        got["discovery"] = reply.doc
        reply = await handler.handle("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {}, b"",
                                     "kubectl")
        got["list"] = reply.code

    got: dict[str, Any] = {}
    clean(run(scenario))
    code, doc = got["access"]
    assert code == 201 and doc["status"]["allowed"] is True and doc["spec"]["resourceAttributes"]["verb"] == "create"
    code, doc = got["rules"]
    assert code == 201 and doc["status"]["resourceRules"][0]["verbs"] == ["*"]
    names = {r["name"]: r["verbs"] for r in got["discovery"]["resources"]}
    assert names == {"selfsubjectaccessreviews": ["create"], "selfsubjectrulesreviews": ["create"]}
    assert got["list"] == 405


def test_served_size_limits() -> None:
    """kube-apiserver's limits on a request, for every transport (they share the one handler; ``_limits.py``):

    * a body over ``MaxRequestBodyBytes`` (3 MiB, k8s.io/apiserver pkg/server/config.go) is 413
      ``RequestEntityTooLarge``, ``limitedReadBody``'s (pkg/endpoints/handlers/rest.go); the limit itself passes;
    * a ConfigMap's or a Secret's data over ``core.MaxSecretSize`` (1 MiB) is 422, ``ValidateConfigMap`` /
      ``ValidateSecret`` (pkg/apis/core/validation) through ``field.TooLong`` (apimachinery 0.32's wording), on a
      create, an update and a patch alike; a Secret counts decoded bytes (base64 ``data``) and its ``stringData``;
    * an integer query parameter ``strconv.ParseInt`` refuses (``timeoutSeconds``, ``limit``,
      ``gracePeriodSeconds``) is 400 with Go's message, as ``ParameterCodec.DecodeParameters`` answers it; a
      DELETE with a body reads no query (``handlers/delete.go``)."""
    mib = 1024 * 1024
    got: dict[str, httpx.Response] = {}
    after: dict[str, Any] = {}

    def cm(name: str, size: int) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "x" * size}}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with raw(api) as c:
            got["huge"] = await c.post(CMS, json=cm("huge", 10 * 1000 * 1000))
            got["huge_patch"] = await c.patch(f"{CMS}/huge", content=b"{" + b" " * (3 * mib) + b"}",
                                              headers={"Content-Type": "application/merge-patch+json"})
            got["big"] = await c.post(CMS, json=cm("big", 3 * mib // 2))
            got["edge"] = await c.post(CMS, json=cm("edge", mib))
            got["normal"] = await c.post(CMS, json=cm("normal", 10))
            got["grow"] = await c.patch(f"{CMS}/normal", json={"data": {"more": "y" * mib}},
                                        headers={"Content-Type": "application/merge-patch+json"})
            got["grow_put"] = await c.put(f"{CMS}/normal", json=cm("normal", mib + 1))
            secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
            got["secret_big"] = await c.post("/api/v1/namespaces/default/secrets",
                                             json={**secret, "stringData": {"a": "z" * (mib // 2 + 1)},
                                                   "data": {"b": base64.b64encode(b"z" * (mib // 2)).decode()}})
            got["secret_ok"] = await c.post("/api/v1/namespaces/default/secrets",  # 1.33 MB of base64: 1 MiB
                                            json={**secret, "data": {"b": base64.b64encode(b"z" * mib).decode()}})
            got["watch_abc"] = await c.get(f"{CMS}?watch=1&timeoutSeconds=abc")
            got["list_limit"] = await c.get(f"{CMS}?limit=1.5")
            got["list_timeout"] = await c.get(f"{CMS}?timeoutSeconds=")
            got["range"] = await c.get(f"{CMS}?limit=99999999999999999999")
            got["grace"] = await c.delete(f"{CMS}/normal?gracePeriodSeconds=abc")
            got["grace_body"] = await c.request("DELETE", f"{CMS}/edge?gracePeriodSeconds=abc",
                                                json={"gracePeriodSeconds": "30"})
            got["list_ok"] = await c.get(f"{CMS}?limit=1&timeoutSeconds=%2B5")
            watch = await _handler_of(api).handle("GET", f"{CMS}?watch=1&timeoutSeconds=5", {}, b"", "t")
            after["watch"] = watch.code, watch.watch is not None
            if watch.watch is not None:
                watch.watch.stop()
        after["normal"] = api.peek("ConfigMap", NS, "normal")
        after["stored"] = sorted(o.name for o in api.peek_all("ConfigMap"))

    clean(run(scenario))
    for what in ("huge", "huge_patch"):
        body = got[what].json()
        assert got[what].status_code == 413, (what, body)
        assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "Request entity too large: limit is 3145728", "reason": "RequestEntityTooLarge",
                        "code": 413}, what
    too_long = "Too long: may not be more than 1048576 bytes"
    for what, name, field in (("big", "big", "[]"), ("grow", "normal", "[]"), ("grow_put", "normal", "[]"),
                              ("secret_big", "s", "data")):
        body = got[what].json()
        assert (got[what].status_code, body["reason"]) == (422, "Invalid"), (what, body)
        kind = "Secret" if field == "data" else "ConfigMap"
        assert body["message"] == f'{kind} "{name}" is invalid: {field}: {too_long}', body["message"]
        assert body["details"] == {"name": name, "kind": kind,
                                   "causes": [{"reason": "FieldValueTooLong", "message": too_long, "field": field}]}
    for what in ("edge", "normal", "secret_ok"):
        assert got[what].status_code == 201, (what, got[what].json())
    bad = {"watch_abc": "abc", "list_limit": "1.5", "list_timeout": "", "grace": "abc"}
    for what, value in bad.items():
        body = got[what].json()
        assert (got[what].status_code, body["reason"]) == (400, "BadRequest"), (what, body)
        assert body["message"] == f'strconv.ParseInt: parsing "{value}": invalid syntax', body
        assert "details" not in body
    assert got["range"].json()["message"] == 'strconv.ParseInt: parsing "99999999999999999999": value out of range'
    assert got["grace_body"].status_code == 400, got["grace_body"].json()  # the body's type, not the query's value
    assert "cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds" in \
        got["grace_body"].json()["message"]
    listed = got["list_ok"].json()
    assert got["list_ok"].status_code == 200 and len(listed["items"]) == 1 and listed["metadata"]["continue"]
    assert after["watch"] == (200, True)
    assert after["normal"] is not None and after["normal"].extra["data"] == {"k": "x" * 10}
    assert after["stored"] == ["edge", "normal"]
