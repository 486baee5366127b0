"""What client-go 0.37 and controller-runtime 0.25 ask of the served API, answered as kube-apiserver answers it.

Each was found by running the Go manager of ``examples/go`` against ``serve``
(tests/kube/test_go_operator.py runs it end to end): aggregated discovery,
WatchList with its initial-events-end bookmark, Leases and ``events.k8s.io/v1``
Events in protobuf, and Events served in both their shapes. The wire bytes of
protobuf bodies are built by hand from upstream's ``generated.proto`` field
numbers (tests/kube/test_served_protobuf.py's encoder): the decoder is never
its own oracle.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

import harness as h
from harness.kube import APIServer, KubeObject
from harness.kube._http._handler import _handler_of
from tests.kube.kube_support import clean, run
from tests.kube.test_served_protobuf import PROTO, envelope, ld, meta, num

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
CMS = "/api/v1/namespaces/default/configmaps"
WATCH_LIST = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"


def test_aggregated_discovery_v2() -> None:
    """client-go's discovery (``discovery/discovery_client.go`` ``downloadAPIs``) asks ``/api`` and ``/apis`` with
    ``Accept: <AcceptV2>,application/json`` and reads the answer as aggregated only when its Content-Type is that
    type (``ContentTypeIsGVK``); kube-apiserver's ``discovery/aggregated/handler.go`` answers it with every served
    group-version and its resources (``k8s.io/api/apidiscovery/v2/types.go``): scope, singular name, verbs,
    short names, subresources with their response kind. A CRD's group appears once it is established, the legacy
    documents still answer a client that does not ask for it, and the two agree resource for resource."""
    got: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        handler = _handler_of(api)
        accept = {"accept": f"{AGGREGATED},application/json"}
        for path in ("/api", "/apis"):
            got[path] = await handler.handle("GET", path, accept, b"", "t")
        got["legacy"] = await handler.handle("GET", "/apis", {"accept": "application/json"}, b"", "t")
        got["apps/v1"] = await handler.handle("GET", "/apis/apps/v1", {}, b"", "t")
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.app.example"},
               "spec": {"group": "app.example", "scope": "Namespaced",
                        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                        "versions": [{"name": "v1", "served": True, "storage": True,
                                      "subresources": {"status": {}}}]}}
        made = await handler.handle("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                    {"content-type": "application/json"}, json.dumps(crd).encode(), "t")
        assert made.code == 201, made.doc
        got["with crd"] = await handler.handle("GET", "/apis", accept, b"", "t")

    clean(run(scenario))
    core, apis = got["/api"], got["/apis"]
    for reply in (core, apis):
        assert reply.code == 200 and reply.content_type == AGGREGATED
        assert (reply.doc["kind"], reply.doc["apiVersion"]) == ("APIGroupDiscoveryList", "apidiscovery.k8s.io/v2")
    [legacy_group] = core.doc["items"]
    assert legacy_group["metadata"] == {"creationTimestamp": None}  # the core group has no name
    [v1] = legacy_group["versions"]
    pods = next(r for r in v1["resources"] if r["resource"] == "pods")
    assert pods == {"resource": "pods", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                    "scope": "Namespaced", "singularResource": "pod",
                    "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["po"],
                    "subresources": [{"subresource": "status",
                                      "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                                      "verbs": ["get", "patch", "update"]}]}
    groups = {g["metadata"]["name"]: g for g in apis.doc["items"]}
    assert "coordination.k8s.io" in groups and "events.k8s.io" in groups
    assert [v["freshness"] for v in groups["apps"]["versions"]] == ["Current"]
    deployments = next(r for r in groups["apps"]["versions"][0]["resources"] if r["resource"] == "deployments")
    assert {s["subresource"]: s["responseKind"]["kind"] for s in deployments["subresources"]} == {
        "status": "Deployment", "scale": "Scale"}
    assert next(s for s in deployments["subresources"] if s["subresource"] == "scale")["responseKind"] == {
        "group": "autoscaling", "version": "v1", "kind": "Scale"}
    nodes = next(r for r in v1["resources"] if r["resource"] == "nodes")
    assert nodes["scope"] == "Cluster"
    # the same resources as the legacy per-group-version lists
    legacy = {r["name"] for r in got["apps/v1"].doc["resources"]}
    aggregated = {r["resource"] for r in groups["apps"]["versions"][0]["resources"]} | {
        f"{r['resource']}/{s['subresource']}" for r in groups["apps"]["versions"][0]["resources"]
        for s in r.get("subresources", [])}
    assert legacy == aggregated
    assert got["legacy"].content_type == "application/json" and got["legacy"].doc["kind"] == "APIGroupList"
    widgets = {g["metadata"]["name"]: g for g in got["with crd"].doc["items"]}["app.example"]
    [widget] = widgets["versions"][0]["resources"]
    assert (widget["resource"], widget["scope"], widget["subresources"][0]["subresource"]) == (
        "widgets", "Namespaced", "status")


def _events(chunks: list[bytes]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for chunk in chunks:
        ev = json.loads(chunk)
        m = ev["object"]["metadata"]
        out.append((ev["type"], m.get("name", ""), m))
    return out


def test_client_go_watchlist_and_bookmarks() -> None:
    """WatchList, client-go 1.35+ informers' first request (``tools/cache/reflector.go`` ``watchList``):
    ``sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`` streams the current
    state as ADDED events, then one BOOKMARK at that state's revision annotated ``k8s.io/initial-events-end:
    "true"`` (``metav1.InitialEventsAnnotationKey``; the cacher's ``cacheWatcher`` sends it after the initial
    events), then what comes next. Without the bookmark the reflector waits ("awaiting required bookmark event
    for initial events stream", every 10 s) and its informer never syncs (kubernetes/kubernetes#134180): the Go
    manager's controllers never started. The options are checked as ``validateWatchOptions``
    (``apimachinery/pkg/apis/meta/internalversion/validation/validation.go``) checks them, and
    ``sendInitialEvents=false`` starts at the current revision with no initial events."""
    got: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        handler = _handler_of(api)
        for name in ("b", "a"):
            await api.create(KubeObject("ConfigMap", "default", name))
        await api.create(KubeObject("Secret", "default", "other"))
        rv = api.resource_version
        stream = await handler.handle("GET", f"{CMS}?{WATCH_LIST}", {}, b"", "t")
        assert stream.code == 200 and stream.watch is not None
        chunks = [await stream.watch.read() for _ in range(3)]
        await api.create(KubeObject("ConfigMap", "default", "c"))
        chunks.append(await stream.watch.read())
        stream.watch.stop()
        got["stream"], got["rv"] = chunks, rv
        empty = await handler.handle("GET", f"/api/v1/namespaces/empty/configmaps?{WATCH_LIST}", {}, b"", "t")
        assert empty.watch is not None
        got["empty"] = [await empty.watch.read()]
        empty.watch.stop()
        later = await handler.handle("GET", f"{CMS}?watch=1&sendInitialEvents=false&resourceVersionMatch="
                                     "NotOlderThan&allowWatchBookmarks=true", {}, b"", "t")
        assert later.watch is not None
        await api.create(KubeObject("ConfigMap", "default", "d"))
        got["later"] = [await later.watch.read()]
        later.watch.stop()
        for query in ("watch=1&sendInitialEvents=true", "watch=1&resourceVersionMatch=NotOlderThan",
                      "watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", "sendInitialEvents=true"):
            got[query] = await handler.handle("GET", f"{CMS}?{query}", {}, b"", "t")

    clean(run(scenario))
    events = _events(got["stream"])
    assert [(t, n) for t, n, _ in events] == [("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", ""), ("ADDED", "c")]
    bookmark = events[2][2]
    assert bookmark == {"resourceVersion": str(got["rv"]), "annotations": {"k8s.io/initial-events-end": "true"}}
    assert json.loads(got["stream"][2])["object"]["kind"] == "ConfigMap"
    [(kind, _, mark)] = _events(got["empty"])  # nothing to send: the bookmark at once
    assert kind == "BOOKMARK" and mark["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert [(t, n) for t, n, _ in _events(got["later"])] == [("ADDED", "d")]
    for query, says in (("watch=1&sendInitialEvents=true", "sendInitialEvents requires setting "
                         "resourceVersionMatch to NotOlderThan"),
                        ("watch=1&resourceVersionMatch=NotOlderThan", "resourceVersionMatch is forbidden for watch "
                         "unless sendInitialEvents is provided"),
                        ("watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", "sendInitialEvents requires"),
                        ("sendInitialEvents=true", "sendInitialEvents is forbidden for list")):
        reply = got[query]
        assert (reply.code, reply.doc["reason"]) == (422, "Invalid"), (query, reply.doc)
        assert says in reply.doc["message"], (query, reply.doc["message"])


def _lease(name: str, holder: str, rv: str = "", transitions: int = 0, renewed: int = 2) -> bytes:
    """A Lease as client-go's ``resourcelock/leaselock.go`` sends it (``LeaderElectionRecordToLeaseSpec``: every
    spec field a pointer, so each is sent). Field numbers: ``coordination/v1/generated.proto`` (Lease metadata=1,
    spec=2; LeaseSpec holderIdentity=1, leaseDurationSeconds=2, acquireTime=3, renewTime=4, leaseTransitions=5)
    with ``MicroTime`` as Timestamp{seconds=1, nanos=2}."""
    when = ld(3, num(1, 1_700_000_000) + num(2, 123_456_789))
    spec = ld(1, holder) + num(2, 15) + when + ld(4, num(1, 1_700_000_000 + renewed) + num(2, 5_000)) + num(5, transitions)
    return envelope("coordination.k8s.io/v1", "Lease",
                    meta(ld(1, name), ld(3, "default"), *([ld(6, rv)] if rv else [])) + ld(2, spec))


def test_client_go_protobuf_bodies() -> None:
    """controller-runtime's leader election and EventRecorder send protobuf (client-go's typed clients do for a built-in
    kind when their config names no ContentType: ``gentype/type.go`` ``PrefersProtobuf``, ``rest/request.go``
    ``UseProtobufAsDefault``; client-go retries in JSON after a 415 only for CBOR), so a Lease and an
    ``events.k8s.io/v1`` Event are read from protobuf: a Lease's ``MicroTime`` keeps its microseconds
    (``micro_time_proto.go``, ``RFC3339Micro``), its update is optimistic (a stale ``resourceVersion`` is a 409, as
    ``leaselock.Update`` expects), and the Event, stored once, reads in both its shapes
    (``pkg/apis/events/v1/conversion.go``: regarding/involvedObject, note/message,
    reportingController/reportingComponent). Answers are JSON: client-go decodes by the response's Content-Type
    (``rest/request.go`` ``transformResponse``), which is why it reads them though it asked protobuf first."""
    got: dict[str, httpx.Response] = {}
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="pb"), base_url="http://kube") as c:
            got["create"] = await c.post(leases, headers=PROTO, content=_lease("lock", "a"))
            rv = got["create"].json()["metadata"]["resourceVersion"]
            got["renew"] = await c.put(f"{leases}/lock", headers=PROTO, content=_lease("lock", "a", rv, renewed=4))
            got["stale"] = await c.put(f"{leases}/lock", headers=PROTO, content=_lease("lock", "b", rv, 1))
            event = (meta(ld(1, "app.1"), ld(3, "default"))
                     + ld(2, num(1, 1_700_000_000) + num(2, 7_000)) + ld(4, "secret-operator")
                     + ld(5, "secret-operator-host") + ld(6, "Create") + ld(7, "SecretCreated")
                     + ld(8, ld(1, "ConfigMap") + ld(2, "default") + ld(3, "app") + ld(4, "u-1") + ld(5, "v1"))
                     + ld(10, "created Secret app-x") + ld(11, "Normal") + ld(12, b""))
            got["event"] = await c.post("/apis/events.k8s.io/v1/namespaces/default/events", headers=PROTO,
                                        content=envelope("events.k8s.io/v1", "Event", event))
            got["core"] = await c.get("/api/v1/namespaces/default/events/app.1")

    clean(run(scenario))
    assert [got[k].status_code for k in ("create", "renew", "stale", "event", "core")] == [201, 200, 409, 201, 200]
    spec = got["renew"].json()["spec"]
    assert spec == {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": "2023-11-14T22:13:20.123456Z",
                    "renewTime": "2023-11-14T22:13:24.000005Z", "leaseTransitions": 0}
    assert got["stale"].json()["reason"] == "Conflict"
    event = got["event"].json()
    assert (event["apiVersion"], event["regarding"]["name"], event["note"], event["reportingController"]) == (
        "events.k8s.io/v1", "app", "created Secret app-x", "secret-operator")
    assert event["eventTime"] == "2023-11-14T22:13:20.000007Z" and event["deprecatedSource"] == {}
    core = got["core"].json()
    assert (core["apiVersion"], core["involvedObject"]["name"], core["message"], core["reportingComponent"]) == (
        "v1", "app", "created Secret app-x", "secret-operator")
    assert "regarding" not in core and "note" not in core
    assert core["reason"] == "SecretCreated" and core["reportingInstance"] == "secret-operator-host"


#: a client that does what a client-go informer does first: a WatchList of ConfigMaps in the namespace it is given,
#: read until the initial-events-end bookmark; then it says so with a POST (a ConfigMap ``synced``)
WATCH_LIST_CLIENT = f'''
import json, os, sys, time, urllib.request, yaml
server = yaml.safe_load(open(os.environ["KUBECONFIG"]))["clusters"][0]["cluster"]["server"]
path = "/api/v1/namespaces/" + sys.argv[1] + "/configmaps"
with urllib.request.urlopen(server + path + "?{WATCH_LIST}") as stream:
    for line in stream:
        if json.loads(line)["type"] == "BOOKMARK":
            break
body = json.dumps({{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "synced"}}}}).encode()
urllib.request.urlopen(urllib.request.Request(server + path, data=body, headers={{"Content-Type": "application/json"}},
                       method="POST")).read()
time.sleep(60)
'''


def test_watchlist_reaches_a_process_in_one_write(tmp_path: Any) -> None:
    """What the server has sent on a watch and not yet written reaches an operator process in one write, as
    kube-apiserver's watch handler flushes only when the watcher's result channel is empty
    (``endpoints/handlers/watch.go``, ``WatchServer.HandleHTTP``), where the cacher puts a WatchList's initial
    events and its bookmark one after the other (``storage/cacher/cache_watcher.go``, ``processInterval``): a
    namespace with one ConfigMap is its ADDED delivery, then one step that writes the ADDED and the bookmark
    (not one step each, each followed by a wait for the process); an empty namespace's bookmark goes out behind
    the response's headers, in the watch's own step. Either way the client's POST follows at once."""
    import sys

    from harness.operators import ExternalOperator
    from harness.sim import run_once
    from harness.sim._choice import _Canonical

    script = tmp_path / "watch_list_client.py"
    script.write_text(WATCH_LIST_CLIENT)

    def scenario_for(namespace: str) -> Any:
        @h.scenario
        async def scenario(world: h.World) -> None:
            api = APIServer(world)
            await api.create(KubeObject("Namespace", "", "full"))
            await api.create(KubeObject("ConfigMap", "full", "app"))
            ExternalOperator(api, "client", [sys.executable, str(script), namespace], quiet=0.15, tls=False).start()
            await world.sleep(5.0, "user waits")

        return scenario

    ended = "client reads watch ConfigMap"  # (the stream's end: the client closed it to send its POST)
    for namespace, between in (("full", ["client/watch/ConfigMap deliver ADDED full/app", "client reads watch "
                                         "ConfigMap", ended]), ("default", [ended])):
        out = run_once(scenario_for(namespace), _Canonical())
        assert out.violation is None, out.violation
        steps = [f"{r.actor}: {r.label}" for r in out.trace if r.actor.startswith("client")]
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        watch = steps.index(f"client/GET {path}: watch ConfigMap {namespace}/* with its initial events (WatchList)")
        post = steps.index(f"client/POST {path}: start client/POST {path}")
        assert [step.split(": ", 1)[1].split(" rv=")[0] for step in steps[watch + 1:post]] == between, \
            steps[watch:post + 1]
