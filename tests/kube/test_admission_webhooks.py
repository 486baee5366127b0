"""Admission webhooks called by the served API as kube-apiserver calls them (``harness/kube/_http/_webhooks.py``),
and CRDs established and discoverable as envtest waits for them."""

from __future__ import annotations

import base64
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import trustme

import harness as h
from harness.kube import APIServer, KubeObject
from harness.sim import ReplayChooser, run_live, run_once
from tests.kube.kube_support import LIMITS, clean

NS = "default"


class Webhooks:
    """A real HTTPS webhook server (the test's manager): what each path was asked, and its answers."""

    def __init__(self) -> None:
        ca = trustme.CA()
        cert = ca.issue_cert("127.0.0.1", "localhost")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self.ca_bundle = base64.b64encode(ca.cert_pem.bytes()).decode()
        #: the serving certificate itself, as envtest's caBundle is (``pkg/envtest/webhook.go``, ``setupCA``)
        self.leaf_bundle = base64.b64encode(cert.cert_chain_pems[0].bytes()).decode()
        self.received: list[tuple[str, dict[str, Any]]] = []
        hooks = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hooks.received.append((self.path, review))
                answer = json.dumps(hooks.answer(self.path.split("?")[0], review["request"])).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, path: str, request: dict[str, Any]) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        obj = request.get("object") or {}
        if path == "/mutate":
            ops = [{"op": "add", "path": "/metadata/labels", "value": {}}] if not obj["metadata"].get("labels") else []
            ops.append({"op": "add", "path": "/metadata/labels/admitted-by", "value": "mutate"})
            response.update(patchType="JSONPatch", patch=base64.b64encode(json.dumps(ops).encode()).decode())
        elif path == "/validate" and (obj.get("data") or {}).get("forbidden") == "yes":
            response.update(allowed=False, status={"message": "data.forbidden may not be yes"})
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def webhooks() -> Iterator[Webhooks]:
    server = Webhooks()
    try:
        yield server
    finally:
        server.close()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hook(name: str, url: str, ca: str, resources: list[str], operations: list[str], **more: Any) -> dict[str, Any]:
    return {"name": name, "clientConfig": {"url": url, "caBundle": ca}, "sideEffects": "None",
            "admissionReviewVersions": ["v1"], "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "resources": resources, "operations": operations}], **more}


def test_admission_webhooks_called_as_upstream(webhooks: Webhooks) -> None:
    seen: dict[str, Any] = {}
    closed = closed_port()
    ca = webhooks.ca_bundle

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="envtest"), base_url="http://kube") as c:
            base = "/apis/admissionregistration.k8s.io/v1"
            seen["unknown"] = await c.post(f"{base}/validatingwebhookconfigurations", json={
                "metadata": {"name": "bad"}, "webhooks": [{**hook("x.example.com", webhooks.url("/validate"), ca,
                                                                 ["configmaps"], ["CREATE"]), "sideEffects": "Unknown"}]})
            seen["mcfg"] = await c.post(f"{base}/mutatingwebhookconfigurations", json={
                "metadata": {"name": "a-mutating"}, "webhooks": [
                    hook("mutate.example.com", webhooks.url("/mutate"), ca, ["configmaps"], ["CREATE", "UPDATE"],
                         timeoutSeconds=5),
                    hook("gone.example.com", f"https://127.0.0.1:{closed}/gone", ca, ["configmaps"], ["CREATE"],
                         failurePolicy="Ignore"),
                    hook("never.example.com", webhooks.url("/never"), ca, ["*"], ["*"],
                         objectSelector={"matchLabels": {"never": "true"}}),
                ]})
            await c.post(f"{base}/validatingwebhookconfigurations", json={
                "metadata": {"name": "b-validating"}, "webhooks": [
                    hook("validate.example.com", webhooks.url("/validate"), ca, ["configmaps"],
                         ["CREATE", "UPDATE", "DELETE"]),
                    hook("secrets.example.com", f"https://127.0.0.1:{closed}/secrets", ca, ["secrets"], ["*"]),
                ]})
            # a configuration kept from before v1 (sideEffects Unknown, which v1 no longer accepts): dry runs refused
            await api.create(KubeObject("ValidatingWebhookConfiguration", "", "legacy", extra={"webhooks": [
                {**hook("legacy.example.com", webhooks.url("/legacy"), ca, ["services"], ["CREATE"]),
                 "sideEffects": "Unknown"}]}))
            seen["ok"] = await c.post(f"/api/v1/namespaces/{NS}/configmaps",
                                      json={"metadata": {"name": "ok"}, "data": {"a": "1"}})
            seen["denied"] = await c.post(f"/api/v1/namespaces/{NS}/configmaps",
                                          json={"metadata": {"name": "bad"}, "data": {"forbidden": "yes"}})
            seen["patched"] = await c.patch(f"/api/v1/namespaces/{NS}/configmaps/ok", json={"data": {"b": "2"}},
                                            headers={"Content-Type": "application/merge-patch+json"})
            seen["patch_denied"] = await c.patch(f"/api/v1/namespaces/{NS}/configmaps/ok",
                                                 json={"data": {"forbidden": "yes"}},
                                                 headers={"Content-Type": "application/merge-patch+json"})
            seen["secret"] = await c.post(f"/api/v1/namespaces/{NS}/secrets", json={"metadata": {"name": "s"}})
            seen["dry"] = await c.post(f"/api/v1/namespaces/{NS}/services?dryRun=All",
                                       json={"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}})
            seen["deleted"] = await c.delete(f"/api/v1/namespaces/{NS}/configmaps/ok")
            seen["config"] = (await c.get(f"{base}/mutatingwebhookconfigurations/a-mutating")).json()
        seen["stored"] = {n: api.peek("ConfigMap", NS, n) for n in ("ok", "bad")}
        seen["secret_stored"] = api.peek("Secret", NS, "s")

    out = clean(run_once(scenario, ReplayChooser([]), limits=LIMITS, notes=True))

    # v1 refuses a webhook with side effects; the defaults are upstream's
    assert seen["unknown"].status_code == 422
    assert seen["unknown"].json()["message"] == (
        'ValidatingWebhookConfiguration.admissionregistration.k8s.io "bad" is invalid: webhooks[0].sideEffects: '
        'Unsupported value: "Unknown": supported values: "None", "NoneOnDryRun"')
    assert seen["mcfg"].status_code == 201
    first = seen["config"]["webhooks"][0]
    assert (first["failurePolicy"], first["matchPolicy"], first["timeoutSeconds"], first["reinvocationPolicy"],
            first["namespaceSelector"], first["rules"][0]["scope"]) == ("Fail", "Equivalent", 5, "Never", {}, "*")
    assert seen["config"]["webhooks"][2]["timeoutSeconds"] == 10

    # the mutating webhook's label is stored; the denied object is not
    assert seen["ok"].status_code == 201 and seen["ok"].json()["metadata"]["labels"] == {"admitted-by": "mutate"}
    assert seen["stored"]["bad"] is None
    assert seen["denied"].status_code == 400
    assert seen["denied"].json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 400,
        "message": 'admission webhook "validate.example.com" denied the request: data.forbidden may not be yes'}
    assert seen["patched"].status_code == 200 and seen["patched"].json()["data"] == {"a": "1", "b": "2"}
    assert seen["patch_denied"].status_code == 400

    # a failed call under failurePolicy Fail (the default) is upstream's 500; nothing stored
    why = (f'failed calling webhook "secrets.example.com": failed to call webhook: Post '
           f'"https://127.0.0.1:{closed}/secrets?timeout=10s": dial tcp 127.0.0.1:{closed}: connect: connection refused')
    assert seen["secret"].status_code == 500
    assert seen["secret"].json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                     "message": f"Internal error occurred: {why}", "reason": "InternalError",
                                     "details": {"causes": [{"message": why}]}, "code": 500}
    assert seen["secret_stored"] is None

    # a dry run never reaches a webhook that has side effects: 400, whatever its failure policy
    assert seen["dry"].status_code == 400
    assert seen["dry"].json()["message"] == 'admission webhook "legacy.example.com" does not support dry run'
    assert seen["dry"].json()["reason"] == "BadRequest"
    assert seen["deleted"].status_code == 200

    # what the webhooks were asked: never the one whose objectSelector does not match, never the legacy one
    paths = [(p, r["request"]["operation"], r["request"]["name"]) for p, r in webhooks.received]
    assert paths == [
        ("/mutate?timeout=5s", "CREATE", "ok"), ("/validate?timeout=10s", "CREATE", "ok"),
        ("/mutate?timeout=5s", "CREATE", "bad"), ("/validate?timeout=10s", "CREATE", "bad"),
        ("/mutate?timeout=5s", "UPDATE", "ok"), ("/validate?timeout=10s", "UPDATE", "ok"),
        ("/mutate?timeout=5s", "UPDATE", "ok"), ("/validate?timeout=10s", "UPDATE", "ok"),
        ("/validate?timeout=10s", "DELETE", "ok"),
    ]
    review = webhooks.received[0][1]
    assert review["apiVersion"] == "admission.k8s.io/v1" and review["kind"] == "AdmissionReview"
    req = review["request"]
    gvk, gvr = {"group": "", "version": "v1", "kind": "ConfigMap"}, {"group": "", "version": "v1", "resource": "configmaps"}
    assert (req["uid"], req["kind"], req["resource"], req["requestKind"], req["requestResource"]) == (
        "00000000-0000-4000-8000-000000000001", gvk, gvr, gvk, gvr)
    assert (req["namespace"], req["oldObject"], req["dryRun"], "subResource" in req) == (NS, None, False, False)
    assert req["userInfo"] == {"username": "race-harness", "groups": ["system:masters", "system:authenticated"]}
    assert req["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert req["object"]["data"] == {"a": "1"} and "uid" not in req["object"]["metadata"]
    validated = webhooks.received[1][1]["request"]["object"]  # the validating webhook sees the mutated object
    assert validated["metadata"]["labels"] == {"admitted-by": "mutate"}
    update = webhooks.received[4][1]["request"]
    assert update["oldObject"]["data"] == {"a": "1"} and update["object"]["data"] == {"a": "1", "b": "2"}
    assert update["options"] == {"kind": "PatchOptions", "apiVersion": "meta.k8s.io/v1"}
    delete = webhooks.received[-1][1]["request"]
    assert delete["object"] is None and delete["oldObject"]["metadata"]["name"] == "ok"
    assert delete["options"]["kind"] == "DeleteOptions"
    assert len({r["request"]["uid"] for _p, r in webhooks.received}) == len(webhooks.received)

    # each call is a step of the run, its answer one more; each verdict is told
    labels = [r.label for r in out.trace]
    for name in ("mutate", "validate", "gone"):
        assert f"admission webhook {name}.example.com CREATE ConfigMap default/ok" in labels
        assert f"admission webhook {name}.example.com answers CREATE ConfigMap default/ok" in labels
    assert not any("never.example.com" in label or "legacy.example.com" in label for label in labels)
    told = [n.text for n in out.trace.notes if n.kind == "admission"]
    assert "admission webhook mutate.example.com allowed CREATE ConfigMap default/ok (patched 2 ops)" in told
    assert any(t.startswith("admission webhook gone.example.com failed CREATE ConfigMap default/ok: failed to call "
                            "webhook: Post") and t.endswith("(failurePolicy Ignore: the request goes on)") for t in told)
    assert ("admission webhook validate.example.com denied CREATE ConfigMap default/bad: admission webhook "
            '"validate.example.com" denied the request: data.forbidden may not be yes') in told

    # the same answers give the same trace
    webhooks.received.clear()
    again = clean(run_once(scenario, ReplayChooser([]), limits=LIMITS, notes=True))
    assert again.trace.digest() == out.trace.digest()


def test_webhook_at_an_envtest_url_called_as_kube_apiservers_client_calls_it(webhooks: Webhooks) -> None:
    """envtest turns ``clientConfig.service`` into ``https://host:port/`` + a path that starts with ``/``, and its
    caBundle is the serving certificate, no CA's (controller-runtime ``pkg/envtest/webhook.go``,
    ``updateClientConfig`` and ``setupCA``). kube-apiserver's client (``k8s.io/apiserver/pkg/util/webhook/
    client.go`` ``HookClient``) makes the URL's path the rest config's APIPath, which client-go cleans
    (``rest/url_utils.go`` ``DefaultVersionedAPIPath``: ``path.Join("/", apiPath)``), and Go's ``crypto/x509``
    trusts a certificate of its roots as a chain of its own (``verify.go``): the call reaches ``/mutate`` over TLS.
    A certificate that is neither the server's nor its issuer's is still refused."""
    seen: dict[str, Any] = {}
    stranger = base64.b64encode(trustme.CA().issue_cert("127.0.0.1").cert_chain_pems[0].bytes()).decode()

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="envtest"), base_url="http://kube") as c:
            base = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
            await c.post(base, json={"metadata": {"name": "envtest"}, "webhooks": [
                hook("mutate.example.com", webhooks.url("//mutate/."), webhooks.leaf_bundle, ["configmaps"], ["CREATE"]),
                hook("stranger.example.com", webhooks.url("//mutate"), stranger, ["secrets"], ["CREATE"])]})
            seen["ok"] = await c.post(f"/api/v1/namespaces/{NS}/configmaps", json={"metadata": {"name": "ok"}})
            seen["refused"] = await c.post(f"/api/v1/namespaces/{NS}/secrets", json={"metadata": {"name": "s"}})

    clean(run_once(scenario, ReplayChooser([]), limits=LIMITS))
    assert seen["ok"].status_code == 201, seen["ok"].text
    assert seen["ok"].json()["metadata"]["labels"] == {"admitted-by": "mutate"}
    assert [p for p, _r in webhooks.received] == ["/mutate?timeout=10s"]
    assert seen["refused"].status_code == 500
    assert seen["refused"].json()["message"] == (
        'Internal error occurred: failed calling webhook "stranger.example.com": failed to call webhook: Post '
        f'"https://127.0.0.1:{webhooks.port}/mutate?timeout=10s": tls: failed to verify certificate: x509: '
        "certificate signed by unknown authority")


