"""``python -m harness serve``: kubectl against the simulated apiserver on a loopback port (the real clock)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: demo}
data:
  key: %s
"""


@contextlib.contextmanager
def serving(tmp_path: Path) -> Iterator[tuple[Path, Callable[..., str]]]:
    """``python -m harness serve`` on a loopback port for the test's duration: its kubeconfig and a kubectl runner
    (``kubectl(*argv, check=True)``: stdout; a failure fails the test unless ``check=False``)."""
    kubeconfig = tmp_path / "kubeconfig"
    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(kubeconfig),
                               "--seconds", "60"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert "serving the Kubernetes API on https://127.0.0.1:" in first, first

        def kubectl(*argv: str, check: bool = True) -> str:
            done = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), *argv], capture_output=True,
                                  text=True, timeout=30)
            if check and done.returncode != 0:
                pytest.fail(f"kubectl {' '.join(argv)} exited {done.returncode}: {done.stderr}")
            return done.stdout

        yield kubeconfig, kubectl
    finally:
        server.terminate()
        server.communicate(timeout=10)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (Debian: apt-get install kubernetes-client)")
def test_kubectl_against_serve(tmp_path: Path) -> None:
    with serving(tmp_path) as (kubeconfig, kubectl):
        manifest = tmp_path / "cm.yaml"
        manifest.write_text(CONFIGMAP % "one")
        assert "configmap/demo created" in kubectl("apply", "--validate=false", "-f", str(manifest))
        watch = subprocess.Popen([str(KUBECTL), "--kubeconfig", str(kubeconfig), "get", "configmaps", "-w",
                                  "-o", "json", "--output-watch-events"], stdout=subprocess.PIPE, text=True)
        manifest.write_text(CONFIGMAP % "two")  # a second apply: a strategic merge patch of the difference
        assert "configmap/demo configured" in kubectl("apply", "--validate=false", "-f", str(manifest))
        got = json.loads(kubectl("get", "configmap", "demo", "-o", "json"))
        assert got["data"] == {"key": "two"} and got["metadata"]["labels"] == {"app": "demo"}
        assert "kubectl.kubernetes.io/last-applied-configuration" in got["metadata"]["annotations"]
        kubectl("patch", "configmap", "demo", "--type=merge", "-p", '{"data":{"extra":"x"}}')
        kubectl("patch", "configmap", "demo", "--type=json", "-p", '[{"op":"remove","path":"/data/key"}]')
        assert json.loads(kubectl("get", "configmap", "demo", "-o", "json"))["data"] == {"extra": "x"}
        missing = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "get", "configmap", "nope"],
                                 capture_output=True, text=True, timeout=30)
        assert missing.returncode != 0 and 'configmaps "nope" not found' in missing.stderr
        assert 'configmap "demo" deleted' in kubectl("delete", "configmap", "demo")
        time.sleep(1.0)
        watch.terminate()
        out, _ = watch.communicate(timeout=10)
        events = [json.loads(doc) for doc in _documents(out)]
        kinds = [e["type"] for e in events]
        assert kinds[0] == "ADDED" and kinds[-1] == "DELETED" and "MODIFIED" in kinds, kinds
        assert json.loads(kubectl("get", "configmaps", "-o", "json"))["items"] == []


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (Debian: apt-get install kubernetes-client)")
def test_kubectl_create_in_protobuf_against_serve(tmp_path: Path) -> None:
    """kubectl 1.32 sends these as ``application/vnd.kubernetes.protobuf`` (its typed clients; client-go falls back to
    JSON after a 415 only for CBOR, ``rest/client.go``), and kube-apiserver reads them: each exits 0 and the objects
    read back with their data (``harness/kube/_http/_protobuf.py``)."""
    with serving(tmp_path) as (_kubeconfig, kubectl):
        assert "namespace/team-a created" in kubectl("create", "namespace", "team-a")
        assert "configmap/cfg created" in kubectl("create", "configmap", "cfg", "-n", "team-a",
                                                  "--from-literal=a=b", "--from-literal=c=d")
        assert "secret/pw created" in kubectl("create", "secret", "generic", "pw", "-n", "team-a",
                                              "--from-literal=user=admin", "--type=example.com/basic")
        assert kubectl("auth", "can-i", "get", "pods").strip() == "yes"
        assert "serviceaccount/bot created" in kubectl("create", "serviceaccount", "bot", "-n", "team-a")
        kubectl("create", "clusterrolebinding", "bot-view", "--clusterrole=view", "--serviceaccount=team-a:bot")
        ns = json.loads(kubectl("get", "namespace", "team-a", "-o", "json"))
        assert ns["status"]["phase"] == "Active" and ns["metadata"]["uid"]
        cm = json.loads(kubectl("get", "configmap", "cfg", "-n", "team-a", "-o", "json"))
        assert cm["data"] == {"a": "b", "c": "d"} and cm["metadata"]["namespace"] == "team-a"
        secret = json.loads(kubectl("get", "secret", "pw", "-n", "team-a", "-o", "json"))
        assert secret["data"] == {"user": "YWRtaW4="} and secret["type"] == "example.com/basic"
        binding = json.loads(kubectl("get", "clusterrolebinding", "bot-view", "-o", "json"))
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "bot", "namespace": "team-a"}]
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}


