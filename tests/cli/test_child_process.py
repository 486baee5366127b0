"""A scenario that starts a child process never crashes the harness: the run ends with a model error naming its line.

An actor blocked on a child process (``trio.run_process``) waits on the real
clock, which the world does not schedule: a misuse. Once, about one run in
three ended instead in a hang and an uncaught ``NoYield``/``trio.Cancelled``
traceback with no report: the child's start (a worker thread) or its exit woke
the actor just after the world failed, the world held that wake-up off Trio's
run queue, and the run's cancellation never reached it. Several hunts in
parallel, each with its own seed, so the racy window is crossed more than once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.cli_support import ROOT

MODEL = '''
import trio
import harness as h


@h.scenario
async def calls_kubectl(world: h.World) -> None:
    async def user() -> None:
        await world.step("before")
        await trio.run_process({argv!r}, capture_stdout=True)

    world.spawn("user", user)
'''


def _running(token: str) -> list[int]:
    """The live processes (zombies excluded) whose command line holds ``token``."""
    found = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and token in (d / "cmdline").read_text() \
                    and not (d / "stat").read_text().rpartition(") ")[2].startswith("Z"):
                found.append(int(d.name))
        except OSError:
            continue
    return found


def test_subprocess_actor_never_crashes_hunt(tmp_path: Path) -> None:
    # one child that exits at once (its exit races the verdict), one that outlives the run (the run must end it)
    token = f"29.{os.getpid()}"
    for argv in (["true"], ["sleep", token]):
        (tmp_path / "model.py").write_text(MODEL.format(argv=argv))
        procs = [subprocess.Popen([sys.executable, "-m", "harness", "hunt", "model.py:calls_kubectl", "--seed", str(seed),
                                   "--report-dir", f"out{seed}"], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
                 for seed in range(4)]
        try:
            for p in procs:
                out, err = p.communicate(timeout=60)  # a hang (the bug this guards) fails here
                assert "Traceback" not in out + err, out + err
                assert p.returncode == 1, out + err  # the exit code of a model error
                assert "[MODEL ERROR]" in out
                assert "user waits on a child process (trio.run_process: " + " ".join(argv) in out
                assert "model.py:10 in user" in out, out  # the scenario's line
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        assert _running(token) == [], "a child outlived its run"
