"""The served API speaks TLS as kube-apiserver does (``harness/kube/_http/_tls.py``): its CA in the kubeconfig.

Every client is run as it ships, pointed at the kubeconfig ``serve`` writes:
the official Python client (urllib3), lightkube (httpx), kubectl (client-go),
the official JavaScript client (``@kubernetes/client-node`` 1.x, which refuses a
plain ``http://`` server), and an :class:`ExternalOperator`'s process. kopf
(aiohttp) runs over it in ``test_external_operator.py``'s kopf tests.

The JavaScript client is installed with npm into a cache folder outside the
repository (``$XDG_CACHE_HOME/race-harness/client-node-1``, else
``~/.cache/...``), once, and reused; where ``node`` or ``npm`` is missing, or
npm cannot reach its registry, that case is skipped with the reason.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator
from harness.sim import run_once
from harness.sim._choice import _Canonical

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")
NODE, NPM = shutil.which("node"), shutil.which("npm")

#: the official JavaScript client, as an operator on it uses it: the kubeconfig from $KUBECONFIG, a list, a create,
#: and a watch that sees the create (a chunked stream over TLS), then ends
NODE_CLIENT = """
import * as k8s from '@kubernetes/client-node';
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const core = kc.makeApiClient(k8s.CoreV1Api);
const namespaces = (await core.listNamespace()).items.map(n => n.metadata.name);
const seen = new Promise((resolve, reject) => {
  new k8s.Watch(kc).watch('/api/v1/namespaces/default/configmaps', {}, (type, obj) => {
    if (obj.metadata.name === 'from-node') resolve(type);
  }, reject).then(req => seen.finally(() => req.abort()), reject);
});
const created = await core.createNamespacedConfigMap({namespace: 'default',
  body: {metadata: {name: 'from-node'}, data: {client: 'node'}}});
console.log(JSON.stringify({namespaces, created: created.metadata.name, watched: await seen}));
process.exit(0);
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """``python -m harness serve`` (TLS, the default) for this module's tests: its kubeconfig and port."""
    kubeconfig = tmp_path_factory.mktemp("served") / "kubeconfig"
    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--kubeconfig", str(kubeconfig),
                               "--seconds", "300"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        m = re.search(r"serving the Kubernetes API on https://127\.0\.0\.1:(\d+) ", first)
        assert m is not None, first
        yield kubeconfig, int(m[1])
    finally:
        server.terminate()
        server.communicate(timeout=30)


def _cluster(kubeconfig: Path) -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"])


def _ca(kubeconfig: Path) -> str:
    return base64.b64decode(_cluster(kubeconfig)["certificate-authority-data"]).decode("ascii")


def _check_python(kubeconfig: Path, port: int) -> None:
    """The kubeconfig names an https server and carries its CA; the stdlib's TLS trusts the server with that CA alone
    (IP and DNS SANs), ALPN settles on http/1.1 when h2 is offered first, and the official client connects; a
    client that does not know the CA, and a plain-HTTP request to the port, get nothing."""
    cluster = _cluster(kubeconfig)
    assert cluster["server"] == f"https://127.0.0.1:{port}", cluster
    assert _ca(kubeconfig).startswith("-----BEGIN CERTIFICATE-----"), cluster
    for host in ("127.0.0.1", "localhost"):
        context = ssl.create_default_context(cadata=_ca(kubeconfig))
        context.set_alpn_protocols(["h2", "http/1.1"])
        conn = http.client.HTTPSConnection(host, port, context=context, timeout=30)
        conn.request("GET", "/version")
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["major"], resp.status
        tls = conn.sock
        assert isinstance(tls, ssl.SSLSocket)
        assert tls.selected_alpn_protocol() == "http/1.1"
        sans = set(tls.getpeercert()["subjectAltName"])  # type: ignore[index]
        assert {("IP Address", "127.0.0.1"), ("DNS", "localhost")} <= sans, sans
        conn.close()
    untrusting = http.client.HTTPSConnection("127.0.0.1", port, context=ssl.create_default_context(), timeout=30)
    with pytest.raises(ssl.SSLCertVerificationError):
        untrusting.request("GET", "/version")
    untrusting.close()
    plain = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError, http.client.BadStatusLine)):
        plain.request("GET", "/api")
        plain.getresponse()
    plain.close()

    import kubernetes

    client = kubernetes.config.new_client_from_config(config_file=str(kubeconfig))
    core = kubernetes.client.CoreV1Api(client)
    core.create_namespaced_config_map("default", {"metadata": {"name": "from-python"}})
    names = [n.metadata.name for n in core.list_namespace().items]
    assert "default" in names and core.read_namespaced_config_map("from-python", "default").metadata.uid
    client.rest_client.pool_manager.clear()  # (its kept-alive TLS connections)
    client.close()


