"""A process operator's own words: its output lines are notes of the step it was answering, in the trace and the
story, and what it said went wrong ranks above its other lines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator
from harness.sim import run_once
from harness.sim._choice import _Canonical

OPERATOR = r'''
import base64, json, os, ssl, sys, time, urllib.request, yaml

cluster = yaml.safe_load(open(os.environ["KUBECONFIG"]))["clusters"][0]["cluster"]
ca = cluster.get("certificate-authority-data")
ctx = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None
base = cluster["server"] + "/api/v1/namespaces/default/configmaps"
items = json.load(urllib.request.urlopen(base, context=ctx))["items"]
print(f"listed {len(items)} configmaps", flush=True)
for cm in items:
    if cm["metadata"]["name"] == "input":
        print("ERROR reconcile input: the output is missing, creating it without a lock", flush=True)
        body = json.dumps({"metadata": {"name": "output"}}).encode()
        req = urllib.request.Request(base, data=body, headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(req, context=ctx).read()
        print("created output", flush=True)
time.sleep(3600)
'''


def _scenario(tmp: Path) -> Any:
    script = tmp / "output_op.py"  # (not operator.py: that name shadows the standard library's module)
    script.write_text(OPERATOR)

    @h.scenario
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "input"))
        ExternalOperator(api, "app-operator", [sys.executable, str(script)]).start()
        await world.sleep(2.0, "the user waits")
        world.at_end(lambda: api.peek("ConfigMap", "default", "output") is None, "the operator creates nothing")

    return scenario


def test_process_output_lines_are_notes_of_their_step(tmp_path: Path) -> None:
    out = run_once(_scenario(tmp_path), _Canonical(), notes=True)
    notes = [n for n in out.trace.notes if n.field("output")]
    said = [n.text for n in notes]
    assert said == ["app-operator: listed 1 configmaps",
                    "app-operator: ERROR reconcile input: the output is missing, creating it without a lock",
                    "app-operator: created output"], said
    step_of = {r.step: r for r in out.trace}
    listed, error, created = notes
    # each line is a note of the step the process was answering when it wrote it: the LIST's answer, then the
    # POST's (the error line was written before the POST, after the LIST's answer)
    assert step_of[listed.step].actor.startswith("app-operator/GET "), step_of[listed.step]
    assert step_of[created.step].actor.startswith("app-operator/POST "), step_of[created.step]
    assert listed.step <= error.step <= created.step
    assert error.field("level") == "ERROR" and listed.field("level") == "INFO"
    # notes never change a run: the same run without them has the same steps
    assert [r.label for r in run_once(_scenario(tmp_path), _Canonical()).trace] == [r.label for r in out.trace]


def test_story_prefers_errors_the_operator_logged(tmp_path: Path) -> None:
    result = h.explore(_scenario(tmp_path), strategy="random", budget=1, seed=0, prove_minimal=False)
    assert result.found, result.outcome
    story = str(result.counterexample.story())
    assert "ERROR reconcile input: the output is missing" in story, story
