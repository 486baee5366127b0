"""The Kubernetes HTTP API over the simulated apiserver (``harness/kube/_http/``), through real clients."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path
from typing import Any

import httpx
import pytest
from lightkube import ApiError, AsyncClient, KubeConfig, operators
from lightkube.config.models import Cluster, User
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.models.rbac_v1 import PolicyRule
from lightkube.resources.core_v1 import ConfigMap, Secret
from lightkube.resources.rbac_authorization_v1 import Role
from lightkube.types import PatchType

import harness as h
from harness.kube import APIServer, KubeObject
from harness.kube._http import json_merge_patch, json_patch, parse_label_selector, selects, strategic_merge_patch
from harness.sim import RandomChooser, run_once
from tests.kube.kube_support import FaultChooser, clean, run, run_with

ROOT = Path(__file__).resolve().parents[2]
NS = "default"


def lightkube(api: APIServer, name: str = "lk", **options: Any) -> AsyncClient:
    config = KubeConfig.from_one(cluster=Cluster(server="http://kube"), user=User(), namespace=NS)
    return AsyncClient(config, transport=api.transport(client=name, **options))


def raw(api: APIServer, name: str = "raw", **options: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=api.transport(client=name, **options), base_url="http://kube")


def test_lightkube_client_round_trips_every_verb() -> None:
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        client = lightkube(api)
        cm = await client.create(ConfigMap(metadata=ObjectMeta(name="cfg", labels={"tier": "web"}),
                                           data={"a": "1"}, binaryData={"b": base64.b64encode(b"x").decode()}))
        seen["created"] = cm
        seen["secret"] = await client.create(Secret(metadata=ObjectMeta(generateName="tok-"), type="kubernetes.io/tls",
                                                    data={"tls.crt": "Y3J0", "tls.key": "a2V5"}))
        seen["role"] = await client.create(Role(metadata=ObjectMeta(name="reader"), rules=[
            PolicyRule(apiGroups=[""], resources=["pods"], verbs=["get", "list"])]))
        seen["got"] = await client.get(ConfigMap, "cfg")
        seen["listed"] = [c.metadata.name async for c in client.list(ConfigMap, labels={"tier": operators.in_(["web", "db"])})]
        seen["none"] = [c.metadata.name async for c in client.list(ConfigMap, labels={"tier": operators.not_in(["web"])})]
        seen["merge"] = await client.patch(ConfigMap, "cfg", {"data": {"b": "2"}}, patch_type=PatchType.MERGE)
        seen["json"] = await client.patch(ConfigMap, "cfg", [{"op": "add", "path": "/data/c", "value": "3"}],
                                          patch_type=PatchType.JSON)
        seen["smp"] = await client.patch(ConfigMap, "cfg", {"metadata": {"finalizers": ["x/y"]}},
                                         patch_type=PatchType.STRATEGIC)
        cur = await client.get(ConfigMap, "cfg")
        cur.data = {"only": "this"}
        seen["replaced"] = await client.replace(cur)
        stale = seen["got"]
        try:
            await client.replace(stale)
        except ApiError as err:
            seen["conflict"] = err.status
        await client.patch(ConfigMap, "cfg", {"metadata": {"finalizers": None}}, patch_type=PatchType.MERGE)
        await client.delete(ConfigMap, "cfg")
        try:
            await client.get(ConfigMap, "cfg")
        except ApiError as err:
            seen["gone"] = err.status
        await client.close()

    clean(run(scenario))
    assert seen["created"].data == {"a": "1"} and seen["created"].binaryData == {"b": "eA=="}
    assert seen["created"].metadata.uid and seen["created"].metadata.resourceVersion == "5"  # (1 to 4: the namespaces)
    secret = seen["secret"]
    assert secret.type == "kubernetes.io/tls" and secret.metadata.name.startswith("tok-")
    assert len(secret.metadata.name) == len("tok-") + 5 and secret.data == {"tls.crt": "Y3J0", "tls.key": "a2V5"}
    assert seen["role"].rules[0].verbs == ["get", "list"] and seen["role"].rules[0].resources == ["pods"]
    assert seen["got"].data == {"a": "1"} and seen["got"].metadata.labels == {"tier": "web"}
    assert seen["listed"] == ["cfg"] and seen["none"] == []
    assert seen["merge"].data == {"a": "1", "b": "2"}
    assert seen["json"].data == {"a": "1", "b": "2", "c": "3"}
    assert seen["smp"].metadata.finalizers == ["x/y"]
    assert seen["replaced"].data == {"only": "this"} and seen["replaced"].binaryData == {"b": "eA=="}
    assert seen["conflict"].code == 409 and seen["conflict"].reason == "Conflict"
    assert seen["gone"].code == 404 and seen["gone"].reason == "NotFound"


def test_list_limit_continue_field_selector_and_revisions() -> None:
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world, namespaces=("other",))
        for name in ("c", "a", "b"):
            await api.create(KubeObject("ConfigMap", NS, name))
        await api.create(KubeObject("ConfigMap", "other", "a"))
        async with raw(api) as c:
            first = (await c.get("/api/v1/configmaps", params={"limit": "2"})).json()
            await api.create(KubeObject("ConfigMap", NS, "d"))  # after the first page: not in the second
            token = first["metadata"]["continue"]
            second = (await c.get("/api/v1/configmaps", params={"limit": "2", "continue": token})).json()
            seen["pages"] = [[i["metadata"]["namespace"] + "/" + i["metadata"]["name"] for i in p["items"]]
                             for p in (first, second)]
            seen["remaining"] = first["metadata"]["remainingItemCount"]
            seen["rvs"] = first["metadata"]["resourceVersion"], second["metadata"]["resourceVersion"]
            by_name = (await c.get("/api/v1/configmaps", params={"fieldSelector": "metadata.name=a"})).json()
            seen["by_name"] = [i["metadata"]["namespace"] for i in by_name["items"]]
            not_default = (await c.get("/api/v1/configmaps",
                                       params={"fieldSelector": "metadata.namespace!=default"})).json()
            seen["not_default"] = [i["metadata"]["name"] for i in not_default["items"]]
            exact = (await c.get("/api/v1/namespaces/default/configmaps",
                                 params={"resourceVersion": "7", "resourceVersionMatch": "Exact"})).json()
            seen["exact"] = [i["metadata"]["name"] for i in exact["items"]]
            seen["too_large"] = (await c.get("/api/v1/configmaps", params={"resourceVersion": "99"})).json()
            api.compact()
            seen["expired"] = (await c.get("/api/v1/configmaps", params={"limit": "2", "continue": token})).json()
            seen["bad_field"] = (await c.get("/api/v1/configmaps", params={"fieldSelector": "data.x=1"})).json()

    clean(run(scenario))
    assert seen["pages"] == [["default/a", "default/b"], ["default/c", "other/a"]]  # etcd key order
    assert seen["remaining"] == 2 and seen["rvs"] == ("9", "9")  # (1 to 5: the namespaces)
    assert seen["by_name"] == ["default", "other"] and seen["not_default"] == ["a"]
    assert seen["exact"] == ["a", "c"]  # the state at rv=7 (c, then a), in key order
    assert seen["too_large"]["code"] == 504 and seen["too_large"]["reason"] == "Timeout"
    assert seen["expired"]["code"] == 410 and seen["expired"]["reason"] == "Expired"
    assert seen["bad_field"]["code"] == 400 and "field label not supported: data.x" in seen["bad_field"]["message"]


def test_label_selectors_parse_as_upstream() -> None:
    labels = {"env": "prod", "tier": "web"}
    cases = {
        "env=prod": True, "env==prod": True, "env!=prod": False, "env in (prod, dev)": True,
        "env notin (prod)": False, "missing notin (x)": True, "missing!=x": True, "tier": True, "!tier": False,
        "!missing": True, "env=prod,tier in (db)": False, "env=prod, tier in (web,db), !missing": True, "": True,
        "example.com/role": False, "env=": False,
    }
    for text, want in cases.items():
        assert selects(parse_label_selector(text), labels) is want, text
    for bad in ("env in prod", "env in (prod", "=x", "env=a b", "in (x)"):
        with pytest.raises(Exception, match="unable to parse requirement"):
            parse_label_selector(bad)


def test_merge_and_json_patch_match_upstream() -> None:
    # RFC 7386 section 3's example, whole
    target = {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"}, "tags": ["example", "sample"],
              "content": "This will be unchanged"}
    patch = {"title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": None}, "tags": ["example"]}
    assert json_merge_patch(target, patch) == {
        "title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"], "content": "This will be unchanged",
        "phoneNumber": "+01-123-456-7890"}
    # RFC 6902 appendix A: add to an array, move, copy, test, remove, replace
    doc = {"foo": ["bar", "baz"], "baz": "qux", "biscuits": [{"name": "Digestive"}, {"name": "Choco Leibniz"}]}
    out = json_patch(doc, [
        {"op": "add", "path": "/foo/1", "value": "qux"},
        {"op": "add", "path": "/foo/-", "value": "end"},
        {"op": "test", "path": "/baz", "value": "qux"},
        {"op": "move", "from": "/baz", "path": "/moved"},
        {"op": "copy", "from": "/biscuits/0", "path": "/best_biscuit"},
        {"op": "remove", "path": "/biscuits/1"},
        {"op": "replace", "path": "/foo/0", "value": "BAR"},
        {"op": "add", "path": "/a~1b", "value": 1},
    ])
    assert out == {"foo": ["BAR", "qux", "baz", "end"], "moved": "qux", "biscuits": [{"name": "Digestive"}],
                   "best_biscuit": {"name": "Digestive"}, "a/b": 1}
    assert doc["foo"] == ["bar", "baz"]  # the input is left alone
    for failing in ([{"op": "test", "path": "/baz", "value": "nope"}], [{"op": "remove", "path": "/nothing"}],
                    [{"op": "replace", "path": "/nothing", "value": 1}]):
        with pytest.raises(Exception) as info:
            json_patch(doc, failing)
        assert getattr(info.value, "code", None) == 422
    # strategic merge: containers merge by name, finalizers add to the set, $patch: delete, directives
    pod = {"metadata": {"finalizers": ["a"]}, "spec": {"containers": [
        {"name": "app", "image": "v1", "env": [{"name": "X", "value": "1"}]}, {"name": "side", "image": "s1"}]}}
    smp = {"metadata": {"finalizers": ["b"]}, "spec": {"containers": [
        {"name": "app", "image": "v2", "env": [{"name": "Y", "value": "2"}]}, {"name": "side", "$patch": "delete"}],
        "$setElementOrder/containers": [{"name": "app"}]}}
    assert strategic_merge_patch(pod, smp) == {"metadata": {"finalizers": ["a", "b"]}, "spec": {"containers": [
        {"name": "app", "image": "v2", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]}}
    assert json_merge_patch(pod, smp)["spec"]["containers"][0] == {"name": "app", "image": "v2",
                                                                   "env": [{"name": "Y", "value": "2"}]}
    assert strategic_merge_patch(pod, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})["metadata"] == {
        "finalizers": []}
    assert strategic_merge_patch(pod, {"spec": {"$patch": "replace", "x": 1}})["spec"] == {"x": 1}


def test_error_bodies_are_status_objects() -> None:
    got: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "x"))
        async with raw(api) as c:
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
            got["not_found"] = await c.get("/api/v1/namespaces/default/configmaps/nope")
            got["exists"] = await c.post("/api/v1/namespaces/default/configmaps", json=cm)
            got["conflict"] = await c.put("/api/v1/namespaces/default/configmaps/x",
                                          json={**cm, "metadata": {"name": "x", "resourceVersion": "0"}} | {
                                              "metadata": {"name": "x", "resourceVersion": "7"}})
            got["precondition"] = await c.request("DELETE", "/api/v1/namespaces/default/configmaps/x",
                                                  json={"preconditions": {"uid": "not-it"}})
            got["invalid"] = await c.post("/api/v1/namespaces/default/configmaps",
                                          json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
            got["unknown"] = await c.get("/apis/example.com/v1/namespaces/default/things")
            got["bad_json"] = await c.post("/api/v1/namespaces/default/configmaps", content=b"{nope")
            got["policy"] = await c.request("DELETE", "/api/v1/namespaces/default/configmaps/x",
                                            json={"propagationPolicy": "Sometimes"})

    clean(run(scenario))
    want = {"not_found": (404, "NotFound"), "exists": (409, "AlreadyExists"), "conflict": (409, "Conflict"),
            "precondition": (409, "Conflict"), "invalid": (422, "Invalid"), "unknown": (404, "NotFound"),
            "bad_json": (400, "BadRequest"), "policy": (422, "Invalid")}
    for what, (code, reason) in want.items():
        resp = got[what]
        body = resp.json()
        assert resp.status_code == code and resp.headers["content-type"] == "application/json", what
        assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure", what
        assert (body["code"], body["reason"]) == (code, reason), (what, body)
    assert got["not_found"].json()["message"] == 'configmaps "nope" not found'
    assert got["not_found"].json()["details"] == {"name": "nope", "kind": "configmaps"}
    assert "Precondition failed: UID in precondition: not-it" in got["precondition"].json()["message"]
    assert "the object has been modified" in got["conflict"].json()["message"]


def test_crd_created_through_the_api_is_served() -> None:
    got: dict[str, Any] = {}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}]}}
    path = "/apis/example.com/v1/namespaces/default/widgets"

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with raw(api) as c:
            got["before"] = await c.get(path)
            got["crd"] = (await c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)).json()
            got["groups"] = (await c.get("/apis")).json()
            got["resources"] = (await c.get("/apis/example.com/v1")).json()
            w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 1},
                 "status": {"ignored": True}, "extra": {"kept": [1, 2]}}
            got["created"] = (await c.post(path, json=w)).json()
            got["smp"] = await c.patch(f"{path}/w1", content=b'{"spec":{"size":2}}',
                                       headers={"content-type": "application/strategic-merge-patch+json"})
            got["merge"] = (await c.patch(f"{path}/w1", content=b'{"spec":{"size":2},"status":{"no":1}}',
                                          headers={"content-type": "application/merge-patch+json"})).json()
            got["status"] = (await c.patch(f"{path}/w1/status", content=b'{"status":{"ready":true},"spec":{"size":9}}',
                                           headers={"content-type": "application/merge-patch+json"})).json()
            got["unconditional"] = await c.put(f"{path}/w1", json={**w, "metadata": {"name": "w1"}})
            got["model"] = api.peek("Widget", NS, "w1")

    clean(run(scenario))
    assert got["before"].status_code == 404
    assert [c["type"] for c in got["crd"]["status"]["conditions"]] == ["NamesAccepted", "Established"]
    assert {"name": "example.com", "versions": [{"groupVersion": "example.com/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "example.com/v1", "version": "v1"}} in got["groups"]["groups"]
    names = {r["name"]: r for r in got["resources"]["resources"]}
    assert names["widgets"]["kind"] == "Widget" and names["widgets"]["shortNames"] == ["wd"]
    assert names["widgets"]["namespaced"] is True and "widgets/status" in names
    created = got["created"]
    assert created["apiVersion"] == "example.com/v1" and created["extra"] == {"kept": [1, 2]}
    assert created["metadata"]["generation"] == 1 and created["status"] == {"ignored": True}
    smp = got["smp"].json()
    assert got["smp"].status_code == 415 and smp["reason"] == "UnsupportedMediaType"
    assert "application/json-patch+json, application/merge-patch+json" in smp["message"]
    assert got["merge"]["spec"] == {"size": 2} and got["merge"]["status"] == {"ignored": True}  # status: subresource
    assert got["merge"]["metadata"]["generation"] == 2
    assert got["status"]["status"] == {"ignored": True, "ready": True} and got["status"]["spec"] == {"size": 2}
    assert got["unconditional"].status_code == 422  # a custom resource's update needs a resourceVersion
    model = got["model"]
    assert model is not None and model.spec == {"size": 2} and model.extra["extra"] == {"kept": [1, 2]}
    assert set(model.extra) == {"extra", "metadata"} and set(model.extra["metadata"]) == {"managedFields"}


def _watch_scenario(collected: list[Any], *, rv: str | None = None, compact: bool = False, more: bool = False,
                    stop_after: int = 3, **options: Any) -> Any:
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "a"))
        if compact or more:
            await api.create(KubeObject("ConfigMap", NS, "b"))
        if compact:
            api.compact()

        async def writer() -> None:
            await api.create(KubeObject("ConfigMap", NS, "c"))
            await api.create(KubeObject("ConfigMap", NS, "d"))

        async def reader() -> None:
            async with raw(api, "reader", **options) as c:
                params = {"watch": "true"} | ({"resourceVersion": rv} if rv is not None else {})
                try:
                    url = "/api/v1/namespaces/default/configmaps"
                    async with c.stream("GET", url, params=params) as resp, aclosing(resp.aiter_lines()) as lines:
                        async for line in lines:  # (aclosing: a client that stops reading closes the stream)
                            ev = json.loads(line)
                            collected.append((ev["type"], ev["object"]))
                            if len(collected) == stop_after:
                                return
                    collected.append(("END", None))
                except httpx.ReadError as exc:
                    collected.append(("BROKEN", str(exc)))

        world.spawn("reader", reader)
        world.spawn("writer", writer)

    return scenario


def _names(collected: list[Any]) -> list[str]:
    return [f"{t} {o['metadata']['name']}" if isinstance(o, dict) and "metadata" in o else t for t, o in collected]


class _Recorder(RandomChooser):
    """A random chooser that keeps the options it was offered (label, nominal time, end of window)."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.offered: list[Any] = []

    def schedule(self, options: Any, now: float, can_wait: bool) -> int:
        self.offered.extend(options)
        return super().schedule(options, now, can_wait)  # type: ignore[no-any-return]


