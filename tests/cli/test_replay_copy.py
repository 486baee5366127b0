"""A trace hunted from a model file replays from the hunt's copy of it, even where its labels name the model's lines.

An operator's Trio and asyncio wake-ups are labelled where the model's code
resumes (``wake at lightkube_operator.py:158 in worker (...)``); the hunt
copies the file beside the trace and a replay runs the copy, whose lines are
the same but whose file name is not. The labels must name the hunted file, or
every such trace diverges at its first wake-up.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_replay_of_a_hunted_operator_file_names_the_hunted_lines(tmp_path: Path) -> None:
    hunt = subprocess.run([sys.executable, "-m", "harness", "hunt", "examples/lightkube_operator.py:scenario",
                           "--variant", "buggy", "--report-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert hunt.returncode == 0 and "found" in hunt.stdout, hunt.stdout + hunt.stderr  # the buggy variant, found
    trace = tmp_path / "examples-lightkube_operator-scenario-buggy.json"
    assert (tmp_path / "examples-lightkube_operator-scenario-buggy.py").is_file()  # the copy the replay runs
    assert "wake at lightkube_operator.py:" in trace.read_text()
    replay = subprocess.run([sys.executable, "-m", "harness", "replay", str(trace)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert replay.returncode in (0, 1), replay.stdout + replay.stderr
    assert "same violation" in replay.stdout and "diverged" not in replay.stdout + replay.stderr
