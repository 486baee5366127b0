"""Issue 59: an interrupted hunt leaves no operator process behind, nor its temporary folder, and exits within 5 s.

``python -m harness hunt`` of a scenario whose operator process (``tests/operator_processes.py``) forks a child
that ignores SIGTERM and a ``setsid()`` daemon, and talks to the apiserver every 0.1 s, so the scheduler waits for
it (up to a minute per choice) when the signal comes: Ctrl-C once, Ctrl-C twice (the second while the harness
waits for the operator, which ignores SIGTERM, to stop: the at-once exit), SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import ROOT

from harness import _processes
from tests.operator_processes import SCENARIO, gone_within, leak_check, wait_for

pytest.importorskip("yaml")


@pytest.mark.skipif(not _processes.available(), reason="reads Linux's /proc (proc(5)); none here")
@pytest.mark.parametrize(("signals", "code", "says"), [
    (["SIGINT"], 130, "interrupted: kept 0 counterexamples"),
    (["SIGINT", "SIGINT"], 130, "interrupted again: stopped at once"),
    (["SIGTERM"], 143, "interrupted by SIGTERM: kept 0 counterexamples"),
], ids=["ctrl-c", "ctrl-c-twice", "sigterm"])
def test_interrupted_hunt_leaves_no_operator_process_nor_folder(
    tmp_path: Path, signals: list[str], code: int, says: str
) -> None:
    with leak_check(tmp_path) as (mark, script, ready):
        scenario = tmp_path / "leaky.py"
        scenario.write_text(SCENARIO.format(operator=str(script)))
        temp = tmp_path / "tmp"  # where the run's folder is made (TMPDIR): empty again after the hunt
        temp.mkdir()
        stubborn = ["--param", "stubborn=true"] if len(signals) == 2 else []
        env = {**os.environ, "LEAK_MARK": mark, "READY_DIR": str(ready), "TMPDIR": str(temp)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "hunt", f"{scenario}:leaky", "--strategy", "random", "--budget", "3",
             "--report-dir", str(tmp_path / "r"), *stubborn],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            wait_for(ready, "operator", 60.0)  # it talks: the scheduler waits for it
            wait_for(ready, "daemon")
            assert any(temp.iterdir()), "the run's folder is in TMPDIR"
            sent = time.monotonic()
            for i, name in enumerate(signals):
                if i:
                    time.sleep(1.0)  # the first stop is under way: the operator ignores SIGTERM for 2 s
                proc.send_signal(getattr(signal, name))
            _, err = proc.communicate(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == code, err
        assert took < 5.0, (took, err)
        assert says in err and "Traceback" not in err, err
        assert gone_within(mark, 0.5) == [], "a process of the operator outlived the hunt"
        assert list(temp.iterdir()) == [], "the run's temporary folder outlived the hunt"
