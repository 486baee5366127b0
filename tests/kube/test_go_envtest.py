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
``--quiet 0.3``: a Go process's timers (client-go's ``WaitForCacheSync`` polls
every 100 ms) are not seen by the quiet wait (``examples/go_operator.py``,
``GO_QUIET``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.kube.go_support import go_envtest_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "go" / "internal" / "controller"
FLAKY = "Secret controller when a ConfigMap asks for a Secret [It] keeps one Secret per ConfigMap through an update"
#: the search: every plan of one deviation, in order; the fixed suite runs as many runs as the buggy one needed
SEARCH = ("--strategy", "exhaustive:1", "--no-cluster", "--quiet", "0.3")


def _harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, check=False)


def _hunt(binary: Path, reports: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _harness("hunt-test", *SEARCH, "--cwd", str(SUITE), "--report-dir", str(reports), *args,
                    "--", str(binary), "-ginkgo.no-color")
