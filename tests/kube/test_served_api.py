"""The served API answers as kube-apiserver does: query booleans, media types, dryRun, DELETE's answer per kind,
status lines, the self-subject reviews (``harness/kube/_http/``), and ``serve``'s exit on a signal."""

from __future__ import annotations

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
    """A body whose media type the serializer does not serve is ``negotiation.NewUnsupportedMediaTypeError``
    (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/negotiation/errors.go), raised by
    ``negotiation.NegotiateInputSerializer`` in ``handlers/create.go``/``update.go``/``delete.go``: 415 with reason
    ``UnsupportedMediaType``, on which client-go's ``rest`` client retries in JSON; a JSON body without a
    Content-Type is still read."""
    got: dict[str, httpx.Response] = {}
    proto = {"Content-Type": "application/vnd.kubernetes.protobuf"}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "x"))
        async with raw(api) as c:
            body = b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap"
            got["create"] = await c.post(CMS, content=body, headers=proto)
            got["update"] = await c.put(f"{CMS}/x", content=body, headers=proto)
            got["delete"] = await c.request("DELETE", f"{CMS}/x", content=body, headers=proto)
            got["json"] = await c.post(CMS, content=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}')
        assert api.peek("ConfigMap", NS, "x") is not None and api.peek("ConfigMap", NS, "y") is not None

    clean(run(scenario))
    for what in ("create", "update", "delete"):
        body = got[what].json()
        assert got[what].status_code == 415, (what, body)
        assert (body["kind"], body["status"], body["reason"], body["code"]) == (
            "Status", "Failure", "UnsupportedMediaType", 415), (what, body)
        assert "application/json" in body["message"]
    assert got["json"].status_code == 201
