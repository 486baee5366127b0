"""Issue 17, item 6: replays read as replays.

A replay is one run of a stored trace, not a search: ``python -m harness
replay`` and ``pytest --race-replay`` say "replayed trace X: same violation" or
"diverged at step N because ...", never "explored N runs" or a fresh seed, and a
pytest replay writes no files unless ``--race-report`` asks. A trace records the
scenario's defaults, so a divergence after a default changed names it; the
program of a counterexample never folds the steps that tell its story.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_support import assert_one_clean_error, run_main

import harness as h
from harness.explore._counterexample import READABLE_VERSIONS, SIGNED_FIELDS, Counterexample, checksum
from tests import toys

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lost() -> Counterexample:
    cx = h.explore(toys.lost_update, strategy="random", budget=500, seed=3).counterexample
    assert cx is not None
    return cx


def test_replay_output_says_replayed(lost: Counterexample, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "lost.json"
    lost.save(path)
    code, out, err = run_main(capsys, "replay", str(path))
    assert code == 0, err
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"replayed trace {path}: same violation, same digest (oracle violated: ")
    assert "explored" not in out and "seed" not in out and "interleaving" not in out
    # a changed scenario: one line on stderr, read as a replay that diverged, exit 1
    other = h.explore(toys.order_violation, strategy="random", budget=3000, seed=2).counterexample
    assert other is not None
    raw = other.to_json()
    raw["scenario"] = "tests.explore.changed:order_violation"
    raw["checksum"] = checksum(raw)
    path.write_text(json.dumps(raw))
    code, out, err = run_main(capsys, "replay", str(path))
    assert code == 1
    assert_one_clean_error(err, f"replayed trace {path}: diverged at step ", " because the trace recorded ")
    assert "explored" not in err and "seed" not in err


def test_pytest_replay_reads_as_a_replay_and_writes_nothing(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.syspath_prepend(str(ROOT))
    pytester.makepyfile(test_r="""
from tests.toys import lost_update

def test_buggy(race):
    race.explore(lost_update, expect="violation", fixed=False)

def test_buggy_fails(race):
    race.explore(lost_update, fixed=False)
""")
    first = pytester.runpytest("--race-seed=4", "--race-budget=300", "--race-report=found")
    first.assert_outcomes(passed=1, failed=1)
    trace = pytester.path / "found" / "test_r.py-test_buggy_fails.json"
    before = trace.read_bytes()
    result = pytester.runpytest(f"--race-replay={trace}", "-v")
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert f"race-harness: replaying trace {trace}" in text
    assert f"replayed trace {trace}: same violation: oracle violated" in text
    assert "explored" not in text and "race-harness: seed=" not in text and "interleavings" not in text
    assert re.search(r"found with seed \d+, ", text)
    assert trace.read_bytes() == before  # the replayed file is input, never rewritten
    assert not (pytester.path / "reports").exists()  # nothing written unasked
    asked = pytester.runpytest(f"--race-replay={trace}", "--race-report=again")
    asked.assert_outcomes(passed=1, failed=1)
    assert (pytester.path / "again" / "index.html").is_file()


def test_trace_records_default_params(lost: Counterexample, tmp_path: Path) -> None:
    assert lost.params == {} and lost.defaults == {"fixed": False}
    raw = json.loads(lost.save(tmp_path / "t.json").read_text())
    assert raw["params"] == {} and raw["defaults"] == {"fixed": False}
    assert raw["version"] == READABLE_VERSIONS[-1] == 5 and "defaults" in SIGNED_FIELDS
    assert Counterexample.load(tmp_path / "t.json").defaults == {"fixed": False}
    # passed explicitly, a parameter is no default
    cx = h.explore(toys.lost_update, strategy="random", budget=500, seed=3, fixed=False).counterexample
    assert cx is not None and cx.params == {"fixed": False} and cx.defaults == {}
    # the program shows every parameter, defaults included
    assert lost.program().splitlines()[0].endswith("lost_update(fixed=False)")


def test_an_older_trace_still_loads_and_a_newer_one_is_refused(lost: Counterexample, tmp_path: Path) -> None:
    raw = lost.to_json()
    raw["version"] = 2
    del raw["defaults"]
    raw["checksum"] = checksum(raw)  # what version 2 signed: no defaults
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(raw))
    old = Counterexample.load(path)
    assert old.defaults is None
    assert old.replay().violation is not None
    raw["version"] = 6
    raw["checksum"] = checksum(raw)
    path.write_text(json.dumps(raw))
    with pytest.raises(h.TraceFileError, match="has trace format version 6; this harness reads version 5"):
        Counterexample.load(path)


def test_divergence_names_changed_default(lost: Counterexample, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = lost.to_json()
    raw["scenario"] = "tests.explore.changed:lost_update"  # a later version: the default of fixed became True
    raw["checksum"] = checksum(raw)  # written that way: not an edit, a changed scenario
    path = tmp_path / "cx.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(h.ReplayDivergence) as info:
        Counterexample.load(path).replay()
    msg = str(info.value)
    assert msg.startswith(f"diverged at step {info.value.step} because ")
    assert "the default of parameter 'fixed' changed from False to True since the trace was saved" in msg
    code, _, err = run_main(capsys, "replay", str(path))
    assert code == 1
    assert_one_clean_error(err, "replayed trace", "the default of parameter 'fixed' changed from False to True")
    # the same trace with the default unchanged replays, and says nothing about defaults
    same = lost.to_json()
    path.write_text(json.dumps(same))
    assert Counterexample.load(path).changed_defaults() == []


def test_program_keeps_story_steps(lost: Counterexample) -> None:
    text = lost.program()
    assert "canonical steps" in text  # warm-up steps still fold
    shown = {line.strip() for line in text.splitlines()}
    assert "x is" in lost.violation.message  # the violation names the object x
    story = [r for r in lost.trace if r.key == "x" or r.choice or r.kind == "fault"]
    assert story
    steps = {line.split()[0] for line in shown if line.startswith("#")}
    for r in story:
        assert f"#{r.step}" in steps, r.describe()
    assert lost.plan
    held = lost.plan[0]
    assert any(f"{r.actor}: {r.label}" == held.what.describe() for r in lost.trace if f"#{r.step}" in steps)
    assert text.count("instead of") <= len(lost.plan)  # a hold is said once
    # a step on an object the violation does not name folds
    quiet = [r for r in lost.trace if r.key is None and not r.choice and r.kind == "run"]
    assert any(r.describe().strip() not in shown for r in quiet)


def test_replay_runs_says_reproduced_k_of_n(lost: Counterexample, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``--runs N`` replays N times and counts; a model on the world's own scheduler reproduces every time."""
    path = tmp_path / "lost.json"
    lost.save(path)
    code, out, err = run_main(capsys, "replay", str(path), "--runs", "3")
    assert code == 0, err
    assert out.strip().splitlines()[-1].startswith(f"replayed trace {path}: reproduced 3 of 3 (oracle violated: ")
    code, out, _ = run_main(capsys, "replay", str(path), "--runs", "2", "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["reproduced"], doc["runs"], doc["first_divergence"]) == (2, 2, None)
    code, _, err = run_main(capsys, "replay", str(path), "--runs", "0")
    assert code == 2 and "--runs 0 is not a number of runs" in err
