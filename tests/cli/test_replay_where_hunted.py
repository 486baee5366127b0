"""Issue 60: replays that find what the scenario names, and replays compared by digest.

A hunt copies a file scenario beside its trace. A scenario that finds files
beside itself (``Path(__file__).parent / "operator.py"``) replays where it was
hunted while that file is there unchanged (``__file__`` names it, its siblings
resolve); the report folder's copy is the fallback, and a file the copy cannot
find beside it is named with the fix, never blamed on the trace. A replay inside
the world is the trace byte for byte: another digest is a divergence, with its
first differing step, for ``replay`` and ``replay --runs N`` alike.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import ROOT, assert_one_clean_error, run_main
from cli_support import run_cli as _run_cli

import harness as h
from harness.explore._counterexample import Counterexample, checksum
from harness.sim import Trace
from tests import toys

#: a scenario that reads a file beside itself, and says in its violation which file it ran from
MODEL = '''
from pathlib import Path

import harness as h

SETTINGS = Path(__file__).parent / "settings.txt"


@h.scenario
async def lost_update(world: h.World) -> None:
    pause = float(SETTINGS.read_text())
    store = {"x": 0}

    async def increment(warm_up: int) -> None:
        for i in range(warm_up):
            await world.step(f"warm up {i}")
        await world.sleep(pause)
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1

    world.spawn("a", increment, 0)
    world.spawn("b", increment, 1)
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']} (ran {__file__})", "no lost update")
'''


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m harness`` in ``cwd``, a folder of the user's: this checkout's harness, as from its root."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return _run_cli(*args, cwd=cwd, env={"PYTHONPATH": path})


def _hunted(tmp_path: Path) -> tuple[Path, Path]:
    """``model.py`` and ``settings.txt`` in ``tmp_path``, hunted into ``tmp_path/report``: (model, trace)."""
    model = tmp_path / "project" / "model.py"
    model.parent.mkdir()
    model.write_text(MODEL)
    (model.parent / "settings.txt").write_text("0.5\n")
    hunt = run_cli("hunt", "model.py:lost_update", "--report-dir", str(tmp_path / "report"), cwd=model.parent)
    assert hunt.returncode == 0 and "found" in hunt.stdout, hunt.stdout + hunt.stderr
    trace = tmp_path / "report" / "model-lost_update.json"
    assert (tmp_path / "report" / "model-lost_update.py").read_text() == MODEL  # the copy beside the trace
    return model, trace


def test_replay_runs_the_scenario_where_it_was_hunted(tmp_path: Path) -> None:
    model, trace = _hunted(tmp_path)
    raw = json.loads(trace.read_text())
    assert raw["scenario"] == "model-lost_update.py:lost_update"  # the trace still names the copy (portable)
    assert raw["scenario_origin"] == model.resolve().as_posix()  # and where it was hunted, signed
    # replayed from elsewhere (another folder than the hunt's): the original runs, its sibling resolves
    replay = run_cli("replay", str(trace), cwd=tmp_path)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    lines = replay.stdout.strip().splitlines()
    assert lines[0].startswith(f"replaying trace {trace}: {model.resolve().as_posix()}:lost_update(")
    assert lines[-2] == f"=> oracle violated: at the end of the run: x is 1 (ran {model.resolve()})"  # __file__
    assert lines[-1].startswith(f"replayed trace {trace}: same violation, same digest (")
    assert replay.stderr == ""
    runs = run_cli("replay", str(trace), "--runs", "2", cwd=tmp_path)
    assert runs.returncode == 0 and "reproduced 2 of 2" in runs.stdout and "compared by digest" in runs.stdout
    # the original edited since the hunt: the copy runs (the model as hunted), its sibling missing beside it
    model.write_text(MODEL + "\n# edited\n")
    edited = run_cli("replay", str(trace), cwd=tmp_path)
    assert edited.returncode == 2, edited.stdout + edited.stderr
    assert f"{model.resolve()}, where it was hunted, has changed since the hunt" in edited.stderr
    assert "Copy it next to" in edited.stderr and "settings.txt" in edited.stderr


def test_replay_names_a_missing_sibling_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model, trace = _hunted(tmp_path)
    moved = model.with_name("model-moved.py")
    model.rename(moved)  # the hunted file is gone: the report folder's copy runs, and settings.txt is not beside it
    copy = trace.with_suffix(".py")
    for args in ((), ("--runs", "2")):
        gone = run_cli("replay", str(trace), *args, cwd=tmp_path)
        assert gone.returncode == 2, gone.stdout + gone.stderr  # as a trace whose scenario file is missing
        assert_one_clean_error(
            gone.stderr, f"{trace}: the scenario refers to settings.txt beside it, which is not in this folder "
            f"({trace.parent}); this replay runs the copy saved beside the trace, {copy.name}, because "
            f"{model.resolve()}, where it was hunted, is no longer there. Copy it next to {copy}, or replay it "
            f"where it was hunted ({model.resolve()})")
        assert "edited" not in gone.stderr and "diverged" not in gone.stderr and "wall clock" not in gone.stderr
    # the fix it names works: the sibling copied next to the copy
    shutil.copy(model.with_name("settings.txt"), trace.parent / "settings.txt")
    fixed = run_cli("replay", str(trace), cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert f"(ran {copy.resolve()})" in fixed.stdout  # the copy ran, and found what it needed beside it
    # in this process too (a pytest --race-replay, a report): the same paragraph, from the loaded trace
    (trace.parent / "settings.txt").unlink()
    with pytest.raises(h.TraceFileError, match=r"the scenario refers to settings\.txt beside it"):
        Counterexample.load(trace).replay()
    code, _, err = run_main(capsys, "replay", str(trace))
    assert code == 2 and "the scenario refers to settings.txt beside it" in err


def test_replay_with_another_digest_diverges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cx = h.explore(toys.lost_update, strategy="random", budget=500, seed=3).counterexample
    assert cx is not None
    raw = cx.to_json()
    # the same actions in the same order with the same choices and violation, one step at another virtual time:
    # what the step-by-step comparison let through ("reproduced 3 of 3"), and the digest does not
    k = len(raw["trace"]) // 2
    raw["trace"][k]["time"] += 0.25
    changed = raw["trace"][k]["step"]
    raw["digest"] = Trace.from_json(raw["trace"]).digest()
    raw["checksum"] = checksum(raw)  # written that way (a changed model), not edited
    path = tmp_path / "lost.json"
    path.write_text(json.dumps(raw))
    loaded = Counterexample.load(path)
    out = loaded.replay(check=False)
    assert out.violation is not None and loaded.violation.same_bug(out.violation)  # the same violation, yet
    assert out.trace.digest() != loaded.digest() and loaded.divergence(out) is not None
    code, out_text, err = run_main(capsys, "replay", str(path))
    assert code == 1, out_text + err
    assert_one_clean_error(err, f"replayed trace {path}: diverged at step {changed} because the trace recorded ",
                           "the same action, at another virtual time", "digest")
    code, out_text, err = run_main(capsys, "replay", str(path), "--runs", "3")
    assert code == 1
    last = out_text.strip().splitlines()[-1]
    assert last.startswith(f"replayed trace {path}: reproduced 0 of 3 (")
    assert "compared by digest" in last and f"first divergence: run 1 diverged at step {changed} because" in last
    assert err.count(f"diverged at step {changed}") == 3  # each run's own line
    code, out_text, _ = run_main(capsys, "replay", str(path), "--runs", "3", "--json")
    doc = json.loads(out_text)
    assert code == 1 and (doc["reproduced"], doc["compared"]) == (0, "by digest")
    assert doc["first_divergence"].startswith(f"run 1 diverged at step {changed} because")
    # the trace as written replays: same digest, exit 0
    cx.save(path)
    code, out_text, err = run_main(capsys, "replay", str(path), "--runs", "3")
    assert code == 0 and "reproduced 3 of 3" in out_text, err


def test_an_older_trace_replays_from_the_folder_the_hunt_ran_in(tmp_path: Path) -> None:
    """A trace written before the hunted file's path was recorded knows it only relative to the hunt's folder: it
    replays there as hunted, and elsewhere the copy names what it lacks and that folder."""
    model, trace = _hunted(tmp_path)
    raw = json.loads(trace.read_text())
    del raw["scenario_origin"]
    raw["checksum"] = checksum(raw)  # what the older harness signed
    trace.write_text(json.dumps(raw))
    assert raw["meta"]["hunted_file"] == "model.py"
    there = run_cli("replay", str(trace), cwd=model.parent)
    assert there.returncode == 0, there.stdout + there.stderr
    assert f"(ran {model.resolve()})" in there.stdout
    elsewhere = run_cli("replay", str(trace), cwd=tmp_path)
    assert elsewhere.returncode == 2
    assert_one_clean_error(elsewhere.stderr, "the scenario refers to settings.txt beside it",
                           "the trace is older than the record of where it was hunted",
                           "replay it from the folder the hunt ran in (the one that holds model.py)")
