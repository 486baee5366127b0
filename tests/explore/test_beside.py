"""What a watched replay of a report folder's copy sees missing beside it, through Python's audit hooks.

Every way a scenario finds a file beside itself is seen alike, whatever the
client: an ``open`` (``Path.read_text``), an operator process's command line
(``subprocess.Popen``: Python's "can't open file"), a file the harness looks
for without opening it (a kopf handlers file). Only files in the watched
folder that are not there count: an option, a program on ``PATH``, a file
written, a file elsewhere, a bytecode cache never do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness._errors import OperatorNotLoaded
from harness.explore._beside import missing_beside, watching
from harness.operators._kopf import _load


def test_a_watch_sees_each_way_a_file_beside_is_missing(tmp_path: Path) -> None:
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "present.yaml").write_text("kind: ConfigMap\n")
    with watching(folder) as missing:
        with pytest.raises(FileNotFoundError):
            (folder / "crd.yaml").read_text()
        (folder / "present.yaml").read_text()  # there: not missing
        (folder / "written.txt").write_text("x")  # created: not missing
        with pytest.raises(FileNotFoundError):
            (tmp_path / "elsewhere.txt").read_text()  # outside the folder: not this folder's to lack
        with pytest.raises(OperatorNotLoaded, match="does not exist"):
            _load(str(folder / "tenant_operator.py"))
        proc = subprocess.run([sys.executable, str(folder / "run_batchop.py"), "--fixed", "0.5",
                               f"--config={folder / 'config.json'}"], capture_output=True, text=True, timeout=60)
        assert "can't open file" in proc.stderr
        proc = subprocess.run([sys.executable, "-c", "pass", "default", "deploy/manager.yaml"], cwd=folder,
                              capture_output=True, timeout=60)
        assert proc.returncode == 0  # a process that ran: its missing argument is seen all the same
    assert list(missing) == ["crd.yaml", "tenant_operator.py", "run_batchop.py", "config.json",
                             "deploy/manager.yaml"]
    with pytest.raises(FileNotFoundError):
        (folder / "after.txt").read_text()
    assert "after.txt" not in missing  # the watch ended with its block


def test_the_message_names_the_files_and_the_fix(tmp_path: Path) -> None:
    copy = tmp_path / "report" / "model-scenario.py"
    origin = tmp_path / "project" / "model.py"
    text = missing_beside(["external/op.py"], copy, origin, "0" * 64)
    assert text.startswith(f"the scenario refers to external/op.py beside it, which is not in this folder "
                           f"({copy.parent}); this replay runs the copy saved beside the trace, model-scenario.py, "
                           f"because {origin}, where it was hunted, is no longer there.")
    assert text.endswith(f"Copy it next to {copy} (as {copy.parent / 'external/op.py'}), or replay it where it was "
                         f"hunted ({origin})")
    older = missing_beside(["a.txt", "b.txt"], copy, None, "0" * 64)
    assert "a.txt, b.txt beside it, which are not in this folder" in older
    assert "the trace is older than the record of where it was hunted" in older
