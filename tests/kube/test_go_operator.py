"""A Go controller-runtime manager (``examples/go``) against the served API: started, elected, synced, stopped.

The manager is controller-runtime 0.25 on client-go 0.37, run as it ships
against ``python -m harness serve`` (the real clock, nothing explored): with
leader election on it creates and renews a Lease in protobuf, reads discovery
in its aggregated form, lists and watches through WatchList (client-go 1.35+
informers' default), writes a Secret in protobuf and an ``events.k8s.io/v1``
Event from its EventRecorder. Each of those failed against this API before it
answered them (a 415 for the Lease's protobuf; informers that wait for an
initial-events-end bookmark never sent), so one run from start to SIGTERM is
the test that it answers them as kube-apiserver does.
"""

from __future__ import annotations

import os
import re
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.kube.go_support import go_manager

ROOT = Path(__file__).resolve().parents[2]
LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/secret-operator.app.example"


def _until(what: str, probe: Callable[[], Any], timeout: float, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = probe()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout} s; the manager's log:\n{log.read_text(errors='replace')[-4000:]}")


def _stop(popen: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if popen.poll() is None:
        os.killpg(popen.pid, sig)
        try:
            popen.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()


def _trusting(kubeconfig: Path) -> ssl.SSLContext:
    """A TLS context that trusts the served API's CA, read from the kubeconfig ``serve`` wrote."""
    import base64

    import yaml

    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    return ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``python -m harness serve`` on a free port: its URL and its kubeconfig (stopped after the test)."""
    kubeconfig = tmp_path / "kubeconfig"
    serve = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(kubeconfig)], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline().decode()
        found = re.search(r"https://127\.0\.0\.1:\d+", line)  # (TLS, its CA in the kubeconfig, as the manager reads)
        assert found, f"serve printed {line!r}"
        yield found.group(0), kubeconfig
    finally:
        _stop(serve, signal.SIGINT)
        if serve.stdout is not None:
            serve.stdout.close()


def test_go_manager_with_leader_election_starts_and_stops(served: tuple[str, Path], tmp_path: Path) -> None:
    """The manager (leader election on, as it ships) becomes leader through a Lease it creates and renews in
    protobuf (client-go ``tools/leaderelection``, ``resourcelock/leaselock.go``), its two controllers' caches sync
    through WatchList (``tools/cache/reflector.go`` ``watchList``: without the ``k8s.io/initial-events-end``
    bookmark they never would), it makes the ConfigMap's Secret and records an ``events.k8s.io/v1`` Event, logs no
    error, and on SIGTERM releases its Lease (``LeaderElectionReleaseOnCancel``: ``release()`` empties the holder)
    and exits 0 within seconds."""
    manager = go_manager()
    url, kubeconfig = served
    log = tmp_path / "manager.log"
    api = httpx.Client(base_url=url, timeout=10, verify=_trusting(kubeconfig))
    with log.open("wb") as out:
        started = time.monotonic()
        popen = subprocess.Popen([str(manager)], env={**os.environ, "KUBECONFIG": str(kubeconfig)},
                                 stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        lease = _until("a Lease held", lambda: (r := api.get(LEASE)).status_code == 200
                       and r.json()["spec"].get("holderIdentity") and r.json(), 30, log)
        spec = lease["spec"]
        assert spec["leaseDurationSeconds"] == 15 and spec["leaseTransitions"] == 0, spec
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", spec["renewTime"]), spec  # a MicroTime
        _until("both controllers' workers started", lambda: log.read_text().count("Starting workers") == 2, 30, log)
        synced = time.monotonic() - started
        assert synced < 10, f"the caches took {synced:.1f} s to sync (the WatchList bookmark's 10 s wait?)"
        created = api.post("/api/v1/namespaces/default/configmaps", json={
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "app", "labels": {"app.example/want": "secret"}}})
        assert created.status_code == 201, created.text
        secrets = _until("the ConfigMap's Secret", lambda: api.get(
            "/api/v1/namespaces/default/secrets", params={"labelSelector": "app.example/owner=app"}).json()["items"],
            20, log)
        [secret] = secrets
        [owner] = secret["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("ConfigMap", "app", True), owner
        events = _until("its Event", lambda: [e for e in api.get("/apis/events.k8s.io/v1/namespaces/default/events")
                                              .json()["items"] if e.get("reason") == "SecretCreated"], 10, log)
        assert events[0]["reportingController"] == "secret-operator" and events[0]["regarding"]["name"] == "app"
        assert events[0]["note"] == f"created Secret {secret['metadata']['name']}", events[0]
        core = api.get(f"/api/v1/namespaces/default/events/{events[0]['metadata']['name']}").json()
        assert core["involvedObject"]["name"] == "app" and core["message"] == events[0]["note"], core
        held = int(lease["metadata"]["resourceVersion"])  # renewed every 2 s (RetryPeriod) by an update
        _until("the Lease renewed", lambda: int(api.get(LEASE).json()["metadata"]["resourceVersion"]) > held, 10, log)
        stopping = time.monotonic()
        os.killpg(popen.pid, signal.SIGTERM)
        code = popen.wait(15)
        assert code == 0 and time.monotonic() - stopping < 10, (code, log.read_text())
        assert api.get(LEASE).json()["spec"].get("holderIdentity", "") == ""  # released on the way out
        text = log.read_text()
        assert "\tERROR\t" not in text, text
        assert "Wait completed, proceeding to shutdown the manager" in text
    finally:
        _stop(popen, signal.SIGKILL)
        api.close()


# ------------------------------------------------------------------------------------------- searched
@pytest.fixture(scope="module")
def found() -> Any:
    """The buggy manager searched as the Python operators are (every plan of one deviation, each run a fresh
    process), shared by the tests that replay its plan: a run costs ~2 s (most of it the waits of the manager's
    start-up, each about its 0.25 s of quiet), so the search runs once."""
    go_manager()
    import harness as h
    from examples.go_operator import scenario

    return h.explore(scenario, strategy="exhaustive:1", budget=40, prove_minimal=True, fixed=False)


def test_go_operator_found_proved_and_replayed(found: Any) -> None:
    """The search finds the duplicate Secret in a plan of one held delivery, the Secret informer's ADDED of the
    manager's own create (its cache lags its write; a reconcile triggered by the user's edit of the ConfigMap
    meanwhile reads no Secret and creates a second), proves no plan of fewer deviations does, and the plan
    replays with a fresh process each time."""
    from harness.sim import Hold

    assert found.verdict == "found", found.outcome
    cx = found.counterexample
    assert cx is not None and "duplicate Secrets for app" in cx.violation.message
    assert cx.deviations == 1 and "proved minimal" in found.outcome, found.outcome
    [held] = cx.plan or ()
    assert isinstance(held, Hold) and held.what.label.startswith("go-operator/watch/Secret deliver ADDED"), held
    for _ in range(2):
        again = cx.replay(check=False)
        assert again.violation is not None and "duplicate Secrets for app" in again.violation.message


def test_go_operator_story_has_its_own_log_lines(found: Any) -> None:
    """The counterexample is told again with notes (its Event, named by the manager's clock, does not make the
    run diverge: its step says ``app.<clock>``), and the reconciler's own zap line is a note of the step that was
    answering it: ``created secret`` naming the first Secret, at the response to its create, at the level zap gave
    it and without its time or its reconcile's random id; the story shows it (the second create is the violation:
    the run ends before its reconcile logs)."""
    cx = found.counterexample
    assert cx is not None
    told = cx.told()
    assert told.noted, "the run could not be told again"
    logs = [n for n in told.notes if n.kind == "log" and n.field("output")]
    created = [n for n in logs if "created secret" in n.text]
    first = re.findall(r"'([^']+)'", cx.violation.message)[0]
    assert [n.field("level") for n in created] == ["INFO"], [n.text for n in logs]
    assert created[0].text.startswith("go-operator: INFO created secret  {") and f'"secret": "{first}"' in \
        created[0].text, created[0].text
    assert not re.search(r"\d{4}-\d\d-\d\dT", created[0].text)  # (its time left out: a note is every run's)
    assert '"reconcileID": "<uuid>"' in created[0].text  # (and the random id controller-runtime gives a reconcile)
    steps = {r.step: r for r in told}
    assert steps[created[0].step].label == f"response create Secret default/{first}", steps[created[0].step]
    assert any("Event default/app.<clock>" in r.label for r in told)
    story = str(cx.story())
    assert 'go-operator: INFO created secret  {"controller": "secret"' in story, story


def test_go_operator_fixed_clean(found: Any) -> None:
    """The fix (a deterministic name, AlreadyExists read as done) stays clean under the very plan that broke the
    buggy manager and under a random search of its own."""
    import harness as h
    from examples.go_operator import scenario
    from harness.sim import ReplayChooser, run_once

    cx = found.counterexample
    assert cx is not None
    again = run_once(scenario, ReplayChooser(cx.choices), params={"fixed": True})
    assert again.violation is None, again.violation
    fixed = h.explore(scenario, strategy="random", budget=3, seed=0, prove_minimal=False, fixed=True)
    assert fixed.verdict == "none-found" and fixed.runs == 3, fixed.outcome


# ------------------------------------------------------------------------------------------- restarted
def test_go_operator_restart_relists() -> None:
    """A crash fault before the manager's create of the Secret kills its process (SIGKILL: its caches and its work
    queue are lost, the Secret never made); the manager started again after the restart window discovers the API
    and lists both kinds again from the served API (client-go's WatchList: a watch with its initial events, the
    second incarnation's requests ``#2``), finds the ConfigMap, and converges: one Secret, owned by it, made by the
    second process only."""
    from examples.go_operator import scenario
    from harness.sim import run_once
    from harness.sim._choice import Option, _Canonical

    class CrashBeforeCreate(_Canonical):
        """The canonical run, except a crash fault at the first crash point before a create of a Secret."""

        crashed = False

        def fault(self, point: Option) -> bool:
            if not self.crashed and point.kind == "crash" and "create Secret" in point.label:
                self.crashed = True
                return True
            return False

    go_manager()
    chooser = CrashBeforeCreate()
    state: dict[str, Any] = {}
    out = run_once(scenario, chooser, params={"fixed": False, "crash_faults": True}, notes=True,
                   observer=lambda world, _record: state.update(world.state))
    assert chooser.crashed and out.violation is None, out.violation
    order = [f"{r.actor}: {r.label}" for r in out.trace]
    crashed = order.index("go-operator/POST /api/v1/namespaces/default/secrets: go-operator crashes before create "
                          "Secret default/app-cdn6r")
    restarted = order.index("go-operator: restart go-operator")
    assert crashed < restarted, order
    for kind, path in (("ConfigMap", "configmaps"), ("Secret", "secrets")):  # listed once by each incarnation
        listed = [i for i, line in enumerate(order) if line.startswith(f"go-operator/GET /api/v1/{path}") and
                  line.endswith(f"watch {kind} * with its initial events (WatchList)")]
        assert len(listed) == 2 and listed[0] < crashed < restarted < listed[1], (kind, order)
        assert order[listed[1]].startswith(f"go-operator/GET /api/v1/{path}#2: "), order[listed[1]]
    assert [line for line in order[restarted:] if "deliver ADDED default/app " in line] == [
        "go-operator/watch/ConfigMap: go-operator/watch/ConfigMap deliver ADDED default/app rv=5"]  # the relist's
    created = [n.text for n in out.trace.notes if n.kind == "write" and n.text.startswith("Secret ")]
    assert created == ["Secret default/app-dg2zb created, committed rv=6"], created  # by the second process only
    op = state["operator"]
    secrets = [s for s in op.api.peek_all("Secret") if s.labels.get("app.example/owner") == "app"]
    assert [(s.name, [o.name for o in s.owner_references]) for s in secrets] == [("app-dg2zb", ["app"])]
    assert (op.crashes, op.restarts, len(op.popens)) == (1, 1, 2)
    assert op.popens[0].returncode == -9 and all(p.poll() is not None for p in op.popens)
    assert [n.field("level") for n in out.trace.notes if n.kind == "log" and n.field("output") and
            "ERROR" in n.text] == []  # (neither process logged an error: a crash is no error of the second's)


# ------------------------------------------------------------------------------------------- quiescence
def _api_order(out: Any) -> list[str]:
    return [f"{r.actor}: {r.label}" for r in out.trace]


def test_go_quiescence_reproduces_api_order() -> None:
    """The canonical run, four times, each a fresh manager process: the same API order step for step (the waits
    for its quiescence put each of its requests where its reaction to the last step is, not where its goroutines
    and the machine put it), and most of each run's wall time is that waiting."""
    from examples.go_operator import scenario
    from harness.sim import run_once
    from harness.sim._choice import _Canonical

    go_manager()
    orders, walls, waits = [], [], []
    for _ in range(4):
        started = time.perf_counter()
        out = run_once(scenario, _Canonical(), params={"fixed": False})
        walls.append(time.perf_counter() - started)
        waits.append(out.outside_seconds)
        assert out.violation is None, out.violation
        orders.append(_api_order(out))
    assert all(order == orders[0] for order in orders[1:]), [
        next((i, a, b) for i, (a, b) in enumerate(zip(orders[0], order, strict=False)) if a != b) for order in orders
        if order != orders[0]]
    # the manager's reaction to its ConfigMap is in the order before the user's next step: its Secret, its Event
    order = orders[0]
    assert order.index("go-operator/POST /api/v1/namespaces/default/secrets: create Secret default/app-cdn6r") < \
        order.index("go-operator/POST /apis/events.k8s.io/v1/namespaces/default/events: create Event "
                    "default/app.<clock>") < order.index("main: update ConfigMap default/app"), order
    assert sum(waits) > 0.5 * sum(walls), (walls, waits)  # (measured: 95-99 % of a run waits for the process)
