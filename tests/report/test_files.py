"""Report files: written atomically, with the mode the umask gives, into a folder that ignores itself."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Counterexample
from harness.report import atomic_write_text
from harness.report._files import current_umask
from harness.sim import Record, Trace, Violation


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_current_umask_reads_without_changing_it(umask_027: None) -> None:
    assert current_umask() == 0o027
    assert current_umask() == 0o027


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_report_and_trace_files_honour_the_umask(tmp_path: Path, mask: int) -> None:
    trace = Trace([Record(1, 0.0, "a", "start a"), Record(2, 0.0, "a", "write x", key="x")])
    cx = Counterexample("tests.toys:lost_update", {}, [], trace, Violation("oracle", "o", "broken", 2, 0.0))
    old = os.umask(mask)
    try:
        page = atomic_write_text(tmp_path / "r.html", "<p>x</p>")
        saved = cx.save(tmp_path / "r.json")
    finally:
        os.umask(old)
    assert _mode(page) == 0o666 & ~mask
    assert _mode(saved) == 0o666 & ~mask


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "x.html"
    atomic_write_text(target, "old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.html"]  # no temp file left behind