def _check_lightkube(kubeconfig: Path) -> None:
    from lightkube import Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.core_v1 import ConfigMap, Namespace

    client = Client(KubeConfig.from_file(kubeconfig))
    assert "kube-system" in [n.metadata.name for n in client.list(Namespace)]  # type: ignore[union-attr]
    client.create(ConfigMap(metadata=ObjectMeta(name="from-lightkube"), data={"client": "lightkube"}), namespace="default")
    assert client.get(ConfigMap, "from-lightkube", namespace="default").data == {"client": "lightkube"}
    client.close()


def _check_kubectl(kubeconfig: Path) -> None:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (Debian: apt-get install kubernetes-client)")
    # stdin closed: with no credentials for a TLS server kubectl would ask for a username and read it from there
    done = subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "get", "ns", "-o", "name"], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "namespace/default" in done.stdout.split(), done.stdout
    assert "Username" not in done.stderr, done.stderr


def _client_node() -> Path:
    """A folder whose ``node_modules`` holds ``@kubernetes/client-node`` 1.x, installed by npm on first use (into a
    temporary folder renamed into place: two test sessions may install at once)."""
    if NODE is None or NPM is None:
        pytest.skip("node and npm are not installed (Debian: apt-get install nodejs npm)")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "race-harness" / "client-node-1"
    if (cache / "node_modules" / "@kubernetes" / "client-node" / "package.json").exists():
        return cache
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix="client-node-", dir=cache.parent))
    try:
        done = subprocess.run([NPM, "install", "--prefix", str(partial), "--no-audit", "--no-fund", "--loglevel=error",
                               "@kubernetes/client-node@1"], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            pytest.skip(f"npm could not install @kubernetes/client-node@1: {done.stderr.strip()[-400:]}")
        try:
            partial.rename(cache)
        except OSError:  # another session put it there first
            pass
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return cache


def _check_node(kubeconfig: Path) -> None:
    folder = _client_node()
    assert NODE is not None
    done = subprocess.run([NODE, "--input-type=module", "-e", NODE_CLIENT], cwd=folder, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "KUBECONFIG": str(kubeconfig)})
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"namespaces": ["default", "kube-node-lease", "kube-public", "kube-system"], "created": "from-node",
                   "watched": "ADDED"}, got


#: an operator process on the official client: it reads $KUBECONFIG (https, the CA in it), creates, and waits
OFFICIAL_CLIENT_CREATES = """
import time, kubernetes
kubernetes.config.load_kube_config()
kubernetes.client.CoreV1Api().create_namespaced_config_map("default", {"metadata": {"name": "from-process"}})
time.sleep(60)
"""


