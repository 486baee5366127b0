"""A test command as the subject of a search (``harness.operators.TestProcess``, ``hunt-test``).

The command here is a small script on the official client, written as a test polls: ``Eventually``-style reads
every 10 ms while nothing changes, a write, and polls again. What must hold: its repeated reads at an unchanged
store are answered at once and are not steps (so the trace does not grow with the wall clock and two runs are
the same run), the first read at a new revision is a step, and the exit status is the verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness.kube import APIServer
from harness.operators import TestProcess
from harness.operators._test_process import failing_tests
from harness.sim import run_once
from harness.sim._choice import _Canonical

pytest.importorskip("kubernetes")

POLLER = textwrap.dedent('''
    import sys, time
    from kubernetes import client, config
    config.load_kube_config()
    core = client.CoreV1Api()

    def poll(seconds):
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            core.read_namespace("default"); n += 1
            time.sleep(0.01)
        return n

    before = poll(0.6)
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a")))
    after = poll(0.6)
    print(f"polled {before} and {after} times")
    sys.exit(int(sys.argv[1]))
''')


def _scenario(script: Path, code: int, seen: dict[str, Any]) -> Any:
    async def scenario(world: h.World) -> None:
        test = TestProcess(APIServer(world), [sys.executable, str(script), str(code)]).start()
        seen["test"] = test
        seen["code"] = await test.finished()

    return scenario


def test_polling_test_process_quiescence(tmp_path: Path) -> None:
    """Each run polls ~60 times a second for 1.2 s; only the reads at a new revision are steps: the namespace's
    read once before the create and once after (the store moved), every other poll answered at once. So the
    trace is the same in two runs, and a poll never stirs the wait: the runs do not stall to the quiet bound
    at each poll (whose count would make the trace grow with the wall clock)."""
    script = tmp_path / "poller.py"
    script.write_text(POLLER)
    digests, traced, at_once = [], [], []
    for _ in range(2):
        seen: dict[str, Any] = {}
        out = run_once(_scenario(script, 0, seen), _Canonical())
        assert out.violation is None, out.violation.describe()
        assert seen["code"] == 0
        digests.append(out.trace.digest())
        reads = [r for r in out.trace if r.label.startswith("start test/GET /api/v1/namespaces/default")]
        traced.append(len(reads))
        at_once.append(seen["test"].reads_at_once)
        log = seen["test"].logs[1]
        polls = [int(w) for w in log.split() if w.isdigit()]
        assert sum(polls) == seen["test"].reads_at_once + len(reads), (log, reads)
    assert traced == [2, 2], traced
    assert min(at_once) >= 10, at_once
    assert digests[0] == digests[1]


def test_a_failing_test_command_fails_the_run_naming_the_test(tmp_path: Path) -> None:
    script = tmp_path / "poller.py"
    script.write_text(POLLER + "\n")
    seen: dict[str, Any] = {}
    out = run_once(_scenario(script, 3, seen), _Canonical())
    assert out.violation is not None and out.violation.kind == "oracle", out.violation
    assert "exited with code 3" in out.violation.message and "polled" in out.violation.message


def test_failing_tests_named_from_each_format() -> None:
    go = "=== RUN   TestReconcile\n    x_test.go:12: want 1 Secret, got 2\n--- FAIL: TestReconcile (0.20s)\nFAIL\n"
    assert failing_tests(go) == [("TestReconcile", "x_test.go:12: want 1 Secret, got 2")]
    events = [{"Action": "run", "Test": "TestA"},
              {"Action": "output", "Test": "TestA", "Output": "=== RUN   TestA\n"},
              {"Action": "output", "Test": "TestA", "Output": "    a_test.go:9: boom\n"},
              {"Action": "fail", "Test": "TestA"}, {"Action": "fail"}]
    assert failing_tests("\n".join(json.dumps(e) for e in events)) == [("TestA", "a_test.go:9: boom")]
    ginkgo = ("Summarizing 1 Failure:\n  [FAIL] Secret controller [It] keeps one Secret per ConfigMap "
              "/src/internal/controller/secret_test.go:41\n")
    assert failing_tests(ginkgo) == [("Secret controller [It] keeps one Secret per ConfigMap", "")]
    pytest_out = "FAILED tests/test_x.py::test_one - AssertionError: ['a-1', 'a-2']\n1 failed in 2.1s\n"
    assert failing_tests(pytest_out) == [("tests/test_x.py::test_one", "AssertionError: ['a-1', 'a-2']")]
    nested = "--- FAIL: TestSuite (1.0s)\n    --- FAIL: TestSuite/creates (0.5s)\n"
    assert [n for n, _ in failing_tests(nested)] == ["TestSuite/creates"]


def test_hunt_test_cli_exit_codes(tmp_path: Path) -> None:
    """0: the test passed every run; 1: it failed (here on its own: no deviation, said so, no search after it);
    2: no command, a program that is not there, or a command that exits before its first request."""
    script = tmp_path / "poller.py"
    script.write_text(POLLER)

    def hunt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", "hunt-test", "--budget", "1",
                               "--report-dir", str(tmp_path / "r"), *args], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)

    passed = hunt("--", sys.executable, str(script), "0")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "[passed]" in passed.stdout and "clean (not a proof)" in passed.stdout
    failed = hunt("--", sys.executable, str(script), "1")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "[FAILS WITHOUT ANY DEVIATION]" in failed.stdout and "found by the canonical order" in failed.stdout
    assert list((tmp_path / "r").glob("*.json")), "the failing run's trace is written"
    for args, says in ((("--",), "give the test command after --"),
                       (("--", "no-such-program-here"), "not found on PATH"),
                       (("--", sys.executable, "-c", "import sys; sys.exit(4)"), "before it sent the apiserver a request")):
        bad = hunt(*args)
        assert bad.returncode == 2, (args, bad.stdout, bad.stderr)
        assert says in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
