"""Cost of an operator process under the harness: each process example's run against the same operator run bare.

Run: ``.venv/bin/python bench/bench_processes.py [N] [NAME ...]`` (N runs of each, default 5; NAME: ``official``,
``kopf``, ``lightkube``, ``go``; default all that can run here: Go needs its toolchain, kopf its package). Prints, measured in
one run, a row per operator:

* **bare**: the operator started as the example starts it, against ``python -m harness serve`` (the real clock,
  nothing chosen) that already holds the example's ConfigMap, until its Secret is there (its first reconcile done:
  start to steady state), polled every 10 ms;
* **harness**: the example's canonical run (``examples/external_operator.py``'s ``scenario`` and
  ``kopf_scenario``, ``examples/lightkube_operator.py``'s ``process_scenario``, ``examples/go_operator.py``; the
  same operator, the same user, each request a step), 2N+1 runs one after the other in one harness process, as a
  hunt runs them: the first pays the operator's start, the later ones find it started ahead when that is on.
  Their wall time (the first alone, and the median of the last N, once as many spares are kept ready as the run
  needs), and the share of it the scheduler spent waiting for the process (``RunOutcome.outside_seconds``);
* the ratio harness / bare (medians).

The official-client, kopf and Go examples run the same user: a ConfigMap ``app`` labelled
``app.example/want=secret``, the operator's Secret labelled ``app.example/owner=app``, an edit, a last wait; the
lightkube one an ``App`` (its CRD first) and its ``db-credentials`` Secret.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
import yaml

from harness.sim import run_once
from harness.sim._choice import _Canonical

ROOT = Path(__file__).resolve().parents[1]
SECRETS = "/api/v1/namespaces/default/secrets"


@dataclass
class Subject:
    """One process example: how to start its operator bare, and its scenario."""

    name: str
    argv: Callable[[], list[str]]
    env: dict[str, str]
    scenario: Callable[[], Any]
    #: what the user has made before the operator starts (path, body), and the list its steady state fills
    objects: tuple[tuple[str, dict[str, Any]], ...] = (
        ("/api/v1/namespaces/default/configmaps", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "app", "labels": {"app.example/want": "secret"}}}),)
    ready: tuple[str, dict[str, str]] = (SECRETS, {"labelSelector": "app.example/owner=app"})


def _official() -> Subject:
    from examples.external_operator import OPERATOR, scenario

    return Subject("official client", lambda: [sys.executable, str(OPERATOR), "--buggy"], {}, lambda: scenario)


def _kopf() -> Subject:
    from examples.external_operator import KOPF_OPERATOR, kopf_scenario

    return Subject("kopf", lambda: [sys.executable, "-m", "kopf", "run", "--standalone", "-n", "default",
                                    str(KOPF_OPERATOR)], {"RACE_FIXED": "0"}, lambda: kopf_scenario)


def _go() -> Subject:
    from examples.go_operator import build_manager, scenario

    return Subject("Go (controller-runtime)", lambda: [str(build_manager()), "--leader-elect=false", "--buggy"], {},
                   lambda: scenario)


def _lightkube() -> Subject:
    from examples.lightkube_operator import APP, CRD, process_scenario, secret_name

    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": CRD.name}, "spec": CRD.spec}
    app = {"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": APP}, "spec": {"engine": "postgres"}}
    return Subject("lightkube (anyio)", lambda: [sys.executable, "-m", "examples.lightkube_operator", "--buggy"], {},
                   lambda: process_scenario,
                   objects=(("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd),
                            ("/apis/example.com/v1/namespaces/default/apps", app)),
                   ready=(SECRETS, {"fieldSelector": f"metadata.name={secret_name(APP)}"}))


SUBJECTS: dict[str, Callable[[], Subject]] = {"official": _official, "kopf": _kopf, "lightkube": _lightkube,
                                              "go": _go}


def _trusting(kubeconfig: Path) -> ssl.SSLContext:
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())


def bare(subject: Subject, folder: Path) -> float:
    """Seconds from the operator's start to its Secret (its first reconcile done) against ``serve``."""
    kubeconfig = folder / "kubeconfig"
    serve = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(kubeconfig)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    popen = None
    try:
        assert serve.stdout is not None
        found = re.search(r"https://127\.0\.0\.1:\d+", serve.stdout.readline().decode())
        assert found, "serve printed no URL"
        with httpx.Client(base_url=found.group(0), timeout=10, verify=_trusting(kubeconfig)) as api:
            for path, body in subject.objects:
                for _ in range(100):  # (a CRD's resource is served once it is established)
                    created = api.post(path, json=body)
                    if created.status_code != 404:
                        break
                    time.sleep(0.05)
                assert created.status_code == 201, created.text
            log = folder / "operator.log"
            argv = subject.argv()
            with log.open("wb") as out:
                started = time.perf_counter()
                popen = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "KUBECONFIG": str(kubeconfig),
                                                              **subject.env},
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            while time.perf_counter() - started < 60:
                if api.get(subject.ready[0], params=subject.ready[1]).json()["items"]:
                    return time.perf_counter() - started
                time.sleep(0.01)
            raise AssertionError(f"no Secret within 60 s:\n{log.read_text(errors='replace')[-2000:]}")
    finally:
        for p, sig in ((popen, signal.SIGKILL), (serve, signal.SIGINT)):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, sig)
                p.wait(10)
        if serve.stdout is not None:
            serve.stdout.close()


