"""Issue 59: every process an operator process starts ends with its run (``harness._processes``).

The operator (``tests/operator_processes.py``) forks a child that ignores
SIGTERM and starts a ``setsid()`` daemon by a double fork; the test looks for
them in ``/proc`` by a mark of its own in their environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness import _processes
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator
from harness.sim import run_once
from harness.sim._choice import Option, _Canonical
from tests.operator_processes import gone_within, leak_check, marked, wait_for

pytest.importorskip("yaml")
needs_proc = pytest.mark.skipif(not _processes.available(), reason="reads Linux's /proc (proc(5)); none here")


def _scenario(script: Path, mark: str, ready: Path, seen: dict[str, Any], **options: Any) -> Any:
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        op = ExternalOperator(api, "leaky", [sys.executable, str(script), "once"],
                              env={"LEAK_MARK": mark, "READY_DIR": str(ready)}, **options).start()
        seen["operator"] = op
        await world.sleep(1.0, "user waits")
        await api.create(KubeObject("ConfigMap", "default", "x"))
        # the world waited for the process to go quiet: its first request came after its child and daemon began
        seen["during"] = marked(mark)
        await world.sleep(1.0, "user waits")

    return scenario


def _sessions(ready: Path, what: str) -> set[str]:
    return {p.read_text().split()[0] for p in ready.glob(f"{what}-*")}


@needs_proc
def test_operator_process_descendants_never_outlive_the_run(tmp_path: Path) -> None:
    """After the run no process of the operator's is left: not the child that ignores SIGTERM (its parent died of
    it), not the daemon in a session of its own, reparented to init; and the run's temporary folder is gone."""
    with leak_check(tmp_path) as (mark, script, ready):
        seen: dict[str, Any] = {}
        out = run_once(_scenario(script, mark, ready, seen), _Canonical())
        assert out.violation is None, out.violation
        # they all ran, the daemon in another session than the operator and its child
        for what in ("operator", "child", "daemon"):
            wait_for(ready, what, 0.0)
        assert _sessions(ready, "daemon").isdisjoint(_sessions(ready, "operator") | _sessions(ready, "child"))
        assert len(seen["during"]) == 3, seen["during"]  # operator, child, daemon, alive during the run
        assert marked(mark) == []  # the run's end waited until they were gone
        op = seen["operator"]
        assert not op._dir.exists() and op.families[0].ended
        assert _processes.live_families() == []


class _CrashAtFirst(_Canonical):
    def __init__(self) -> None:
        self.crashed = False

    def fault(self, point: Option) -> bool:
        if not self.crashed and point.kind == "crash" and "leaky" in point.label:
            self.crashed = True
            return True
        return False


@needs_proc
def test_a_crash_fault_kills_what_the_process_started(tmp_path: Path) -> None:
    """A crash fault SIGKILLs the process with its child and its daemon (a container's processes die with it); the
    process started again has its own, ended at the run's end."""
    with leak_check(tmp_path) as (mark, script, ready):
        seen: dict[str, Any] = {}
        chooser = _CrashAtFirst()
        out = run_once(_scenario(script, mark, ready, seen, crash_faults=True), chooser)
        assert chooser.crashed and out.violation is None, out.violation
        op = seen["operator"]
        assert len(op.popens) == 2 and op.popens[0].returncode == -9
        assert len(seen["during"]) == 3, seen["during"]  # the second incarnation's three: the first's were killed
        assert len(list(ready.glob("daemon-*"))) == 2
        assert marked(mark) == []


@needs_proc
def test_end_all_kills_every_family_and_removes_the_folders(tmp_path: Path) -> None:
    """The safety net of the second Ctrl-C and of interpreter exit: every family still registered killed, at once,
    and every run folder removed."""
    with leak_check(tmp_path) as (mark, script, ready):
        folder = _processes.make_folder()
        family = _processes.ProcessFamily()
        # no apiserver: the operator fails at its request after starting its child and daemon (which stay)
        env = {**os.environ, "LEAK_MARK": mark, "READY_DIR": str(ready), "KUBECONFIG": str(tmp_path / "none")}
        family.start([sys.executable, str(script), "once"], env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
        wait_for(ready, "daemon")
        wait_for(ready, "child")
        assert family in _processes.live_families() and folder.is_dir()
        _processes.end_all()
        assert gone_within(mark, 0.0) == [] and not folder.exists() and _processes.live_families() == []
