"""The main job's CLI: list, hunt, replay, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True)


def test_list_prints_one_race_per_line_with_upstream_ref(capsys: pytest.CaptureFixture[str]) -> None:
    from races import REGISTRY

    assert main(["list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(REGISTRY) >= 1
    for line, (name, race) in zip(lines, REGISTRY.items(), strict=True):
        assert line.startswith(name) and race.upstream in line


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["hunt", "no_such_race"], "unknown race 'no_such_race'"),
        (["hunt", "--budget", "lots"], "budget 'lots' is not valid: use RUNS"),
        (["hunt", "--strategy", "bfs"], "unknown strategy 'bfs'"),
        (["hunt", "--variant", "sideways"], "invalid choice"),
        (["replay", "missing.json"], "does not exist"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: list[str], words: str, tmp_path: Path) -> None:
    proc = run_cli(*args, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert words in err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err


def test_corrupt_trace_file_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = run_cli("replay", str(bad))
    assert proc.returncode == 2 and "not valid JSON" in proc.stderr and "Traceback" not in proc.stderr


def test_hunt_json_then_replay_round_trip(tmp_path: Path) -> None:
    from races import REGISTRY

    name = next(iter(REGISTRY))
    proc = run_cli("hunt", name, "--variant", "buggy", "--json", "--report-dir", str(tmp_path))
    lines = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    assert len(lines) == 1
    rec = lines[0]
    assert set(rec) >= {"race", "variant", "found", "verdict", "runs", "seconds", "deviations", "steps", "trace"}
    assert rec["race"] == name and rec["found"] is True and proc.returncode == 0
    assert (tmp_path / "index.html").exists()
    replay = run_cli("replay", rec["trace"], "--json")
    assert replay.returncode == 0, replay.stderr
    out = json.loads(replay.stdout)
    saved = json.loads(Path(rec["trace"]).read_text())
    assert out["digest"] == saved["digest"]
    assert out["violation"].endswith(saved["violation"]["message"])


def test_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    blocks = readme.split("```")
    test_cmd = next(b.strip() for b in blocks if "pytest" in b and "pip install" in b)
    assert test_cmd in ci
    main_cmd = next(b.strip() for b in blocks if "harness hunt" in b and "pip install" in b)
    assert main_cmd.endswith("python -m harness hunt")


def test_public_api_is_exported() -> None:
    import harness

    for name in harness.__all__:
        assert hasattr(harness, name), name
    assert {"World", "explore", "Budget", "Counterexample", "RaceMachine", "Limits", "Trace"} <= set(harness.__all__)


def test_live_progress_on_an_interactive_console_only() -> None:
    from io import StringIO

    from rich.console import Console

    import harness as h
    from harness.cli import _LiveProgress
    from tests.toys import order_violation

    out = StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    live = _LiveProgress(console)
    seen: list[tuple[int, bool]] = []
    hook = live.start("order_violation (buggy)", 3000)

    def spy(runs: int, found: bool) -> None:
        seen.append((runs, found))
        hook(runs, found)

    result = h.explore(order_violation, strategy="random", budget=3000, seed=5, progress=spy)
    live.stop()
    assert seen[0] == (1, False) and seen[-1][1] is True
    assert result.first_found_run is not None and len(seen) > result.first_found_run  # search + shrink
    assert "order_violation (buggy)" in out.getvalue()


def test_readme_python_example_prints_what_it_says() -> None:
    readme = (ROOT / "README.md").read_text()
    code = readme[readme.index("import harness as h") : readme.index("cx = result.counterexample")]
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "in 1 deviation (proved minimal), 8 steps" in proc.stdout
    assert "b: start b  <- choice 1 of 2, instead of 'a: start a'" in proc.stdout
