"""The Go example operator's envtest suite (``examples/go/internal/controller``) hunted by ``hunt-test``.

The suite is kubebuilder's (Ginkgo v2, Gomega, envtest; a manager with the
reconcilers started in ``BeforeSuite``), compiled once with ``go test -c``
(``examples.go_operator.build_envtest_suite``) and run as the test command:
``USE_EXISTING_CLUSTER=true`` makes envtest use the served apiserver
(controller-runtime ``pkg/envtest/server.go``, ``Environment.Start``). Its
spec "keeps one Secret per ConfigMap through an update" passes live nearly
always; it fails when the Secret informer's ADDED of the controller's own
create comes after the ConfigMap's update (the cache-lag bug of
``internal/controller/secret_controller.go``). ``SECRET_OPERATOR_FIXED=1``
runs the fixed controller.

``--no-cluster``: envtest's own control plane has no namespace controller nor
garbage collector, and their informers would only add deliveries to order.
The buggy suite's search is ``exhaustive:1`` (every plan of one deviation, in
the canonical run's order): its find is one held delivery, a plan that replays
with fresh processes, at a run that does not move with a seed. The fixed suite
runs the default portfolio (random walk and PCT first), whose random walk
found the buggy suite's flake at its 5th run. Measured (2 shared cores, other work running): one run of the suite
takes about 1.4 s live and 6 s under the harness (``--quiet`` 0.15 after each
of its ~30 steps that touched the process; 10.6 s at 0.3); the find came at
run 17 in 102 s, one held delivery, proved minimal, and ``replay --runs 3``
reproduced 3 of 3 in 25 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kube.go_support import go_envtest_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "go" / "internal" / "controller"
FLAKY = "Secret controller when a ConfigMap asks for a Secret [It] keeps one Secret per ConfigMap through an update"
#: runs ``exhaustive:1`` may take to find the flake (measured: its 17th plan), with a margin
FOUND_WITHIN = 24
#: runs of the fixed suite under the default portfolio (seed 0), whose random walk found the buggy one's flake at its
#: 5th run (measured)
FIXED_RUNS = 6


def _harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, check=False)


def _hunt(binary: Path, reports: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _harness("hunt-test", "--no-cluster", "--json", "--cwd", str(SUITE), "--report-dir", str(reports), *args,
                    "--", str(binary), "-ginkgo.no-color")


def _line(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout + done.stderr
    return lines[-1]


def test_envtest_suite_flake_found_and_replayed(tmp_path: Path) -> None:
    """The buggy suite: the search finds its flaky spec failing (not on its own: the canonical order passes), in
    one held delivery on the test process's Secret watch, and the trace it writes fails that spec again when
    replayed with fresh processes."""
    binary = go_envtest_suite()
    done = _hunt(binary, tmp_path / "r", "--strategy", "exhaustive:1", "--budget", str(FOUND_WITHIN), "--shrink-budget", "4",
                 "--proof-budget", "2")
    line = _line(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert line["found"] is True and line["verdict"] == "found", line
    outcome = str(line["outcome"])
    assert "fails without any deviation" not in outcome, outcome
    assert f"{FLAKY} failed" in outcome, outcome
    trace = Path(str(line["trace"]))
    [held] = json.loads(trace.read_text())["plan"]  # one deviation: the Secret watch of the test process held
    assert held["hold"][1].startswith("test/watch/Secret deliver ADDED"), held
    replay = _harness("replay", str(trace), "--runs", "3", "--json", timeout=600)
    said = json.loads(replay.stdout.splitlines()[-1])
    assert said["reproduced"] >= 1, said
    assert FLAKY in str(said["violation"]), said


def test_envtest_suite_fixed_passes_every_run(tmp_path: Path) -> None:
    """The fixed controller (a deterministic name, AlreadyExists read as done) passes every run of a budget of six
    of the portfolio, the search whose random walk made the buggy one fail at its 5th run (clean is "N runs, no
    failure", never a proof)."""
    binary = go_envtest_suite()
    done = _hunt(binary, tmp_path / "r", "--budget", str(FIXED_RUNS), "--env", "SECRET_OPERATOR_FIXED=1")
    line = _line(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert line["found"] is False and line["runs"] == FIXED_RUNS, line
