"""The README's first model does what it shows: hunted as a file with ``--variant both``, its buggy variant is found
and its fixed variant stays clean (issue 52, item 6).

The model is README's first Python block, taken exactly as ``test_quoted_outputs.py`` takes it, saved where the
README says to save it (``models/lost_update.py``) and hunted with the command the README shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.docs.test_quoted_outputs import ROOT, _readme_example


def test_readme_first_model_variants_both(tmp_path: Path) -> None:
    block, _quoted = _readme_example()
    model = tmp_path / "models" / "lost_update.py"
    model.parent.mkdir()
    model.write_text(block + "\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "hunt", "models/lost_update.py:lost_update", "--variant", "both",
         "--report-dir", "out", "--json"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in rows if "session" not in r]
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    by_variant = {r["variant"]: r for r in rows}
    assert set(by_variant) == {"buggy", "fixed"}, rows
    assert by_variant["buggy"]["found"] is True and by_variant["buggy"]["expected"] is True, by_variant["buggy"]
    assert by_variant["fixed"]["found"] is False and by_variant["fixed"]["expected"] is True, by_variant["fixed"]
