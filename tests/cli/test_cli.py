"""The main job's CLI: list, hunt, replay, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import ROOT, assert_one_clean_error, json_lines, run_cli, run_main

from harness._options import FAULT_KINDS
from harness.cli import main


def test_list_prints_one_race_per_line_with_upstream_ref(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI finds races by their entry points, as it finds a user's package's."""
    from harness.explore import registered_races
    from races import REGISTRY

    assert main(["list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    races = registered_races()
    assert set(races) == set(REGISTRY) and len(lines) == len(races) >= 1
    for line, (name, race) in zip(lines, races.items(), strict=True):
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
    main_cmd = next(b.strip() for b in blocks if "harness hunt" in b and "pip install" in b)
    assert main_cmd.endswith("python -m harness hunt")
    # CI runs both as README writes them: it reads them with .ci/readme_commands.py (tests/docs/test_readme_commands.py)
    done = subprocess.run([sys.executable, str(ROOT / ".ci" / "readme_commands.py")], capture_output=True, text=True,
                          check=True)
    assert done.stdout.splitlines() == [main_cmd, test_cmd] and main_cmd in ci and test_cmd in ci


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
    # every line the README quotes after a print, numbers included (only the wall-clock seconds may differ)
    quoted = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    seconds = re.compile(r" in \d+\.\d+ s")
    assert [seconds.sub(" in S s", q) for q in quoted] == [seconds.sub(" in S s", x) for x in proc.stdout.splitlines()]


# ------------------------------------------------------------------ issue 12, items 3, 4 and 8
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--budget", "0"], "budget '0' is not valid: use RUNS (a whole number of runs >= 1"),
        (["--budget", "-5"], "budget '-5' is not valid"),
        (["--budget", "0s"], "or SECONDSs (a positive number of seconds"),
        (["--strategy", "exhaustive:-1"], "strategy 'exhaustive:-1' is not valid; use one of"),
        (["--strategy", "pct:0"], "pct[:DEPTH>=1]"),
        (["--strategy", "random:3"], "strategy 'random:3' is not valid"),
    ],
)
def test_item3_empty_budgets_and_impossible_strategies_are_usage_errors(
    args: list[str], words: str, tmp_path: Path
) -> None:
    proc = run_cli("hunt", "volcano_gang_close", *args, "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 2
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()  # refused before anything ran or was written


def test_item3_explore_applies_the_same_validation() -> None:
    import harness as h
    from tests.toys import lost_update

    for budget in (0, -1, "0", "0s"):
        with pytest.raises(h.UsageError, match="is not valid: use RUNS"):
            h.explore(lost_update, budget=budget)
    for strategy in ("pct:0", "exhaustive:-1"):
        with pytest.raises(h.UsageError, match=r"exhaustive\[:K>=0\]"):
            h.explore(lost_update, strategy=strategy)


def _no_search(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    import importlib

    calls: list[object] = []
    monkeypatch.setattr(importlib.import_module("harness.explore"), "explore", lambda *a, **k: calls.append(a))
    return calls


def test_item4_a_report_dir_that_is_a_file_or_cannot_be_made_is_refused_before_any_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _no_search(monkeypatch)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for where, words in ((afile, "is a file, not a folder"), (afile / "sub", "cannot be written")):
        code, _, err = run_main(capsys, "hunt", "volcano_gang_close", "--report-dir", str(where))
        assert code == 2
        assert_one_clean_error(err, str(where), words, "name a folder you can write to")
    assert calls == []


def test_item4_an_unwritable_report_dir_is_refused_before_any_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    calls = _no_search(monkeypatch)
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
    else:  # root writes anywhere: fail the probe file the way a read-only folder would for anyone else
        real = tempfile.mkstemp

        def deny(*a: Any, **k: Any) -> Any:
            if Path(str(k.get("dir", ""))) == folder:
                raise PermissionError(13, "Permission denied")
            return real(*a, **k)

        monkeypatch.setattr(tempfile, "mkstemp", deny)
    code, _, err = run_main(capsys, "hunt", "volcano_gang_close", "--report-dir", str(folder))
    assert code == 2
    assert_one_clean_error(err, "cannot be written (Permission denied)")
    assert calls == []


def test_item4_when_writing_fails_later_the_replay_facts_are_printed_and_replay(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.explore import Counterexample

    def disk_full(self: Counterexample, path: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Counterexample, "save", disk_full)
    code, out, err = run_main(
        capsys, "hunt", "tests.toys:lost_update", "--variant", "buggy", "--strategy", "random", "--json",
        "--report-dir", str(tmp_path),
    )
    assert code == 1 and "Traceback" not in err
    assert "could not write" in err and "No space left on device" in err
    for fact in ("scenario tests.toys:lost_update", "params {\"fixed\": false}", "seed 0", "choices ["):
        assert fact in err, fact
    assert (tmp_path / "index.html").is_file()  # the index is still written
    [rec] = json_lines(out)
    assert rec["found"] and rec["trace"] is None
    command = err[err.index("Replay it with: ") + len("Replay it with: "):].split()
    assert command[:4] == ["python", "-m", "harness", "replay"]
    code, replayed, _ = run_main(capsys, *command[3:], "--json")
    assert code == 0 and json.loads(replayed)["digest"] == rec["digest"]  # the facts are the counterexample


def test_item8_version(capsys: pytest.CaptureFixture[str]) -> None:
    import harness

    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and out.strip() == f"race-harness {harness.__version__}"


@pytest.mark.parametrize("command", ["hunt", "replay", "live", "list"])
def test_item8_every_command_lists_its_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, command, "--help")
    assert code == 0
    codes = out[out.index("exit codes"):]
    for c in ("0 ", "2 ") if command == "list" else ("0 ", "1 ", "2 ", "130 "):
        assert f"  {c}" in codes, (command, c)


ALWAYS = '''
import harness as h


@h.scenario
async def always(world: h.World, *, fixed: bool = False) -> None:
    world.spawn("a", lambda: world.step("one step"))
    world.at_end(lambda: False, "never holds")


@h.scenario
async def never(world: h.World, *, fixed: bool = False) -> None:
    world.spawn("a", lambda: world.step("one step"))
'''


@pytest.mark.parametrize(
    ("scenario", "variant", "code"),
    [
        ("always", "buggy", 0),  # the bug shows: what a buggy variant promises
        ("always", "fixed", 1),  # a fixed variant that fails
        ("never", "fixed", 0),
        ("never", "buggy", 1),  # a buggy variant that never failed
    ],
)
def test_item8_live_exits_as_hunt_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str, variant: str, code: int
) -> None:
    (tmp_path / "live_toys.py").write_text(ALWAYS)
    got, out, err = run_main(
        capsys, "live", f"{tmp_path / 'live_toys.py'}:{scenario}", "--variant", variant, "--runs", "3", "--json"
    )
    assert got == code, (out, err)
    assert json.loads(out)["expected"] is (code == 0)


def test_item8_one_deviation_is_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import harness as h
    from tests.toys import lost_update

    cx = h.explore(lost_update, strategy="random", budget=500).counterexample
    assert cx is not None and cx.deviations == 1
    path = cx.save(tmp_path / "one.json")
    code, out, _ = run_main(capsys, "replay", str(path))
    assert code == 0
    assert "1 deviation," in out and "1 deviations" not in out


def test_hunt_faults_option_is_checked_before_anything_runs(tmp_path: Path) -> None:
    proc = run_cli("hunt", "kruise_imagepulljob", "--faults", "watchdrop", "--report-dir", str(tmp_path))
    assert proc.returncode == 2
    assert "'watchdrop' is not a kind" in proc.stderr and "watch_drop" in proc.stderr
    assert "Traceback" not in proc.stderr and not list(tmp_path.iterdir())


def test_hunt_faults_all_is_stated_in_the_outcome(tmp_path: Path) -> None:
    proc = run_cli(
        "hunt", "volcano_gang_close", "--variant", "fixed", "--faults", "all", "--budget", "20", "--json",
        "--report-dir", str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout.splitlines()[0])
    assert "every fault kind" in line["outcome"] and line["found"] is False
    # what the runs applied is counted, kind by kind, not only what was asked for
    injected = re.search(r"every fault kind(?: \(no point [^)]*\))?, (\d+) injected: ([a-z_]+ \d+(?:, [a-z_]+ \d+)*);",
                         line["outcome"])
    assert injected is not None, line["outcome"]
    kinds = dict(k.split() for k in injected.group(2).split(", "))
    assert set(kinds) <= set(FAULT_KINDS) and sum(map(int, kinds.values())) == int(injected.group(1)) > 0, kinds


def test_gitignore_only_in_a_created_report_folder(tmp_path: Path) -> None:
    """Issue 29 item 2: an existing folder is the user's; only a folder the hunt creates ignores itself."""
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    proc = run_cli("hunt", "kruise_imagepulljob", "--variant", "buggy", "--report-dir", str(mine))
    assert proc.returncode == 0, proc.stderr
    assert (mine / "index.html").exists() and not (mine / ".gitignore").exists()
    made = tmp_path / "new" / "reports"
    proc = run_cli("hunt", "kruise_imagepulljob", "--variant", "buggy", "--report-dir", str(made))
    assert proc.returncode == 0, proc.stderr
    assert (made / ".gitignore").read_text().splitlines()[-1] == "*"
    assert not (tmp_path / "new" / ".gitignore").exists()
    # an empty folder name or fault list is a usage error, not "here" or "default"
    for argv, words in ((["--report-dir", ""], "--report-dir is empty"), (["--faults", ""], "are empty")):
        proc = run_cli("hunt", "kruise_imagepulljob", *argv, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        assert_one_clean_error(proc.stderr, words)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "project"]
