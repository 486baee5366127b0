"""Discovery and OpenAPI reads of an operator process are answered without a step of the world.

A client reads a few documents in turn at its start (client-go ``/api`` then
``/apis``; kopf each group's ``/apis/<group>/<version>``; kubectl
``/openapi/v3``), each answered from the kinds served, which only a step
changes. As steps, each cost a quiescence wait (a Go manager's start-up
timers: 0.2 s each) for no choice. Here a stdlib client reads three documents,
then creates a CRD, reads ``/apis`` again and creates a ConfigMap: the trace
holds the two writes and no read of a document, and the second ``/apis``
names the group the CRD added (it is answered where it is asked, after the
CRD's step, not from the first answer).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import harness as h
from harness.kube import APIServer
from harness.operators import ExternalOperator
from harness.sim import PlanChooser, run_once

CLIENT = '''
import json, os, sys, urllib.request

server = [l.split("server:")[1].strip() for l in open(os.environ["KUBECONFIG"]) if "server:" in l][0]

def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())

seen = {"api": call("GET", "/api")["versions"], "groups": [g["name"] for g in call("GET", "/apis")["groups"]],
        "version": call("GET", "/version")["gitVersion"]}
call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]}})
seen["after"] = [g["name"] for g in call("GET", "/apis")["groups"]]
call("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "done"}, "data": {
    "seen": json.dumps(seen)}})
'''


def test_discovery_reads_are_no_steps(tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    seen: dict[str, Any] = {}

    @h.scenario
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        op = ExternalOperator(api, "reader", [sys.executable, str(script)], tls=False, quiet=0.3).start()
        seen["op"], seen["api"] = op, api
        await world.sleep(5.0)

    out = run_once(scenario, PlanChooser(()))
    op, api = seen["op"], seen["api"]
    assert out.violation is None, out.violation
    labels = [r.label for r in out.trace if r.actor.startswith("reader/")]
    assert not [x for x in labels if re.search(r"GET /(api|apis|version)$", x)], labels
    assert any("CustomResourceDefinition" in x for x in labels) and any("ConfigMap" in x for x in labels), labels
    assert op.documents_read == 4
    done = api.peek("ConfigMap", "default", "done")
    assert done is not None, op.logs
    read = json.loads(done.extra["data"]["seen"])
    assert read["api"] == ["v1"] and read["version"].startswith("v1.")
    assert "example.com" not in read["groups"] and "apps" in read["groups"]
    assert "example.com" in read["after"]  # answered where it was asked: after the CRD's step