def _check_external_operator() -> None:
    """An ExternalOperator's kubeconfig is https with the CA; its process on the official client connects; and
    nothing of the certificate, nor the port, enters the trace or its notes."""
    seen: dict[str, str] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        op = ExternalOperator(api, "op", [sys.executable, "-c", OFFICIAL_CLIENT_CREATES]).start()
        seen["kubeconfig"] = op.kubeconfig.read_text()
        seen["port"] = str(op._port)
        await world.sleep(1.0, "user waits")  # virtual: the process is quiescent before time moves
        await api.create(KubeObject("ConfigMap", "default", "from-user"))
        world.at_end(lambda: {o.name for o in api.peek_all("ConfigMap")} == {"from-process", "from-user"},
                     "the process's ConfigMap and the user's")

    out = run_once(scenario, _Canonical(), notes=True)
    assert out.violation is None, out.violation
    ca_data = re.search(r"certificate-authority-data: (\S+)", seen["kubeconfig"])
    assert ca_data is not None and "server: https://127.0.0.1:" in seen["kubeconfig"], seen["kubeconfig"]
    recorded = json.dumps([out.trace.to_json(), out.trace.notes_json()])
    pem = base64.b64decode(ca_data[1]).decode()
    body = "".join(pem.strip().splitlines()[1:-1])
    for secretless in (ca_data[1], body[:40], body[-40:], f"127.0.0.1:{seen['port']}"):
        assert secretless not in recorded


@pytest.mark.parametrize("client", ["python", "lightkube", "kubectl", "node", "external-operator"])
def test_served_api_speaks_tls_with_its_ca_in_the_kubeconfig(client: str, served: tuple[Path, int]) -> None:
    """Issue 60 item 6: the served API is HTTPS with a CA of its own in the kubeconfig, as kube-apiserver's, and every
    client connects to it unmodified; plain HTTP to the port gets nothing (the ``python`` case)."""
    kubeconfig, port = served
    if client == "python":
        _check_python(kubeconfig, port)
    elif client == "lightkube":
        _check_lightkube(kubeconfig)
    elif client == "kubectl":
        _check_kubectl(kubeconfig)
    elif client == "node":
        _check_node(kubeconfig)
    else:
        _check_external_operator()


def test_plain_http_only_on_request(tmp_path: Path) -> None:
    """``serve --insecure-http`` and ``ExternalOperator(..., tls=False)`` serve plain HTTP, and say so in the
    kubeconfig (no CA); a plain request is answered."""
    kubeconfig = tmp_path / "kubeconfig"
    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--insecure-http", "--kubeconfig",
                               str(kubeconfig), "--seconds", "120"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        m = re.search(r"serving the Kubernetes API on http://127\.0\.0\.1:(\d+) ", first)
        assert m is not None, first
        assert _cluster(kubeconfig) == {"server": f"http://127.0.0.1:{m[1]}"}
        conn = http.client.HTTPConnection("127.0.0.1", int(m[1]), timeout=30)
        conn.request("GET", "/api")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        server.terminate()
        server.communicate(timeout=30)

    seen: dict[str, str] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        op = ExternalOperator(api, "op", [sys.executable, "-c", PLAIN_LIST], tls=False).start()
        seen["kubeconfig"] = op.kubeconfig.read_text()
        await world.sleep(1.0, "user waits")

    out = run_once(scenario, _Canonical())
    assert out.violation is None, out.violation
    assert "server: http://127.0.0.1:" in seen["kubeconfig"] and "certificate-authority" not in seen["kubeconfig"]
    assert any(r.actor.startswith("op/GET /api/v1/namespaces/default/configmaps") for r in out.trace), \
        [r.actor for r in out.trace]


#: a stdlib process that lists over plain HTTP (the kubeconfig's server as it is) and waits
PLAIN_LIST = """
import os, re, time, urllib.request
server = re.search(r"server: (\\S+)", open(os.environ["KUBECONFIG"]).read()).group(1)
urllib.request.urlopen(server + "/api/v1/namespaces/default/configmaps").read()
time.sleep(60)
"""


def test_one_ca_per_process() -> None:
    """The CA and serving certificate are made once per process and reused (a hunt starts thousands of servers)."""
    from harness.kube._http._tls import serving_cert

    assert serving_cert() is serving_cert()
