"""``kubectl get``'s Table output from the served API (``harness/kube/_http/_table.py``)."""

from __future__ import annotations

import json
from typing import Any

import harness as h
from harness.kube import APIServer
from harness.kube._http._handler import _handler_of
from harness.kube._http._table import human_duration
from tests.kube.kube_support import clean, run

#: what kubectl 1.32's get sends (``kubectl/pkg/cmd/get/get.go`` ``transformRequests``)
ACCEPT = {"accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
                    "g=meta.k8s.io,application/json"}


def test_table_output_for_kubectl_get() -> None:
    """With ``as=Table;g=meta.k8s.io`` a GET answers a ``meta.k8s.io/v1`` Table
    (``apiserver/pkg/endpoints/handlers/response.go`` ``transformObject``): the kind's printer columns
    (``pkg/printers/internalversion/printers.go``: a ConfigMap's Name, Data, Age; a Deployment's Name, Ready,
    Up-to-date, Available, Age), the default convertor's Name and Created At for a kind without a printer
    (``registry/rest/table.go``), a custom resource's ``additionalPrinterColumns`` (``customresource/
    tableconvertor``); rows carry ``PartialObjectMetadata`` unless ``includeObject`` says ``Object`` or ``None``;
    AGE is ``duration.HumanDuration``. Without the Accept the same GET answers the list."""
    got: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        handler = _handler_of(APIServer(world))

        async def call(method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
            raw = b"" if body is None else json.dumps(body).encode()
            reply = await handler.handle(method, path, headers or {}, raw, "t")
            assert reply.code < 300, reply.doc
            return reply.doc

        await call("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"a": "1"}})
        await call("POST", "/apis/apps/v1/namespaces/default/deployments",
                   {"metadata": {"name": "web"}, "spec": {"replicas": 2}})
        await call("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", {"metadata": {"name": "l"}})
        await call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
            "metadata": {"name": "pools.example.com"},
            "spec": {"group": "example.com", "names": {"plural": "pools", "kind": "Pool"}, "scope": "Namespaced",
                     "versions": [{"name": "v1", "served": True, "storage": True, "additionalPrinterColumns": [
                         {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]}]}})
        await call("POST", "/apis/example.com/v1/namespaces/default/pools", {"metadata": {"name": "p"},
                                                                            "spec": {"size": 4}})
        await world.sleep(150.0, "time passes")
        got["cm"] = await call("GET", "/api/v1/namespaces/default/configmaps", headers=ACCEPT)
        got["cm object"] = await call("GET", "/api/v1/namespaces/default/configmaps?includeObject=Object",
                                      headers=ACCEPT)
        got["cm none"] = await call("GET", "/api/v1/namespaces/default/configmaps/c?includeObject=None",
                                    headers=ACCEPT)
        got["deploy"] = await call("GET", "/apis/apps/v1/namespaces/default/deployments", headers=ACCEPT)
        got["lease"] = await call("GET", "/apis/coordination.k8s.io/v1/namespaces/default/leases", headers=ACCEPT)
        got["pool"] = await call("GET", "/apis/example.com/v1/namespaces/default/pools", headers=ACCEPT)
        got["plain"] = await call("GET", "/api/v1/namespaces/default/configmaps")

    clean(run(scenario))
    cm = got["cm"]
    assert cm["kind"] == "Table" and cm["apiVersion"] == "meta.k8s.io/v1" and cm["metadata"]["resourceVersion"]
    assert [c["name"] for c in cm["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert cm["rows"][0]["cells"] == ["c", 1, "2m30s"]
    assert cm["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert cm["rows"][0]["object"]["metadata"]["name"] == "c"
    assert got["cm object"]["rows"][0]["object"]["data"] == {"a": "1"}
    assert "object" not in got["cm none"]["rows"][0] and got["cm none"]["rows"][0]["cells"][0] == "c"
    deploy = got["deploy"]
    assert [c["name"] for c in deploy["columnDefinitions"]] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert deploy["rows"][0]["cells"] == ["web", "0/2", 0, 0, "2m30s"]
    lease = got["lease"]
    assert [c["name"] for c in lease["columnDefinitions"]] == ["Name", "Created At"]
    assert lease["rows"][0]["cells"] == ["l", "2026-01-01T00:00:00Z"]  # (virtual time 0 is harness.sim.EPOCH)
    assert [c["name"] for c in got["pool"]["columnDefinitions"]] == ["Name", "Size"]
    assert got["pool"]["rows"][0]["cells"] == ["p", 4]
    assert got["plain"]["kind"] == "ConfigMapList"


def test_human_duration_matches_upstream() -> None:
    """``apimachinery/pkg/util/duration/duration.go`` ``HumanDuration``, at the edges of each of its ranges."""
    cases = {0: "0s", 119: "119s", 120: "2m", 150: "2m30s", 600: "10m", 10799: "179m", 10800: "3h",
             3 * 3600 + 60: "3h1m", 8 * 3600: "8h", 47 * 3600: "47h", 48 * 3600: "2d", 50 * 3600: "2d2h",
             8 * 86400: "8d", 730 * 86400: "2y", 731 * 86400: "2y1d", 8 * 365 * 86400: "8y"}
    assert {s: human_duration(s) for s in cases} == cases
