"""Issue 52, item 8: the smaller things that misled a newcomer, each said clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import LOST_UPDATE, assert_one_clean_error, json_lines, run_cli

from harness.explore import Counterexample


@pytest.fixture
def models(tmp_path: Path) -> Path:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "model.py").write_text(LOST_UPDATE)
    return tmp_path


def test_hunt_of_a_file_without_function_suggests_the_form(models: Path) -> None:
    proc = run_cli("hunt", "models/model.py", cwd=models)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, "models/model.py:FUNCTION", "e.g. models/model.py:lost_update")
    assert "not_marked" not in proc.stderr  # only the marked functions are offered
    proc = run_cli("hunt", "models/missing.py", cwd=models)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, "models/missing.py: no such file", "models/missing.py:FUNCTION")


def test_replay_after_the_model_changed_says_it_replays_the_copy(models: Path) -> None:
    proc = run_cli("hunt", "models/model.py:lost_update", "--variant", "buggy", "--json", "--report-dir", "out",
                   cwd=models)
    [row] = json_lines(proc.stdout)
    trace = row["trace"]
    same = run_cli("replay", trace, cwd=models)
    assert same.returncode == 0 and "has changed" not in same.stderr  # nothing to say while the file is as hunted
    model = models / "models" / "model.py"
    model.write_text(model.read_text().replace("if fixed:", "if True:"))  # the user's fix
    after = run_cli("replay", trace, cwd=models)
    assert after.returncode == 0, after.stderr  # the copy beside the trace still replays the hunted model
    assert "note: models/model.py has changed since" in after.stderr and "replays the copy saved beside" in after.stderr
    assert "python -m harness hunt models/model.py:lost_update" in after.stderr


def test_a_resigned_edited_trace_is_not_blamed_on_the_scenario(models: Path) -> None:
    proc = run_cli("hunt", "models/model.py:lost_update", "--variant", "buggy", "--json", "--report-dir", "out",
                   cwd=models)
    [row] = json_lines(proc.stdout)
    cx = Counterexample.load(models / row["trace"] if not Path(row["trace"]).is_absolute() else row["trace"])
    assert cx.plan
    cx.plan = ()  # the trace's plan edited away, and the file signed again by the library
    edited = models / "out" / "edited.json"
    cx.save(edited)
    again = run_cli("replay", str(edited), cwd=models)
    assert again.returncode != 0
    assert "The scenario file is the one this trace was hunted with" in again.stderr
    assert "The scenario changed since" not in again.stderr


def test_an_unapplied_plan_entry_is_said_first(models: Path) -> None:
    plan = models / "plan.json"
    plan.write_text(json.dumps([{"fault": ["b", "wirte x", "x", 1]}]))
    proc = run_cli("hunt", "models/model.py:lost_update", "--variant", "buggy", "--plan", str(plan), "--faults",
                   "all", "--report-dir", "out", cwd=models)
    assert proc.returncode == 1
    line = next(x for x in proc.stdout.splitlines() if x.startswith("[PLAN NOT APPLIED]"))
    head = line.split("): ", 1)[1]
    assert head.startswith("the plan did not apply (1 of its entries): entry 1 fault 'b: wirte x' never occurred"), line