def test_watch_stream_lag_and_drop_are_choices() -> None:
    # canonical: the initial state, then the writer's two creates, in order
    got: list[Any] = []
    clean(run(_watch_scenario(got)))
    assert _names(got) == ["ADDED a", "ADDED c", "ADDED d"]
    # every delivery is offered with the informer's 2 s window, and some seed delivers later than nominal
    late: set[int] = set()
    orders: set[tuple[str, ...]] = set()
    for seed in range(12):
        got = []
        chooser = _Recorder(seed)
        clean(run_once(_watch_scenario(got), chooser))
        deliveries = [o for o in chooser.offered if "reader/watch/ConfigMap deliver" in o.label]
        # each window ends 2 s after the event entered the stream (its commit, or the watch request)
        assert deliveries and all(0 <= o.latest - o.nominal <= 2.0 for o in deliveries)
        assert any(o.latest - o.nominal == 2.0 for o in deliveries)
        orders.add(tuple(_names(got)))
        if any(o.nominal > 0 for o in deliveries):
            late.add(seed)
    assert orders == {("ADDED a", "ADDED c", "ADDED d")}  # lag never reorders one stream
    assert late  # and some runs let time pass before a delivery: lag is the search's choice
    # a drop breaks the connection before an event is sent: the client's read fails, the event is lost
    got = []
    chooser = FaultChooser("fault: reader/watch/ConfigMap watch drops before ADDED default/c")
    clean(run_with(_watch_scenario(got, watch_drops=True), chooser))
    assert chooser.taken and _names(got)[:1] == ["ADDED a"] and got[-1][0] == "BROKEN"
    # an end closes the stream cleanly before the event: the body ends
    got = []
    chooser = FaultChooser("fault: reader/watch/ConfigMap watch ends before ADDED default/d")
    clean(run_with(_watch_scenario(got, watch_ends=True), chooser))
    assert _names(got) == ["ADDED a", "ADDED c", "END"]
    assert not any("watch drops" in p for p in chooser.points)  # watch_drops not enabled: no such point


