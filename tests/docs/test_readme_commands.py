"""README's main command works on a fresh venv: what the core imports is a core dependency.

The main command installs the project without extras (``pip install -e .``) and hunts. It once failed on every fresh
clone, because every race imports the Kubernetes HTTP API, which needs PyYAML, then only in the extras; CI ran the
tests (with ``[test]``) and never saw it. ``.ci/run`` now runs both README commands exactly as written (it reads them
with ``.ci/readme_commands.py``); this test checks the same on a fresh venv in the default suite: the install as the
README writes it, every module of the package importable, the races registered, a hunt run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
assert _spec is not None and _spec.loader is not None
readme_commands = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(readme_commands)


def _main_command() -> str:
    main, _tests = readme_commands.commands((ROOT / "README.md").read_text(encoding="utf-8"))
    return str(main)


def test_ci_runs_both_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    found = readme_commands.commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 2 and "python -m harness hunt" in found[0] and "pytest" in found[1], found
    lines = [line.strip() for line in ci.splitlines()]
    assert found[0] in lines and found[1] in lines, "README's commands are not verbatim lines of .ci/run"
    assert lines.index(found[0]) < lines.index(found[1])  # the main job first, then the tests


def test_readme_main_command_on_a_fresh_venv(tmp_path: Path) -> None:
    """The main command's install, exactly (``pip install -q -e .`` in a fresh venv, no extras), then every module of
    ``harness`` imports but the pytest plugin (pytest is the test extra's), ``list`` names the races, and a short hunt
    of one race finds it (the full hunt is CI's first step)."""
    words = shlex.split(_main_command())
    install = words[words.index("pip"): words.index("&&", words.index("pip"))]
    assert install == ["pip", "install", "-q", "-e", "."], install  # what the README installs: no extras
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    done = subprocess.run([str(python), "-m", *install[:3], "-e", str(ROOT)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=1200)
    if done.returncode != 0 and "No matching distribution" in done.stderr + done.stdout:
        pytest.skip(f"no package index reachable from this machine: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    imports = ("import importlib, pkgutil, harness\n"
               "bad = []\n"
               "for m in pkgutil.walk_packages(harness.__path__, 'harness.'):\n"
               "    if m.name.startswith('harness.pytest_plugin') or m.name.endswith('__main__'):\n"
               "        continue\n"
               "    try:\n"
               "        importlib.import_module(m.name)\n"
               "    except Exception as exc:\n"
               "        bad.append(f'{m.name}: {type(exc).__name__}: {exc}')\n"
               "print('\\n'.join(bad))\n")
    checked = subprocess.run([str(python), "-c", imports], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
    assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr
    listed = subprocess.run([str(python), "-m", "harness", "list"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert listed.returncode == 0 and "volcano_deleted_jobs" in listed.stdout, listed.stdout + listed.stderr
    assert "skipped" not in listed.stderr, listed.stderr
    hunt = subprocess.run([str(python), "-m", "harness", "hunt", "volcano_deleted_jobs", "--variant", "buggy",
                           "--report-dir", "reports", "--json"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    rows = [json.loads(line) for line in hunt.stdout.splitlines() if line.startswith("{")]
    found = [r for r in rows if r.get("variant") == "buggy"]
    assert hunt.returncode == 0 and found and found[0]["found"] is True, hunt.stdout[-2000:] + hunt.stderr[-2000:]
    assert (tmp_path / "reports" / "index.html").is_file()
    assert sys.executable != str(python)
