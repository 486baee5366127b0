"""What runs beside a served apiserver (``harness/kube/_http/_cluster.py``): the namespace controller and the
garbage collector, driven through the REST handler as ``serve`` drives them, over the namespaces every apiserver has."""

from __future__ import annotations

import json
from typing import Any

import harness as h
from harness.kube import APIServer
from harness.kube._http._cluster import start_cluster
from harness.kube._http._handler import APIHandler, _handler_of
from tests.kube.kube_support import clean, run

DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
RSS = "/apis/apps/v1/namespaces/default/replicasets"


async def call(handler: APIHandler, method: str, path: str, body: Any = None) -> Any:
    reply = await handler.handle(method, path, {}, b"" if body is None else json.dumps(body).encode(), "t")
    assert reply.code < 300, (method, path, reply.code, reply.doc)
    return reply.doc


async def status(handler: APIHandler, method: str, path: str) -> int:
    return (await handler.handle(method, path, {}, b"", "t")).code


def test_serve_has_default_namespaces() -> None:
    """``pkg/controlplane/controller/systemnamespaces`` creates kube-system, kube-public, kube-node-lease and
    default, each Active with the ``kubernetes`` spec finalizer (``namespace/strategy.go`` ``PrepareForCreate``).
    They are every apiserver's from its start; ``start_cluster`` adds only controllers, never a namespace."""
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        bare = APIServer(world)
        seen["bare"] = {ns.name: (ns.spec, ns.status) for ns in bare.peek_all("Namespace")}
        served = APIServer(world)
        await start_cluster(_handler_of(served))
        seen["served"] = {ns.name: (ns.spec, ns.status, ns.resource_version) for ns in served.peek_all("Namespace")}

    clean(run(scenario))
    active = ({"finalizers": ["kubernetes"]}, {"phase": "Active"})
    names = ("kube-system", "kube-public", "kube-node-lease", "default")
    assert seen["bare"] == {n: active for n in names}
    assert seen["served"] == {n: (*active, rv) for rv, n in enumerate(names, start=1)}


