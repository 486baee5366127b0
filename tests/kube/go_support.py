"""The Go example operator (``examples/go``) built once and cached (``examples.go_operator.build_manager``); tests
that run it call :func:`go_manager`, which skips, saying why, where there is no Go toolchain."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def go_manager() -> Path:
    """The built manager binary, built now if its sources changed since the last build (skips without Go)."""
    if shutil.which("go") is None:
        pytest.skip("the Go example operator needs the Go toolchain: `go` is not on PATH")
    from examples.go_operator import build_manager

    return build_manager()
