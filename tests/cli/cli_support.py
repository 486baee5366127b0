"""Helpers of the CLI tests: run ``python -m harness`` in a subprocess or in-process, write toy scenario files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]

#: a toy race in a file of its own, the way a user would write one (1 deviation; ``fixed`` closes it)
LOST_UPDATE = '''
import harness as h


@h.scenario
async def lost_update(world: h.World, *, fixed: bool = False, warm: int = 1) -> None:
    store = {"x": 0}
    lock = world.Lock()

    async def increment(warm_up: int) -> None:
        for i in range(warm_up):
            await world.step(f"warm up {i}")
        if fixed:
            await lock.acquire()
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1
        if fixed:
            lock.release()

    world.spawn("a", increment, 0)
    world.spawn("b", increment, warm)
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']}, expected 2", "no lost update")


async def not_marked(world: h.World) -> None:
    """A scenario-shaped function without the mark: no trace file may name it."""
'''


def run_cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m harness ARGS`` in a new process."""
    full = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, env=full, timeout=300
    )


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI's entry function in this process: (exit code, stdout, stderr)."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's own exits (--help, --version, bad options)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def json_lines(text: str) -> list[dict[str, Any]]:
    """The rows of ``hunt --json``, one per search (a cut session's own line is :func:`session_line`)."""
    rows = [json.loads(line) for line in text.strip().splitlines() if line.startswith("{")]
    return [r for r in rows if "session" not in r]


def session_line(text: str) -> dict[str, Any] | None:
    """The line ``hunt --json`` ends with when the session was cut, else None."""
    rows = [json.loads(line) for line in text.strip().splitlines() if line.startswith("{")]
    return next((r for r in rows if "session" in r), None)


def assert_one_clean_error(err: str, *words: str) -> None:
    """One paragraph on stderr (one line), no traceback, naming ``words``."""
    text = err.strip()
    assert "Traceback" not in text, text
    assert len(text.splitlines()) == 1, text
    for w in words:
        assert w in text, (w, text)
