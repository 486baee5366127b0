"""The Go example operator (``examples/go``) built once and cached: tests that run it call :func:`go_manager`.

``go build`` of a controller-runtime manager downloads its modules (a cold
module cache) and compiles for a minute or two on a busy two-core machine, so
the binary is kept in ``examples/go/bin/`` (gitignored) with the digest of the
sources it was built from beside it, and rebuilt only when ``go.mod``,
``go.sum`` or a ``.go`` file changed. Without ``go`` on PATH the tests skip,
saying so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

GO_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "go"


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([GO_EXAMPLE / "go.mod", GO_EXAMPLE / "go.sum", *GO_EXAMPLE.glob("*.go")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def go_manager() -> Path:
    """The built manager binary, built now if its sources changed since the last build (skips without Go)."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("the Go example operator needs the Go toolchain: `go` is not on PATH")
    binary, stamp = GO_EXAMPLE / "bin" / "manager", GO_EXAMPLE / "bin" / "manager.sources"
    want = _sources_digest()
    if binary.is_file() and stamp.is_file() and stamp.read_text() == want:
        return binary
    binary.parent.mkdir(exist_ok=True)
    partial = binary.with_name(f"manager.{os.getpid()}.partial")  # (two workers building at once each rename theirs)
    done = subprocess.run([go, "build", "-o", str(partial), "."], cwd=GO_EXAMPLE, capture_output=True, text=True,
                          timeout=1200)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        pytest.fail(f"go build of examples/go failed ({done.returncode}):\n{done.stderr[-3000:]}")
    os.replace(partial, binary)
    stamp.write_text(want)
    return binary