def test_namespace_deletion_deletes_its_objects() -> None:
    """``namespace/storage/storage.go`` ``Delete``: a Namespace with spec finalizers is only marked (deletionTimestamp,
    ``status.phase: Terminating``); ``pkg/controller/namespace/deletion/namespaced_resources_deleter.go`` ``Delete``
    removes every object in it, waits while one remains (here a ConfigMap's finalizer), then finalizes (spec
    finalizers emptied) and the apiserver removes the Namespace. Objects of other namespaces stay. The
    NamespaceLifecycle admission (``k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``)
    forbids a create in a Terminating namespace and the deletion of ``default``."""
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        handler = _handler_of(api)
        await start_cluster(handler)
        await call(handler, "POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
        for ns in ("team", "default"):
            await call(handler, "POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "a"}})
        await call(handler, "POST", "/api/v1/namespaces/team/configmaps",
                   {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
        marked = await call(handler, "DELETE", "/api/v1/namespaces/team")
        seen["marked"] = (marked["status"], marked["spec"], "deletionTimestamp" in marked["metadata"])
        late = await handler.handle("POST", "/api/v1/namespaces/team/configmaps", {},
                                    json.dumps({"metadata": {"name": "late"}}).encode(), "t")
        seen["late"] = (late.code, late.doc["message"])
        immortal = await handler.handle("DELETE", "/api/v1/namespaces/default", {}, b"", "t")
        seen["immortal"] = (immortal.code, immortal.doc["reason"], immortal.doc["message"])
        await world.sleep(5.0, "the controller works")
        seen["held"] = (await call(handler, "GET", "/api/v1/namespaces/team"))["status"]["phase"]
        seen["left"] = [o.name for o in api.peek_all("ConfigMap") if o.namespace == "team"]
        await _merge(handler, "/api/v1/namespaces/team/configmaps/held", {"metadata": {"finalizers": None}})
        await world.sleep(5.0, "the controller finishes")
        seen["gone"] = await status(handler, "GET", "/api/v1/namespaces/team")
        seen["others"] = sorted(o.key for o in api.peek_all("ConfigMap"))

    clean(run(scenario))
    assert seen["marked"] == ({"phase": "Terminating"}, {"finalizers": ["kubernetes"]}, True)
    assert seen["late"] == (403, 'configmaps "late" is forbidden: unable to create new content in namespace team '
                                 "because it is being terminated")
    assert seen["immortal"] == (403, "Forbidden", 'namespaces "default" is forbidden: this namespace may not be deleted')
    assert seen["held"] == "Terminating" and seen["left"] == ["held"]
    assert seen["gone"] == 404 and seen["others"] == ["default/a"]


async def _merge(handler: APIHandler, path: str, patch: Any) -> Any:
    reply = await handler.handle("PATCH", path, {"content-type": "application/merge-patch+json"},
                                 json.dumps(patch).encode(), "t")
    assert reply.code == 200, reply.doc
    return reply.doc


def _owned(name: str, owner: dict[str, Any], **meta: Any) -> dict[str, Any]:
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    return {"metadata": {"name": name, "ownerReferences": [ref], **meta},
            "spec": {"selector": {"matchLabels": {"app": name}}}}


def test_serve_runs_the_garbage_collector() -> None:
    """``serve`` runs ``pkg/controller/garbagecollector`` over the served kinds: background (the owner goes at once,
    its dependents after), foreground (``foregroundDeletion`` holds the owner until its blocking dependents are
    gone: ``processDeletingDependentsItem``), orphan (the ``orphan`` finalizer: each dependent loses its
    ownerReference, ``orphanDependents``, then the owner goes). Also for a CRD's kind established later."""
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        handler = _handler_of(api)
        await start_cluster(handler)
        for policy in ("Background", "Foreground", "Orphan"):
            name = policy.lower()
            owner = await call(handler, "POST", DEPLOYS, {"metadata": {"name": name}, "spec": {}})
            await call(handler, "POST", RSS, _owned(f"{name}-rs", owner))
            reply = await handler.handle("DELETE", f"{DEPLOYS}/{name}", {},
                                         json.dumps({"propagationPolicy": policy}).encode(), "t")
            seen[f"{name} answer"] = reply.doc["metadata"].get("finalizers")
            await world.sleep(3.0, "the collector works")
            seen[f"{name} owner"] = await status(handler, "GET", f"{DEPLOYS}/{name}")
            child = await handler.handle("GET", f"{RSS}/{name}-rs", {}, b"", "t")
            seen[f"{name} child"] = (child.code, child.doc.get("metadata", {}).get("ownerReferences"))
        crd = {"metadata": {"name": "apps.example.com"},
               "spec": {"group": "example.com", "names": {"plural": "apps", "kind": "App"}, "scope": "Namespaced",
                        "versions": [{"name": "v1", "served": True, "storage": True}]}}
        await call(handler, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        await world.sleep(1.0, "the collector hears of the CRD")
        app = await call(handler, "POST", "/apis/example.com/v1/namespaces/default/apps", {"metadata": {"name": "a"}})
        cm = {"metadata": {"name": "of-a", "ownerReferences": [
            {"apiVersion": "example.com/v1", "kind": "App", "name": "a", "uid": app["metadata"]["uid"]}]}}
        await call(handler, "POST", "/api/v1/namespaces/default/configmaps", cm)
        await call(handler, "DELETE", "/apis/example.com/v1/namespaces/default/apps/a")
        await world.sleep(3.0, "the collector works")
        seen["crd child"] = await status(handler, "GET", "/api/v1/namespaces/default/configmaps/of-a")

    clean(run(scenario))
    assert seen["background owner"] == 404 and seen["background child"] == (404, None)
    assert seen["foreground answer"] == ["foregroundDeletion"]
    assert seen["foreground owner"] == 404 and seen["foreground child"] == (404, None)
    assert seen["orphan answer"] == ["orphan"]
    assert seen["orphan owner"] == 404 and seen["orphan child"] == (200, None)
    assert seen["crd child"] == 404
