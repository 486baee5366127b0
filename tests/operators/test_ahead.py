"""An operator process started ahead of its run (``harness.operators._ahead``).

The operator here is a few lines of the standard library: it writes down when it started, when it sent its first
request and when that request was answered (``time.monotonic`` is the system's monotonic clock, the harness's real
clock too), then creates a ConfigMap and sleeps. What must hold in a search of several runs: the second run's
process was started during the first run, its first request was sent before the second run began and answered only
after (held in the socket's backlog, not lost), the search's results are those of the same search without starting
ahead, and after the search no process of it and no folder of it is left.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness import _processes
from harness.explore import explore
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator, _ahead
from harness.sim import Trace

from ..operator_processes import gone_within, marked

pytestmark = pytest.mark.skipif(not _processes.available(), reason="reads /proc (Linux)")

OPERATOR = textwrap.dedent('''
    import base64, json, os, ssl, sys, time, urllib.request

    started = time.monotonic()
    cluster = {}
    for line in open(os.environ["KUBECONFIG"]):  # (the harness's kubeconfig: one cluster, its server and CA)
        key, _, value = line.strip().partition(": ")
        if key in ("server", "certificate-authority-data"):
            cluster[key] = value.strip('"')
    server = cluster["server"]
    context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    sent = time.monotonic()
    urllib.request.urlopen(server + "/api/v1/namespaces/default/configmaps", context=context).read()
    answered = time.monotonic()
    with open(os.path.join(os.environ["AHEAD_OUT"], f"{os.getpid()}.json"), "w") as f:
        json.dump({"started": started, "sent": sent, "answered": answered,
                   "folder": os.path.dirname(os.environ["KUBECONFIG"])}, f)
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made"}}).encode()
    urllib.request.urlopen(urllib.request.Request(server + "/api/v1/namespaces/default/configmaps", data=body,
                           method="POST", headers={"Content-Type": "application/json"}), context=context).read()
    time.sleep(3600)
''')


def _spare_connected() -> None:
    """The first run ends only once the next run's process has connected (its first request waits in the backlog):
    on a loaded machine an interpreter's start can outlast a run, and then the next run waits for the rest of it,
    which is not what this test looks at."""
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        _ahead.look()
        if any(s.connected is not None for s in _ahead.live_spares()):
            return
        time.sleep(0.02)


def _search(script: Path, out: Path, mark: str, *, ahead: bool) -> tuple[Any, list[dict[str, Any]]]:
    runs: list[dict[str, Any]] = []

    @h.scenario
    async def scenario(world: h.World) -> None:
        began = time.monotonic()
        api = APIServer(world)
        op = ExternalOperator(api, "ahead-operator", [sys.executable, str(script)], ahead=ahead, quiet=0.8,
                              env={"AHEAD_OUT": str(out), "AHEAD_MARK": mark})
        run: dict[str, Any] = {"began": began, "op": op}
        runs.append(run)
        world.on_end(lambda: run.update(digest=Trace._lazy(list(world._records)).digest()))
        if ahead and len(runs) == 1:
            world.on_end(_spare_connected)  # (called before the operator's own end: the reverse order)
        op.start()
        for _ in range(20):
            if any(c.name == "made" for c in api.peek_all("ConfigMap")):
                break
            await world.sleep(0.5, "user waits for the operator's ConfigMap")
        await api.create(KubeObject("ConfigMap", "default", "user"))
        await world.sleep(1.0, "user waits")

    result = explore(scenario, strategy="random", seed=3, budget=3, shrink_found=False, prove_minimal=False)
    return result, runs


def test_process_started_ahead_of_its_run(tmp_path: Path) -> None:
    script = tmp_path / "ahead_operator.py"
    script.write_text(OPERATOR)
    mark = uuid.uuid4().hex
    seen: dict[bool, tuple[Any, list[dict[str, Any]]]] = {}
    try:
        for ahead in (True, False):
            out = tmp_path / f"out-{ahead}"
            out.mkdir()
            seen[ahead] = _search(script, out, mark, ahead=ahead)
            # whatever it started, ahead or not, ended with the search: its processes and their folders
            assert gone_within(mark, 5.0) == [], f"processes left after the search (ahead={ahead})"
            assert _ahead.live_spares() == []
            written = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
            assert written, "the operator never answered"
            assert [w["folder"] for w in written if Path(w["folder"]).exists()] == []
            assert [f for f in (r["op"]._dir for r in seen[ahead][1]) if f is not None and f.exists()] == []

        result, runs = seen[True]
        assert result.verdict == "none-found" and result.runs == 3 and len(runs) == 3
        first, second = runs[0]["op"], runs[1]["op"]
        assert not first.adopted and second.adopted
        pid = second.popens[0].pid
        said = json.loads((tmp_path / "out-True" / f"{pid}.json").read_text())
        began = runs[1]["began"]
        # started during the first run (before the second began), and its first request held until it began
        assert runs[0]["began"] < said["started"] < began, (runs[0]["began"], said, began)
        assert said["sent"] < began <= said["answered"], (said, began)
        assert second.started_at is not None and second.started_at < began
        # without starting ahead: every process started within its own run
        off, off_runs = seen[False]
        assert not any(r["op"].adopted for r in off_runs)
        for r in off_runs:
            assert r["op"].started_at >= r["began"]
        # the same search: the same verdict, runs and steps, each run the same trace
        assert (off.verdict, off.runs, off.steps) == (result.verdict, result.runs, result.steps)
        assert [r["digest"] for r in off_runs] == [r["digest"] for r in runs]
    finally:
        for pid in marked(mark):
            os.kill(pid, 9)


def test_nothing_is_started_ahead_outside_a_search(tmp_path: Path) -> None:
    """A single run (a replay, a test's ``run_once``) has no next run: it starts no spare."""
    from harness.sim import run_once
    from harness.sim._choice import _Canonical

    script = tmp_path / "ahead_operator.py"
    script.write_text(OPERATOR)
    out = tmp_path / "out"
    out.mkdir()
    mark = uuid.uuid4().hex
    ops: list[ExternalOperator] = []

    async def scenario(world: h.World) -> None:
        op = ExternalOperator(APIServer(world), "ahead-operator", [sys.executable, str(script)], quiet=0.2,
                              env={"AHEAD_OUT": str(out), "AHEAD_MARK": mark}, ahead=True)
        ops.append(op)
        op.start()
        await world.sleep(1.0, "user waits")

    try:
        run_once(scenario, _Canonical())
        assert ops[0].requests >= 1
        assert _ahead.live_spares() == []
        assert gone_within(mark, 5.0) == []
        assert len(list(out.glob("*.json"))) == 1
    finally:
        for pid in marked(mark):
            os.kill(pid, 9)


def test_ahead_is_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(_ahead.AHEAD_ENV, "0")
    assert not _ahead.enabled(None) and _ahead.enabled(True)
    monkeypatch.setenv(_ahead.AHEAD_ENV, "1")
    assert _ahead.enabled(None) and not _ahead.enabled(False)