def test_watch_from_compacted_revision_is_a_410_error_event() -> None:
    got: list[Any] = []
    clean(run(_watch_scenario(got, rv="5", compact=True)))  # a is rv 5 (after the namespaces), b rv 6
    assert got[0][0] == "ERROR" and got[1] == ("END", None)
    status = got[0][1]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"] == "too old resource version: 5 (6) for configmaps"
    # the compaction fault at a watch request from a revision gives the same
    got = []
    chooser = FaultChooser("fault: reader/watch/ConfigMap watch from")
    clean(run_with(_watch_scenario(got, rv="5", more=True, compactions=True), chooser))
    assert chooser.taken == ["fault: reader/watch/ConfigMap watch from rv=5 gets 410 Gone (the server compacted past it)"]
    assert got[0][0] == "ERROR" and got[0][1]["code"] == 410
    # a watch from a live revision sends only what came after it
    got = []
    clean(run(_watch_scenario(got, rv="6", stop_after=2)))
    assert _names(got)[:2] == ["ADDED c", "ADDED d"]

    # lightkube raises it as an ApiError with the 410 Status
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "a"))
        await api.create(KubeObject("ConfigMap", NS, "b"))
        api.compact()
        client = lightkube(api)
        try:
            async for _ev in client.watch(ConfigMap, resource_version="5"):
                pass
        except ApiError as err:
            seen["status"] = err.status

    clean(run(scenario))
    assert seen["status"].code == 410 and seen["status"].reason == "Expired"


_DIGEST = """
import sys
from harness.sim import RandomChooser, run_once
from examples.lightkube_operator import scenario
for seed in range(int(sys.argv[1])):
    out = run_once(scenario, RandomChooser(seed), params={"fixed": False}, faults=frozenset({"*"}), notes=True)
    print(out.trace.digest(), len(out.trace), out.violation is not None)
"""


def test_real_client_run_is_deterministic_across_processes() -> None:
    from examples.lightkube_operator import scenario

    here = [run_once(scenario, RandomChooser(seed), params={"fixed": False}, faults=frozenset({"*"}), notes=True)
            for seed in range(4)]
    lines = [f"{o.trace.digest()} {len(o.trace)} {o.violation is not None}" for o in here]
    assert len({o.trace.digest() for o in here}) == 4  # different seeds, different runs
    for hash_seed in ("1", "31337"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        done = subprocess.run([sys.executable, "-c", _DIGEST, "4"], cwd=ROOT, env=env, capture_output=True, text=True,
                              check=True)
        assert done.stdout.split("\n")[:4] == lines
