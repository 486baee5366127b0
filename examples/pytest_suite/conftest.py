"""Fixtures of the secret operator's integration tests: a client of the cluster KUBECONFIG names, and the operator
(``examples/external/secret_operator.py``) started as its own process for each test, as a suite against a test
cluster starts it. ``SECRET_OPERATOR_ARGS`` picks its variant (``--fixed``; the default is the operator as it
ships, ``--buggy``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

OPERATOR = Path(__file__).resolve().parent.parent / "external" / "secret_operator.py"


@pytest.fixture
def core() -> client.CoreV1Api:
    config.load_kube_config()
    return client.CoreV1Api()


@pytest.fixture
def operator() -> Iterator[subprocess.Popen[bytes]]:
    args = os.environ.get("SECRET_OPERATOR_ARGS", "--buggy").split()
    process = subprocess.Popen([sys.executable, str(OPERATOR), *args])
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
