"""The ``scale`` subresource of the served API (``harness/kube/_http/_scale.py``)."""

from __future__ import annotations

import json
from typing import Any

import harness as h
from harness.kube import APIServer
from harness.kube._http._handler import _handler_of
from tests.kube.kube_support import clean, run

DEPLOY = "/apis/apps/v1/namespaces/default/deployments"
CRD = {"metadata": {"name": "pools.example.com"},
       "spec": {"group": "example.com", "names": {"plural": "pools", "kind": "Pool"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {
                    "status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready",
                                            "labelSelectorPath": ".status.selector"}}}]}}


def test_scale_subresource() -> None:
    """``pkg/registry/apps/deployment/storage/storage.go`` ``ScaleREST`` (and ReplicaSet's, StatefulSet's): GET
    answers an ``autoscaling/v1`` Scale (``spec.replicas``, ``status.replicas``, ``status.selector`` as the
    selector's string); PUT and PATCH write ``spec.replicas`` (a new generation) and answer the new Scale; a stale
    Scale resourceVersion is 409; negative replicas are 422 (``ValidateScale``). A CRD version declaring
    ``subresources.scale`` serves it through its paths (``customresource/etcd.go`` ``ScaleREST``); discovery lists
    ``deployments/scale`` with group ``autoscaling``, kind ``Scale`` (what kubectl's scale client resolves)."""
    got: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        handler = _handler_of(APIServer(world))

        async def call(method: str, path: str, body: Any = None, ctype: str = "") -> tuple[int, Any]:
            headers = {"content-type": ctype} if ctype else {}
            raw = b"" if body is None else json.dumps(body).encode()
            reply = await handler.handle(method, path, headers, raw, "t")
            return reply.code, reply.doc

        selector = {"matchLabels": {"app": "web"}, "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]}]}
        await call("POST", DEPLOY, {"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": selector}})
        await call("PATCH", f"{DEPLOY}/web/status", {"status": {"replicas": 2}}, "application/merge-patch+json")
        got["get"] = await call("GET", f"{DEPLOY}/web/scale")
        rv = got["get"][1]["metadata"]["resourceVersion"]
        got["put"] = await call("PUT", f"{DEPLOY}/web/scale",
                                {"metadata": {"name": "web", "resourceVersion": rv}, "spec": {"replicas": 4}})
        got["stale"] = (await call("PUT", f"{DEPLOY}/web/scale",
                                   {"metadata": {"name": "web", "resourceVersion": rv}, "spec": {"replicas": 5}}))[0]
        got["patch"] = await call("PATCH", f"{DEPLOY}/web/scale", {"spec": {"replicas": 3}},
                                  "application/merge-patch+json")
        got["negative"] = await call("PATCH", f"{DEPLOY}/web/scale", {"spec": {"replicas": -1}},
                                     "application/merge-patch+json")
        got["deploy"] = (await call("GET", f"{DEPLOY}/web"))[1]
        got["configmap"] = (await call("GET", "/api/v1/namespaces/default/configmaps/x/scale"))[0]
        got["discovery"] = [r for r in (await call("GET", "/apis/apps/v1"))[1]["resources"]
                            if r["name"].endswith("/scale")]
        await call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
        pools = "/apis/example.com/v1/namespaces/default/pools"
        await call("POST", pools, {"metadata": {"name": "p"}, "spec": {"size": 1}})
        await call("PATCH", f"{pools}/p/status", {"status": {"ready": 1, "selector": "app=p"}},
                   "application/merge-patch+json")
        got["crd patch"] = await call("PATCH", f"{pools}/p/scale", {"spec": {"replicas": 6}},
                                      "application/merge-patch+json")
        got["crd"] = (await call("GET", f"{pools}/p"))[1]

    clean(run(scenario))
    code, scale = got["get"]
    assert code == 200 and scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": "app=web,tier in (a,b)"}
    assert got["put"][0] == 200 and got["put"][1]["spec"] == {"replicas": 4}
    assert got["stale"] == 409
    assert got["patch"][0] == 200 and got["patch"][1]["spec"] == {"replicas": 3}
    code, doc = got["negative"]
    assert code == 422 and "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in doc["message"]
    assert got["deploy"]["spec"]["replicas"] == 3 and got["deploy"]["metadata"]["generation"] == 3
    assert got["configmap"] == 404
    assert [(r["name"], r["group"], r["version"], r["kind"]) for r in got["discovery"]] == [
        ("deployments/scale", "autoscaling", "v1", "Scale"), ("replicasets/scale", "autoscaling", "v1", "Scale"),
        ("statefulsets/scale", "autoscaling", "v1", "Scale")]
    code, doc = got["crd patch"]
    assert code == 200 and doc["spec"] == {"replicas": 6} and doc["status"] == {"replicas": 1, "selector": "app=p"}
    assert got["crd"]["spec"] == {"size": 6}