def harnessed(subject: Subject, n: int) -> list[tuple[float, float]]:
    """``n`` canonical runs of the example one after the other: each run's wall seconds and waits for the process."""
    from harness._processes import search

    scenario = subject.scenario()
    runs = []
    with search():  # (the runs follow one another as a search's do: each finds its process started ahead)
        for _ in range(n):
            started = time.perf_counter()
            out = run_once(scenario, _Canonical(), params={"fixed": False})
            runs.append((time.perf_counter() - started, out.outside_seconds))
            assert out.violation is None, out.violation
    return runs


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def measure(name: str, n: int) -> dict[str, Any]:
    """One row: the bare medians and the harness's, in this process, now."""
    subject = SUBJECTS[name]()
    with tempfile.TemporaryDirectory() as tmp:
        steady = []
        for i in range(n):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            steady.append(bare(subject, folder))
    runs = harnessed(subject, 2 * n + 1)
    later = runs[n + 1:]  # (the spares' depth settles over the first runs: see harness.operators._ahead)
    wall = statistics.median(r[0] for r in later)
    waited = statistics.median(r[1] for r in later)
    return {"operator": subject.name, "bare": statistics.median(steady), "bare_min": min(steady),
            "first": runs[0][0], "run": wall, "run_min": min(r[0] for r in later), "waited": waited,
            "ratio": wall / statistics.median(steady)}


def main(argv: list[str]) -> None:
    warnings.simplefilter("ignore", ResourceWarning)
    n = int(argv[0]) if argv and argv[0].isdigit() else 5
    names = [a for a in argv if not a.isdigit()] or list(SUBJECTS)
    print(f"{os.cpu_count()} cores, load average before: {_load()}; {n} bare starts and {2 * n + 1} runs each (medians)")
    print("| operator | bare: start to its Secret (s) | harness: first run (s) | harness: later runs (s) "
          "| waiting for the process | ratio harness / bare |")
    print("|---|---|---|---|---|---|")
    for name in names:
        try:
            row = measure(name, n)
        except Exception as exc:  # (a toolchain or package missing here: said, the other rows go on)
            print(f"| {name} | not measured: {type(exc).__name__}: {str(exc)[:120]} | | | | |")
            continue
        print(f"| {row['operator']} | {row['bare']:.2f} (min {row['bare_min']:.2f}) | {row['first']:.2f} | "
              f"{row['run']:.2f} (min {row['run_min']:.2f}) | {row['waited']:.2f} s ({row['waited'] / row['run']:.0%}) "
              f"| {row['ratio']:.2f}x |")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main(sys.argv[1:])