def _documents(text: str) -> list[str]:
    """Split kubectl's stream of pretty-printed JSON documents."""
    docs, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                docs.append(text[start:i + 1])
    return docs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a child")
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_serve_sigint_exits_zero(tmp_path: Path, sig: str) -> None:
    """Issue 49 item 13: `serve` ends quietly on Ctrl-C and on SIGTERM (a container's stop): exit 0, one line,
    no traceback (Trio reported the Ctrl-C as an exception group, and SIGTERM killed it with 143)."""
    import signal

    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(tmp_path / "kc"),
                               "--seconds", "120"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None
    first = server.stdout.readline()  # it listens: the signal lands inside the served run, not at start-up
    assert "serving the Kubernetes API on https://127.0.0.1:" in first, first
    server.send_signal(getattr(signal, sig))
    _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert err == "serve: stopped\n", err


def test_status_lines_have_reason_phrases(tmp_path: Path) -> None:
    """Issue 49 item 11: every status line carries its reason phrase, as Go's net/http writes it
    (`HTTP/1.1 404 Not Found`); the official client shows it as `ApiException.reason`, which was empty."""
    import base64
    import http.client
    import re
    import ssl

    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(tmp_path / "kc"),
                               "--seconds", "120"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        m = re.search(r"https://127\.0\.0\.1:(\d+)", first)
        assert m is not None, first
        ca = re.search(r"certificate-authority-data: (\S+)", (tmp_path / "kc").read_text())
        assert ca is not None
        context = ssl.create_default_context(cadata=base64.b64decode(ca[1]).decode())
        seen = {}
        for path in ("/api/v1/namespaces/default/configmaps/nope", "/api/v1/namespaces/default/configmaps"):
            conn = http.client.HTTPSConnection("127.0.0.1", int(m[1]), context=context, timeout=30)
            conn.request("GET", path)
            resp = conn.getresponse()
            resp.read()
            seen[resp.status] = resp.reason
            conn.close()
        assert seen == {404: "Not Found", 200: "OK"}, seen
    finally:
        server.terminate()
        server.communicate(timeout=60)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (Debian: apt-get install kubernetes-client)")
