"""Go programs the tests run, built once and cached: the example operator (``examples/go``,
``examples.go_operator.build_manager``), its envtest suites (``build_envtest_suite``, ``build_webhook_suite``) and
the protobuf client (``tests/kube/goclient``). A test that runs one calls :func:`go_manager`,
:func:`go_envtest_suite`, :func:`go_webhook_suite` or :func:`go_client`, which skip, saying why, where there is no
Go toolchain."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

GO_CLIENT = Path(__file__).resolve().parent / "goclient"


def go_manager() -> Path:
    """The built manager binary, built now if its sources changed since the last build (skips without Go)."""
    if shutil.which("go") is None:
        pytest.skip("the Go example operator needs the Go toolchain: `go` is not on PATH")
    from examples.go_operator import build_manager

    return build_manager()


def go_envtest_suite() -> Path:
    """The compiled envtest suite of ``examples/go/internal/controller`` (``go test -c``), built now if its sources
    changed since the last build (skips without Go)."""
    if shutil.which("go") is None:
        pytest.skip("the Go example operator's envtest suite needs the Go toolchain: `go` is not on PATH")
    from examples.go_operator import build_envtest_suite

    return build_envtest_suite()


def go_webhook_suite() -> Path:
    """The compiled envtest suite of ``examples/go/internal/webhook/v1`` (``go test -c``), built now if its sources
    changed since the last build (skips without Go)."""
    if shutil.which("go") is None:
        pytest.skip("the Go example's webhook envtest suite needs the Go toolchain: `go` is not on PATH")
    from examples.go_operator import build_webhook_suite

    return build_webhook_suite()


def go_client() -> Path:
    """``tests/kube/goclient/bin/goclient``, built now if its sources changed since it was built (skips without Go).

    The digest of the sources it was built from is kept beside it (``bin/`` is gitignored), as ``build_manager``
    keeps the manager's: with a warm Go build cache a build is a few seconds, then nothing."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go protobuf client needs the Go toolchain: `go` is not on PATH")
    digest = hashlib.sha256()
    for path in sorted([GO_CLIENT / "go.mod", GO_CLIENT / "go.sum", *GO_CLIENT.glob("*.go")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    binary, stamp = GO_CLIENT / "bin" / "goclient", GO_CLIENT / "bin" / "goclient.sources"
    if binary.is_file() and stamp.is_file() and stamp.read_text() == digest.hexdigest():
        return binary
    binary.parent.mkdir(exist_ok=True)
    partial = binary.with_name(f"goclient.{os.getpid()}.partial")  # (two builds at once each rename their own)
    done = subprocess.run([go, "build", "-o", str(partial), "."], cwd=GO_CLIENT, capture_output=True, text=True,
                          timeout=1200, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        pytest.fail(f"go build in tests/kube/goclient failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    os.replace(partial, binary)
    stamp.write_text(digest.hexdigest())
    return binary
