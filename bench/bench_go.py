"""Cost of a Go operator process under the harness: the Go example's run against the same manager run bare.

Run: ``.venv/bin/python bench/bench_go.py [N]`` (N runs of each, best and median printed; default 5). Needs
Go (``examples/go_operator.py`` builds the manager once). Prints, measured in one run:

* **bare**: the manager (``--buggy --leader-elect=false``, as the example runs it) started against
  ``python -m harness serve`` (the real clock, nothing chosen) that already holds the example's ConfigMap, until
  its Secret is there (its first reconcile done: start to steady state), polled every 10 ms; and until both
  controllers logged ``Starting workers`` (their caches synced);
* **harness**: the example's canonical run (``examples/go_operator.py``, the same manager, the user's ConfigMap
  and edit, each of its requests a step), its wall time, how much of it the scheduler waited for the process
  (``RunOutcome.outside_seconds``), the number of those waits and the floor they cost (each lasts at least the
  quiet: ``GO_QUIET``);
* the ratio harness / bare, and the difference: what a run costs beyond the manager's own start.

Where the time goes is the last line: the waits' floor (their number times the quiet) against the rest of the
waiting (the manager's own start, its discovery, its caches' sync: ``WaitForCacheSync`` polls every 100 ms).
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from examples.go_operator import GO_QUIET, build_manager, scenario
from harness.sim import World, run_once
from harness.sim._choice import _Canonical

ROOT = Path(__file__).resolve().parents[1]
SECRETS = "/api/v1/namespaces/default/secrets"


def _trusting(kubeconfig: Path) -> object:
    import base64
    import ssl

    import yaml

    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())


def bare(manager: Path, folder: Path) -> tuple[float, float]:
    """Seconds from the manager's start to its Secret (its first reconcile done), and to both workers started."""
    kubeconfig = folder / "kubeconfig"
    serve = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(kubeconfig)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    popen = None
    try:
        assert serve.stdout is not None
        found = re.search(r"https://127\.0\.0\.1:\d+", serve.stdout.readline().decode())
        assert found, "serve printed no URL"
        with httpx.Client(base_url=found.group(0), timeout=10, verify=_trusting(kubeconfig)) as api:  # type: ignore[arg-type]
            created = api.post("/api/v1/namespaces/default/configmaps", json={
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app",
                                                                      "labels": {"app.example/want": "secret"}}})
            assert created.status_code == 201, created.text
            log = folder / "manager.log"
            with log.open("wb") as out:
                started = time.perf_counter()
                popen = subprocess.Popen([str(manager), "--leader-elect=false", "--buggy"],
                                         env={**os.environ, "KUBECONFIG": str(kubeconfig)}, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
            synced = None
            while time.perf_counter() - started < 30:
                if synced is None and log.read_text(errors="replace").count("Starting workers") == 2:
                    synced = time.perf_counter() - started
                if api.get(SECRETS, params={"labelSelector": "app.example/owner=app"}).json()["items"]:
                    steady = time.perf_counter() - started
                    if synced is None:
                        synced = steady
                    return steady, synced
                time.sleep(0.01)
            raise AssertionError(f"no Secret within 30 s:\n{log.read_text(errors='replace')[-2000:]}")
    finally:
        for p, sig in ((popen, signal.SIGKILL), (serve, signal.SIGINT)):
            if p is not None and p.poll() is None:
                os.killpg(p.pid, sig)
                p.wait(10)
        if serve.stdout is not None:
            serve.stdout.close()


def harnessed() -> tuple[float, float, int, int]:
    """One canonical run of the example: its wall seconds, its waits for the process (seconds, count), steps."""
    waits = [0]
    original = World._wait_outside

    async def counted(self: World, held: float = 0.0) -> None:
        waits[0] += 1
        await original(self, held)

    World._wait_outside = counted  # type: ignore[method-assign]  # (counts the waits; changes nothing of them)
    try:
        started = time.perf_counter()
        out = run_once(scenario, _Canonical(), params={"fixed": False})
        wall = time.perf_counter() - started
    finally:
        World._wait_outside = original  # type: ignore[method-assign]
    assert out.violation is None, out.violation
    return wall, out.outside_seconds, waits[0], len(list(out.trace))


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(n: int = 5) -> None:
    warnings.simplefilter("ignore", ResourceWarning)
    manager = build_manager()
    print(f"{os.cpu_count()} cores, load average before: {_load()}; {n} runs each, best / median")
    steady, synced = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            s, w = bare(manager, folder)
            steady.append(s)
            synced.append(w)
    runs = [harnessed() for _ in range(n)]
    walls = [r[0] for r in runs]
    waited = [r[1] for r in runs]
    best_bare, best_run = min(steady), min(walls)
    print(f"bare manager, start to its Secret:    {best_bare:6.2f} s / {statistics.median(steady):6.2f} s "
          f"(caches synced, both workers started: {min(synced):.2f} s / {statistics.median(synced):.2f} s)")
    print(f"harness, the example's canonical run: {best_run:6.2f} s / {statistics.median(walls):6.2f} s, "
          f"{runs[0][3]} steps, {runs[0][2]} waits for the process")
    median_run, median_bare = statistics.median(walls), statistics.median(steady)
    print(f"ratio harness / bare: {best_run / best_bare:.2f}x (median {median_run / median_bare:.2f}x); a run costs "
          f"{best_run - best_bare:+.2f} s beyond the manager's own start to steady state (median "
          f"{median_run - median_bare:+.2f} s)")
    floor = runs[0][2] * GO_QUIET
    print(f"where it goes: waiting for the process {min(waited):.2f} s / {statistics.median(waited):.2f} s "
          f"({statistics.median(waited) / statistics.median(walls):.0%} of the run), of which at least {floor:.2f} s "
          f"is the quiet after each wait ({runs[0][2]} x {GO_QUIET} s); the rest of the run "
          f"{statistics.median(walls) - statistics.median(waited):.2f} s is the harness's own work")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