def test_kubectl_scale_cascade_and_namespaces_against_serve(tmp_path: Path) -> None:
    """Issue 49 items 1, 3 and 10 through kubectl 1.32: the cluster's namespaces are there, `kubectl scale` goes
    through the scale subresource, and `kubectl delete --cascade=foreground` finishes with the dependents gone (the
    garbage collector runs in `serve`), as on a cluster."""
    with serving(tmp_path) as (_kubeconfig, kubectl):
        names = kubectl("get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}").split()
        assert sorted(names) == ["default", "kube-node-lease", "kube-public", "kube-system"]
        deploy = tmp_path / "deploy.yaml"
        deploy.write_text(DEPLOYMENT)
        kubectl("apply", "--validate=false", "-f", str(deploy))
        assert "deployment.apps/web scaled" in kubectl("scale", "deploy", "web", "--replicas=3")
        owner = json.loads(kubectl("get", "deploy", "web", "-o", "json"))
        assert owner["spec"]["replicas"] == 3
        rs = tmp_path / "rs.yaml"
        rs.write_text(REPLICASET % owner["metadata"]["uid"])
        kubectl("apply", "--validate=false", "-f", str(rs))
        kubectl("delete", "deploy", "web", "--cascade=foreground", "--timeout=20s")
        assert json.loads(kubectl("get", "deploy,rs", "-o", "json"))["items"] == []


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""
REPLICASET = """apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-1
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: %s, controller: true,
                     blockOwnerDeletion: true}]
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""


def _serve_fails(tmp_path: Path, *argv: str) -> str:
    """``python -m harness serve ARGV`` that must refuse to start: exit 2 and one line on stderr, no traceback,
    nothing on stdout (it never served); that line."""
    done = subprocess.run([sys.executable, "-m", "harness", "serve", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m harness serve: error: "), done.stderr
    return lines[0]


def test_serve_usage_errors_exit_2(tmp_path: Path) -> None:
    """Issue 59: a port already in use was an actor's OSError ("Fix the model", exit 1) and `--seconds -5` a
    26-line exception group; each is a usage error: exit 2, one line saying what to do. The port is bound before
    the world starts (no window between a check and the bind)."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        line = _serve_fails(tmp_path, "--port", str(port), "--kubeconfig", str(tmp_path / "kc"), "--seconds", "5")
    assert f"port {port} on 127.0.0.1 is in use" in line and "another --port, or --port 0" in line, line
    assert not (tmp_path / "kc").exists()
    for seconds in ("-5", "0", "nan", "inf"):
        line = _serve_fails(tmp_path, "--kubeconfig", str(tmp_path / "kc"), "--seconds", seconds)
        assert f"--seconds {seconds}:" in line and "leave --seconds out to serve until Ctrl-C" in line, line


def test_serve_refuses_to_overwrite_a_kubeconfig(tmp_path: Path) -> None:
    """Issue 59: `serve --kubeconfig FILE` writes over a file only if the harness wrote it (its first line is the
    harness's marker, or it is exactly what an unmarked earlier `serve` wrote) or it is empty; any other file, such
    as the user's own kubeconfig, is refused with exit 2 and left as it was."""
    from harness.kube._http._tcp import _UNMARKED_KUBECONFIG, KUBECONFIG_MARKER

    mine = tmp_path / "config"
    original = "apiVersion: v1\nkind: Config\nclusters: []\n# the user's own\n"
    mine.write_text(original)
    line = _serve_fails(tmp_path, "--kubeconfig", str(mine), "--seconds", "5")
    assert f"--kubeconfig {mine} exists and was not written by the harness" in line, line
    assert "pass another --kubeconfig path, or delete the file" in line, line
    assert mine.read_text() == original
    _serve_fails(tmp_path, "--kubeconfig", str(tmp_path), "--seconds", "5")  # a directory

    earlier = tmp_path / "earlier"  # what serve wrote before its files carried the marker
    earlier.write_text(_UNMARKED_KUBECONFIG.format(port=41234))
    empty = tmp_path / "empty"  # mktemp's
    empty.touch()
    for path in (earlier, empty, earlier):  # the second time over earlier: a marked file, as a first serve wrote it
        server = subprocess.run([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(path), "--seconds",
                                 "0.5"], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert server.returncode == 0 and server.stderr == "", server.stderr
        assert "serving the Kubernetes API on https://127.0.0.1:" in server.stdout
        written = path.read_text()
        assert written.startswith(KUBECONFIG_MARKER + "\n") and "41234" not in written, written


def test_serve_refuses_a_body_over_the_limit_and_keeps_the_connection(tmp_path: Path) -> None:
    """Issue 59 over TCP: a 10 MB body is read to its end but kept only up to the limit, answered 413
    RequestEntityTooLarge (the handler's, tests/kube/test_served_api.py), and the connection stays usable."""
    import http.client
    import re

    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(tmp_path / "kc"),
                               "--seconds", "120", "--insecure-http"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        m = re.search(r"http://127\.0\.0\.1:(\d+)", server.stdout.readline())
        assert m is not None
        conn = http.client.HTTPConnection("127.0.0.1", int(m[1]), timeout=60)
        big = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"},
                          "data": {"k": "x" * 10_000_000}})
        answers = []
        for body in (big, json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "small"}})):
            conn.request("POST", "/api/v1/namespaces/default/configmaps", body=body,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            answers.append((resp.status, json.loads(resp.read())))
        conn.close()
        assert answers[0][0] == 413 and answers[0][1]["reason"] == "RequestEntityTooLarge", answers[0]
        assert answers[1][0] == 201 and answers[1][1]["metadata"]["name"] == "small", answers[1]
    finally:
        server.terminate()
        server.communicate(timeout=60)
