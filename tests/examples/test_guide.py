"""Every code block of ``docs/guide.md`` runs, or is checked word for word against the file it quotes.

``python`` blocks run in order in one namespace (a reader's session); a block right after
``<!-- excerpt: PATH -->`` must appear verbatim in PATH (the example and its tests, which run
elsewhere in the suite); ``console`` blocks run in a scratch folder holding a copy of ``examples/``.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"
BLOCK = re.compile(r"(?:<!-- excerpt: (?P<path>\S+) -->\n)?```(?P<lang>\w+)\n(?P<code>.*?)\n```", re.S)


def _blocks() -> list[tuple[str, str | None, str]]:
    return [(m["lang"], m["path"], m["code"]) for m in BLOCK.finditer(GUIDE.read_text())]


def test_the_guide_has_code_and_every_block_is_python_or_console() -> None:
    langs = [lang for lang, _path, _code in _blocks()]
    assert langs.count("python") >= 8 and "console" in langs
    assert set(langs) <= {"python", "console"}


def test_excerpts_are_word_for_word_in_the_files_they_name() -> None:
    excerpts = [(path, code) for lang, path, code in _blocks() if path is not None]
    assert len(excerpts) >= 6
    for path, code in excerpts:
        assert code in (ROOT / path).read_text(), f"docs/guide.md quotes {path}, which no longer says:\n{code}"


#: ``print(x)  # ... quoted output ...``: a trailing comment with an elision quotes what the print shows
QUOTED = re.compile(r"^\s*print\(.*\)\s+# (?P<quote>.*\.\.\..*)$", re.M)


def test_python_blocks_run_in_order() -> None:
    """Each block runs; an output it quotes (``print(x)  # ... words ...``) is what the print really shows, numbers
    included, with ``...`` standing for the words left out."""
    namespace: dict[str, object] = {"__name__": "guide"}
    for lang, path, code in _blocks():
        if lang == "python" and path is None:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(GUIDE), "exec"), namespace)
            for m in QUOTED.finditer(code):
                pattern = ".*?".join(re.escape(part.strip()) for part in m["quote"].split("..."))
                assert re.search(pattern, out.getvalue()), (
                    f"docs/guide.md quotes '{m['quote']}', but the block printed:\n{out.getvalue()}"
                )


def test_console_blocks_run(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    commands = [line for lang, _p, code in _blocks() if lang == "console" for line in code.splitlines() if line]
    assert commands
    for line in commands:
        argv = shlex.split(line)
        assert argv[0] == "python"
        # (a watchdog against a hang, not a bound on the machine's speed: see conftest.py)
        done = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            pytest.fail(f"{line} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def test_every_model_in_the_guide_runs_through_the_cli(tmp_path: Path) -> None:
    """Issue 37: a model the guide shows whole (a block with its imports and an @h.scenario) runs through
    `python -m harness hunt FILE:NAME` as written: no usage error, no model error."""
    models = [code for lang, path, code in _blocks() if lang == "python" and path is None and "@h.scenario" in code]
    assert models, "the guide shows at least one whole model"
    for i, code in enumerate(models):
        names = re.findall(r"^@h\.scenario(?:\(.*\))?\nasync def (\w+)", code, re.M)
        assert names, f"block {i} marks no scenario it defines"
        file = tmp_path / f"guide_model_{i}.py"
        file.write_text(code + "\n")
        for name in names:
            done = subprocess.run([sys.executable, "-m", "harness", "hunt", f"{file.name}:{name}", "--budget", "20",
                                   "--report-dir", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
            assert done.returncode in (0, 1) and "MODEL ERROR" not in done.stdout, done.stdout + done.stderr
            assert done.returncode == 0, f"{name}: {done.stdout}"
