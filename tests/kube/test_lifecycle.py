"""A cluster's namespaces in every apiserver, and the NamespaceLifecycle admission (``harness/kube/_lifecycle.py``)."""

from __future__ import annotations

import json
from typing import Any

import harness as h
from harness.kube import ApiError, APIServer, Informer, KubeObject
from harness.kube._http._handler import _handler_of
from harness.sim import ReplayChooser, run_once
from tests.kube.kube_support import clean, run

SYSTEM = ["kube-system", "kube-public", "kube-node-lease", "default"]


async def _refused(box: dict[str, Any], name: str, coro: Any) -> None:
    try:
        await coro
    except ApiError as err:
        box[name] = (type(err).__name__, err.code, str(err))
    else:
        box[name] = None


def test_apiserver_has_a_clusters_namespaces() -> None:
    """kube-apiserver's bootstrap (``pkg/controlplane/controller/systemnamespaces``) makes kube-system,
    kube-public, kube-node-lease and default; here every apiserver has them at construction, as the namespace
    strategy leaves a created Namespace (Active, the ``kubernetes`` finalizer, the name label), with the run's
    first uids and revisions and no step: a model's first request is still step 1. ``namespaces=`` adds more the
    same way; an informer lists them, the served API too, and a create in ``default`` just works."""
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        seen["namespaces"] = [(ns.name, ns.uid, ns.resource_version, ns.spec, ns.status, ns.labels)
                              for ns in api.peek_all("Namespace")]
        seen["rv"] = api.resource_version
        pod = await api.create(KubeObject("Pod", "default", "p"))
        seen["pod"] = (pod.uid, pod.resource_version)
        informer = Informer(world, api, "Namespace", name="t/informer/Namespace")
        informer.start()
        await informer.wait_for_cache_sync()
        seen["cached"] = sorted(informer.lister.list_keys())
        listed = await _handler_of(api).handle("GET", "/api/v1/namespaces", {}, b"", "t")
        seen["served"] = [(i["metadata"]["name"], i["metadata"]["resourceVersion"], i["status"]["phase"])
                          for i in listed.doc["items"]]
        more = APIServer(world, namespaces=("team-a", "default"))
        seen["more"] = [(ns.name, ns.resource_version) for ns in more.peek_all("Namespace")]

    out = clean(run(scenario))
    assert seen["namespaces"] == [
        (name, f"uid-{i:04d}", i, {"finalizers": ["kubernetes"]}, {"phase": "Active"},
         {"kubernetes.io/metadata.name": name})
        for i, name in enumerate(SYSTEM, start=1)
    ]
    assert seen["rv"] == 4 and seen["pod"] == ("uid-0005", 5)
    first = [r for r in out.trace if r.kind == "run"][1]  # (the first is the scenario's own start)
    assert first.step == 2 and first.label == "create Pod default/p"
    assert seen["cached"] == sorted(SYSTEM)
    assert seen["served"] == sorted((name, str(i), "Active") for i, name in enumerate(SYSTEM, start=1))  # etcd's key order
    assert seen["more"] == [*((name, i) for i, name in enumerate(SYSTEM, start=1)), ("team-a", 5)]


def test_namespaces_knob_refuses_a_name_that_is_not_a_namespace_name() -> None:
    async def scenario(world: h.World) -> None:
        APIServer(world, namespaces=("Team_A",))

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None and "Team_A" in out.violation.describe()
    assert "DNS-1123" in out.violation.describe()


def test_write_into_a_missing_namespace_is_refused() -> None:
    """``Lifecycle.Admit`` (``k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go``): a create
    in a namespace that does not exist gets the live GET's 404 ``namespaces "x" not found`` and stores nothing; once
    the Namespace exists the same create passes; a create in a Terminating namespace is 403 with the
    ``NamespaceTerminating`` cause, while an update there and every delete pass; ``default``, ``kube-system`` and
    ``kube-public`` may not be deleted (403); cluster-scoped objects never ask. The served API answers the same,
    dry runs included."""
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        handler = _handler_of(api)
        rv = api.resource_version
        await _refused(seen, "create", api.create(KubeObject("ConfigMap", "nope", "c")))
        seen["stored"] = (api.peek("ConfigMap", "nope", "c"), api.resource_version - rv)
        seen["errors"] = api.error_count(404, "create", "ConfigMap")
        body = json.dumps({"metadata": {"name": "c"}}).encode()
        served = await handler.handle("POST", "/api/v1/namespaces/nope/configmaps", {}, body, "t")
        seen["served"] = (served.code, served.doc["reason"], served.doc["message"], served.doc["details"])
        dry = await handler.handle("POST", "/api/v1/namespaces/nope/configmaps?dryRun=All", {}, body, "t")
        seen["dry"] = dry.code
        seen["node"] = (await api.create(KubeObject("Node", "", "n1"))).name  # cluster-scoped: no namespace
        await api.create(KubeObject("Namespace", "", "nope"))
        seen["after"] = (await api.create(KubeObject("ConfigMap", "nope", "c"))).key
        await api.delete("Namespace", "", "nope")  # no namespace controller: it stays Terminating
        seen["phase"] = (await api.get("Namespace", "", "nope")).status
        await _refused(seen, "terminating", api.create(KubeObject("ConfigMap", "nope", "d")))
        late = await handler.handle("POST", "/api/v1/namespaces/nope/configmaps", {},
                                    json.dumps({"metadata": {"name": "d"}}).encode(), "t")
        seen["late"] = (late.code, late.doc["details"])
        cm = await api.get("ConfigMap", "nope", "c")
        cm.labels = {"still": "writable"}
        seen["update"] = (await api.update(cm)).labels
        await api.delete("ConfigMap", "nope", "c")
        seen["deleted"] = api.peek("ConfigMap", "nope", "c")
        for name in ("default", "kube-system", "kube-public"):
            await _refused(seen, name, api.delete("Namespace", "", name))
        seen["lease"] = (await api.delete("Namespace", "", "kube-node-lease")).status

    clean(run(scenario))
    assert seen["create"] == ("NotFound", 404, 'namespaces "nope" not found')
    assert seen["stored"] == (None, 0) and seen["errors"] == 1
    assert seen["served"] == (404, "NotFound", 'namespaces "nope" not found', {"name": "nope", "kind": "namespaces"})
    assert seen["dry"] == 404 and seen["node"] == "n1"
    assert seen["after"] == "nope/c" and seen["phase"] == {"phase": "Terminating"}
    assert seen["terminating"] == ("Forbidden", 403, 'configmaps "d" is forbidden: unable to create new content in '
                                                     "namespace nope because it is being terminated")
    assert seen["late"] == (403, {"name": "d", "kind": "configmaps", "causes": [
        {"reason": "NamespaceTerminating", "message": "namespace nope is being terminated",
         "field": "metadata.namespace"}]})
    assert seen["update"] == {"still": "writable"} and seen["deleted"] is None
    for name in ("default", "kube-system", "kube-public"):
        assert seen[name] == ("Forbidden", 403, f'namespaces "{name}" is forbidden: this namespace may not be deleted')
    assert seen["lease"] == {"phase": "Terminating"}

