"""Every command output quoted in the README is produced here by running the command, and compared line by line;
so are the documented races' hunt lines, which live in the guide's "The documented races".

Numbers are compared too (runs, steps, deviations, times in the trace); only what no run can repeat is masked: the
wall-clock seconds of a search ("in 0.12 s") and where a script lives on this disk (the scenario reference of the
README's example, run as a script). The guide's quoted outputs are checked where its blocks run
(``tests/examples/test_guide.py``).

When a change of the harness changes an output on purpose, regenerate the quotes from a real run:
``RACE_HARNESS_UPDATE_QUOTES=1 python -m pytest tests/docs/test_quoted_outputs.py`` rewrites them in README.md
and docs/guide.md, and ``git diff README.md docs/guide.md`` shows what changed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"  # the documented races' hunt lines live in its "The documented races"
UPDATE = os.environ.get("RACE_HARNESS_UPDATE_QUOTES") == "1"

#: a documented race's hunt line, quoted under its section of the guide: `[ok] NAME (buggy): ...`
RACE_LINE = re.compile(r"^`(\[ok\] (?P<race>\w+) \(buggy\): .*)`$", re.M)
SECONDS = re.compile(r"\bin \d+\.\d+ s\b")


def _mask(line: str) -> str:
    line = SECONDS.sub("in <s> s", line)
    return re.sub(r"^(#?\s*scenario )\S+:(\w+)\(", r"\1<file>:\2(", line)


def _readme_example() -> tuple[str, list[tuple[int, str]]]:
    """The README's first Python block (the lost_update example) and its quoted output lines, with their indexes."""
    text = README.read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)\n```", text, re.S) if "print(result.outcome)" in b)
    lines = block.splitlines()
    quoted: list[tuple[int, str]] = []
    in_output = False
    for i, line in enumerate(lines):
        if line.startswith("print("):
            in_output = True
        elif in_output and line.startswith("# "):
            quoted.append((i, line[2:]))
        else:
            in_output = False
    return block, quoted


def _update(old: str, new: str, path: Path = README) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_readme_quoted_outputs_are_current(tmp_path: Path) -> None:
    # 1. the documented races' hunt lines: `python -m harness hunt NAME --variant buggy` (seed 0)
    quoted = {m["race"]: m.group(1) for m in RACE_LINE.finditer(GUIDE.read_text())}
    assert len(quoted) >= 5, quoted
    done = subprocess.run(
        [sys.executable, "-m", "harness", "hunt", *quoted, "--variant", "buggy", "--report-dir", str(tmp_path / "r")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    got = {m["race"]: m.group(1) for m in re.finditer(r"^(\[ok\] (?P<race>\w+) \(buggy\): .*)$", done.stdout, re.M)}
    stale = []
    for race, line in quoted.items():
        if _mask(line) != _mask(got.get(race, "")):
            stale.append(f"docs/guide.md says:\n  {line}\na fresh run says:\n  {got.get(race)}")
            if UPDATE:
                _update(f"`{line}`", f"`{got[race]}`", GUIDE)
    # 2. the lost_update example, run as a script: what each print() shows is quoted below it
    block, lines = _readme_example()
    script = tmp_path / "lost_update.py"
    script.write_text(block + "\n")
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.returncode == 0, run.stderr
    printed = run.stdout.rstrip("\n").splitlines()
    said = [line for _, line in lines]
    if [_mask(x) for x in said] != [_mask(x) for x in printed]:
        stale.append("README's lost_update example says:\n  " + "\n  ".join(said) + "\na fresh run prints:\n  "
                     + "\n  ".join(printed))
        if UPDATE:
            new = block.splitlines()
            for (i, _old), line in zip(lines, printed, strict=False):
                new[i] = "# " + (line if not line.lstrip().startswith("scenario ") else
                                 re.sub(r"scenario \S+:", "scenario /path/to/lost_update.py:", line))
            _update(block, "\n".join(new))
    assert not stale, "\n\n".join(stale) + "\n\nRACE_HARNESS_UPDATE_QUOTES=1 regenerates them (see this file's docstring)"
