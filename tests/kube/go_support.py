"""The Go example operator (``examples/go``) built once and cached (``examples.go_operator.build_manager``,
``build_envtest_suite``); tests that run it call :func:`go_manager` or :func:`go_envtest_suite`, which skip, saying
why, where there is no Go toolchain."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def _need_go() -> None:
    if shutil.which("go") is None:
        pytest.skip("the Go example operator needs the Go toolchain: `go` is not on PATH")


def go_manager() -> Path:
    """The built manager binary, built now if its sources changed since the last build (skips without Go)."""
    _need_go()
    from examples.go_operator import build_manager

    return build_manager()


def go_envtest_suite() -> Path:
    """The compiled envtest suite of ``examples/go/internal/controller`` (``go test -c``), built now if its sources
    changed since the last build (skips without Go)."""
    _need_go()
    from examples.go_operator import build_envtest_suite

    return build_envtest_suite()