def test_crd_is_established_and_discovered_as_envtest_waits() -> None:
    """envtest's ``WaitForCRDs`` (controller-runtime ``pkg/envtest/crd.go``) polls
    ``ServerResourcesForGroupVersion`` of each served version until the CRD's plural is listed."""
    seen: dict[str, Any] = {}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}},
                                 {"name": "v1beta1", "served": True, "storage": False,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="envtest"), base_url="http://kube") as c:
            seen["created"] = (await c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)).json()
            for v in ("v1", "v1beta1"):
                seen[v] = (await c.get(f"/apis/example.com/{v}")).json()

    clean(run_once(scenario, ReplayChooser([]), limits=LIMITS))
    status = seen["created"]["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {"NamesAccepted": "True", "Established": "True"}
    assert status["acceptedNames"]["plural"] == "widgets" and status["storedVersions"] == ["v1"]
    for v in ("v1", "v1beta1"):
        assert seen[v]["groupVersion"] == f"example.com/{v}"
        assert "widgets" in [r["name"] for r in seen[v]["resources"]]


def test_admission_webhooks_on_the_real_clock(webhooks: Webhooks) -> None:
    """A real-clock run (``serve``'s) waits for the answer as for any timer: it neither settles nor deadlocks."""
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="envtest"), base_url="http://kube") as c:
            await c.post("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", json={
                "metadata": {"name": "m"}, "webhooks": [
                    hook("mutate.example.com", webhooks.url("/mutate"), webhooks.ca_bundle, ["configmaps"], ["CREATE"])]})
            seen["ok"] = await c.post(f"/api/v1/namespaces/{NS}/configmaps", json={"metadata": {"name": "ok"}})

    out = run_live(scenario, time_scale=1.0, timeout=30)
    assert out.violation is None
    assert seen["ok"].status_code == 201 and seen["ok"].json()["metadata"]["labels"] == {"admitted-by": "mutate"}
    assert [p for p, _r in webhooks.received] == ["/mutate?timeout=10s"]
