"""The Go example's webhook envtest suite (``examples/go/internal/webhook/v1``) against ``python -m harness serve``.

The suite is kubebuilder's webhook suite (Ginkgo v2, Gomega, envtest, controller-runtime 0.25): with
``USE_EXISTING_CLUSTER=true`` envtest installs the GeneratedSecret CRD of ``config/crd/bases`` into the cluster
``KUBECONFIG`` names and waits until discovery lists it (``pkg/envtest/crd.go``, ``WaitForCRDs``), then installs the
mutating and validating configurations of ``config/webhook/manifests.yaml`` with their ``clientConfig`` turned into
a loopback URL and a ``caBundle`` of its own (``pkg/envtest/webhook.go``); the suite's manager serves the defaulter
and the validator there. Its specs pass only if the served API called them: a GeneratedSecret created without a
length comes back, and is stored, with the defaulter's; an invalid one is refused with the validator's message,
prefixed as kube-apiserver prefixes it (``admission webhook "..." denied the request: ...``), as 422 Invalid or 403
Forbidden as the validator answered; a dry-run create comes back defaulted and stores nothing. The suite leaves its
objects and removes the webhook configurations (envtest's ``Stop`` leaves them in an existing cluster), so the
served side is read afterwards.

Measured (2 shared cores): the suite runs in about 0.3 s against ``serve``; a build after a change of the example's
sources takes about 10 s with a warm Go build cache.
"""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.cli.test_serve import serving
from tests.kube.go_support import go_webhook_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "go" / "internal" / "webhook" / "v1"
SPECS = (
    "GeneratedSecret webhooks when a GeneratedSecret is created fills in the length and the encoding it left out",
    "GeneratedSecret webhooks when a GeneratedSecret is created denies a length out of bounds with the validator's "
    "field error",
    "GeneratedSecret webhooks when a GeneratedSecret is created denies an unknown encoding as Forbidden with the "
    "validator's message",
    "GeneratedSecret webhooks when a GeneratedSecret is created answers a dry run defaulted and stores nothing",
    "GeneratedSecret webhooks when a GeneratedSecret is updated denies a length out of bounds and keeps the stored "
    "object",
)
GENERATED = "/apis/secrets.example.com/v1/namespaces/default/generatedsecrets"


def _client(kubeconfig: Path) -> httpx.Client:
    """An HTTPS client of the served API, trusting the CA ``serve`` wrote into the kubeconfig."""
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    return httpx.Client(base_url=cluster["server"], verify=context, timeout=10)


def _names(api: httpx.Client, path: str) -> list[str]:
    got = api.get(path)
    assert got.status_code == 200, got.text
    return sorted(item["metadata"]["name"] for item in got.json()["items"])


def test_envtest_installs_crds_and_webhooks_against_serve(tmp_path: Path) -> None:
    """envtest installs the CRD and both webhook configurations into ``serve``, the served API calls the suite's
    webhooks for every create and update, and every spec passes; afterwards the served side holds what the webhooks
    decided: the objects created without a length stored with the defaulter's, none of the refused or dry-run ones,
    the CRD Established with its names accepted, and no webhook configuration left."""
    binary = go_webhook_suite()
    with serving(tmp_path) as (kubeconfig, _kubectl):
        env = {**os.environ, "USE_EXISTING_CLUSTER": "true", "KUBECONFIG": str(kubeconfig)}
        done = subprocess.run([str(binary), "-ginkgo.v", "-ginkgo.no-color"], cwd=SUITE, env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        out = done.stdout + done.stderr
        assert done.returncode == 0, out[-6000:]
        assert f"SUCCESS! -- {len(SPECS)} Passed | 0 Failed" in out, out[-3000:]
        for spec in SPECS:
            assert spec in out, spec
        with _client(kubeconfig) as api:
            stored: dict[str, Any] = {i["metadata"]["name"]: i for i in api.get(GENERATED).json()["items"]}
            # the Go client sent no length for "defaulted" (omitempty): only the mutating webhook wrote 32 and base64
            assert {name: gs["spec"] for name, gs in stored.items()} == {
                "defaulted": {"length": 32, "encoding": "base64"},
                "resized": {"length": 16, "encoding": "base64"},  # its update to 1000 refused
            }, stored
            crd = api.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/generatedsecrets.secrets.example.com")
            conditions = {c["type"]: c["status"] for c in crd.json()["status"]["conditions"]}
            assert conditions == {"NamesAccepted": "True", "Established": "True"}, conditions
            assert _names(api, "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations") == []
            assert _names(api, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations") == []
