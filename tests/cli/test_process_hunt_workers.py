"""Issue 64, item 3: a hunt whose scenario runs an OS process uses every core, to the verdicts of one worker.

The scenario's operator is a few lines of standard-library Python (``COPIER``): it reads a ConfigMap and copies its
label into a Secret, once. The user updates the ConfigMap meanwhile; the copy is stale when the operator's read
goes before the update (one deviation). Each operator process writes its parent's pid into a folder of the test's,
so the test sees which processes ran the runs: the worker processes, or the hunt itself. The two hunts' counterexamples
are compared as a replay compares a run with a process (``Counterexample.divergence``): at the API boundary.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import ROOT

from harness._pool import usable_cores
from harness.explore import Counterexample

COPIER = r'''
import json, os, re, time, urllib.request

with open(os.path.join(os.environ["PARENTS_DIR"], f"{os.getppid()}-{os.getpid()}"), "w"):
    pass
server = re.search(r"server: (\S+)", open(os.environ["KUBECONFIG"]).read()).group(1)
cm = json.load(urllib.request.urlopen(server + "/api/v1/namespaces/default/configmaps/cfg"))
body = {"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "copy", "namespace": "default", "labels": {"v": cm["metadata"]["labels"]["v"]}}}
urllib.request.urlopen(urllib.request.Request(server + "/api/v1/namespaces/default/secrets", method="POST",
                                              data=json.dumps(body).encode(),
                                              headers={"Content-Type": "application/json"})).read()
time.sleep(3600)
'''

SCENARIO = '''
import sys
from pathlib import Path

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator


@h.scenario
async def copy(world: h.World) -> None:
    api = APIServer(world)

    def fresh() -> bool | str:
        copies, sources = api.peek_all("Secret"), api.peek_all("ConfigMap")
        if copies and sources and copies[0].labels["v"] != sources[0].labels["v"]:
            return f"the copy says {copies[0].labels['v']}, the ConfigMap {sources[0].labels['v']}"
        return True

    world.invariant(fresh, "the copy is fresh")
    await api.create(KubeObject("ConfigMap", "default", "cfg", labels={"v": "1"}))
    ExternalOperator(api, "copier", [sys.executable, str(Path(__file__).with_name("copier.py"))], tls=False,
                     quiet=0.05).start()
    cm = await api.get("ConfigMap", "default", "cfg")
    cm.labels["v"] = "2"
    await api.update(cm)
    await world.sleep(1.0, "user waits")
'''


def _hunt(tmp_path: Path, name: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], set[int], Path]:
    parents = tmp_path / f"parents-{name}"
    parents.mkdir()
    reports = tmp_path / f"reports-{name}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "hunt", f"{tmp_path / 'copier_scenario.py'}:copy", "--strategy", "random",
         "--budget", "8", "--seed", "1", "--report-dir", str(reports), *extra],
        cwd=ROOT, env={**os.environ, "PARENTS_DIR": str(parents)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    ran_under = {int(f.name.partition("-")[0]) for f in parents.iterdir()}
    return done, ran_under - {proc.pid}, reports


@pytest.mark.skipif(usable_cores() < 2, reason="needs two cores to see two workers")
def test_process_hunt_uses_every_core_with_same_verdicts(tmp_path: Path) -> None:
    (tmp_path / "copier.py").write_text(COPIER)
    (tmp_path / "copier_scenario.py").write_text(SCENARIO)
    cores = usable_cores()

    many, workers, many_reports = _hunt(tmp_path, "default")
    one, elsewhere, one_reports = _hunt(tmp_path, "one", "--workers", "1")

    for done in (many, one):
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    # said in the header, and seen: the operators of the default hunt ran under its worker processes (and under
    # the hunt itself only to tell the story), those of --workers 1 under the hunt alone
    flat = " ".join(many.stdout.split())
    assert re.search(rf"1 search in \d+ shards on {cores} workers: the scenario runs an ExternalOperator", flat), flat
    assert 2 <= len(workers) <= cores, workers
    assert "1 search in" in one.stdout and "on 1 worker: the scenario runs an ExternalOperator" in one.stdout
    assert "(real clock; this process)" in one.stdout
    assert elsewhere == set(), elsewhere
    # the same shards, so the same verdict and the same counterexamples: the same choices, and the same actions in
    # the same order to the same violation (a run with a process is compared at the API boundary, as a replay compares
    # it: a digest also holds how many of the process's requests had arrived at each decision, the OS's timing)
    shards = re.search(r"in (\d+) shards", flat)
    assert shards is not None and f"in {shards.group(1)} shards on 1 worker" in " ".join(one.stdout.split())
    verdicts = [[line.split(":")[0] for line in done.stdout.splitlines() if line.startswith("[")] for done in (many, one)]
    assert verdicts[0] == verdicts[1] and verdicts[0][0].startswith("[found]"), verdicts
    traces = sorted(p.name for p in many_reports.glob("*.json"))
    assert traces == sorted(p.name for p in one_reports.glob("*.json")) and traces
    for name in traces:
        a, b = Counterexample.load(many_reports / name), Counterexample.load(one_reports / name)
        assert a.violation.kind == "oracle" and a.deviations == 1
        # written down as a plan and proved minimal on the shrinker's budget (the search spent its own finding it)
        assert a.plan is not None and len(a.plan) == 1 and a.proved_minimal, (a.plan, a.proof)
        assert (a.choices, a.plan, a.seed, a.signature()) == (b.choices, b.plan, b.seed, b.signature())
        assert _actions(a) == _actions(b), (a.trace.render(), b.trace.render())


def _actions(cx: Counterexample) -> list[tuple[str, str, str, str | None, int | None]]:
    """What a replay of a run with a process compares: its actions in order (waits whatever waited), data choices
    and faults with their values."""
    return [(r.kind, r.actor, r.label if r.kind != "wait" else "", r.key, r.choice if r.kind in ("choose", "fault")
             else None) for r in cx.trace]
