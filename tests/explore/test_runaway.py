"""A run that never ends is its own finding: never the race, never a proof's silent cost; time cannot stand still."""

from __future__ import annotations

import json
from pathlib import Path

import harness as h
from harness.sim import PlanChooser, World, run_once
from tests.cli.cli_support import run_cli
from tests.explore.runaway_models import START, livelock_in_proof, spinning, sub_nanosecond_requeue

MODELS = "tests/explore/runaway_models.py"


def test_float_requeue_cannot_livelock() -> None:
    """A requeue after 1e-15 s (float seconds' rounding residue) moves the clock by one nanosecond, as Go's would."""
    out = run_once(sub_nanosecond_requeue, PlanChooser())
    assert out.violation is None, out.violation
    times = [r.time for r in out.trace if r.label == "requeuer ready k"]
    assert times == [START + 1e-9]
    assert START + 1e-15 == START  # the residue a float clock would lose: the same instant for ever

    fired: list[float] = []

    async def timers(world: World) -> None:
        await world.sleep(START)
        world.call_later(1e-15, lambda: fired.append(world.now), label="tiny")
        world.call_later(0.1 + 0.2, lambda: fired.append(world.now), label="float sum")
        world.call_later(0.0, lambda: fired.append(world.now), label="now")

    run_once(timers, PlanChooser())
    assert fired == [START, START + 1e-9, (round(START * 1e9) + 300_000_000) / 1e9]


def test_the_clock_counts_whole_nanoseconds() -> None:
    """Virtual time is an integer of nanoseconds, as Go's Duration; the API takes and shows seconds.

    A float clock on the nanosecond grid jumped to ``ceil(t * 1e9)``, and ``4.155 * 1e9`` is
    4155000000.0000005 in floats: the jump landed at 4.155000001. An integer clock lands on the instant.
    """
    seen: list[tuple[float, int]] = []

    async def scenario(world: World) -> None:
        await world.sleep(4.155)
        seen.append((world.now, world._now_ns))
        world.call_later(0.1 + 0.2, lambda: seen.append((world.now, world._now_ns)), label="float sum")

    out = run_once(scenario, PlanChooser())
    assert seen == [(4.155, 4_155_000_000), (4.455, 4_455_000_000)]
    assert all(type(ns) is int for _, ns in seen)
    assert [r.time for r in out.trace][-1] == 4.455 and out.end_time == 4.455


def test_livelock_is_a_finding_not_a_proof_cost() -> None:
    """A livelock met by the proof stops it at once and is reported apart; one met by the search is the verdict."""
    r = h.explore(livelock_in_proof, strategy="random", budget=200)
    assert r.counterexample is not None and r.counterexample.violation.kind == "oracle"
    assert r.runaway is not None and "livelock" in r.runaway and "minimality proof" in r.runaway
    assert "poller" in r.runaway  # the looping actor is named
    assert r.counterexample.proved_minimal is not True and "ran away" in r.counterexample.proof
    assert r.proof_runs is not None and r.proof_runs < 10  # not thousands of 20,000-step runs

    clean = h.explore(spinning, strategy="random", budget=50, fixed=True)
    assert clean.verdict == "runaway" and not clean.found and clean.runs == 1
    cx = clean.counterexample
    assert cx is not None and cx.violation.kind == "livelock" and "writer-a" in cx.violation.message
    program = cx.program()
    assert len(program.splitlines()) < 60 and "the loop goes on for" in program


def test_runaway_never_counts_as_expected_violation(tmp_path: Path) -> None:
    """A buggy variant whose run never ends is not 'found as expected': exit 1, verdict runaway, in every output."""
    proc = run_cli("hunt", f"{MODELS}:spinning", "--variant", "buggy", "--strategy", "random", "--budget", "20",
                   "--json", "--report-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = json.loads(proc.stdout.splitlines()[0])
    assert (row["verdict"], row["found"], row["expected"]) == ("runaway", False, False)
    assert "livelock" in row["outcome"]


def test_runaway_in_proof_keeps_the_counterexample(tmp_path: Path) -> None:
    """Issue 37: a runaway met by the shrinker or the proof never replaces a counterexample already found; it cuts
    the proof ("not proved minimal: a run of the minimality proof ran away (livelock ...)"), and the hunt is found."""
    proc = run_cli("hunt", f"{MODELS}:livelock_in_proof", "--variant", "buggy", "--strategy", "random", "--json",
                   "--report-dir", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads(proc.stdout.splitlines()[0])
    assert (row["verdict"], row["found"], row["expected"]) == ("found", True, True)
    assert row["violation_kind"] == "oracle" and row["proved_minimal"] is not True
    assert "not proved minimal: a run of the minimality proof ran away (livelock" in row["proof"]
    assert "the counterexample stands" in row["proof"]
    proc = run_cli("hunt", f"{MODELS}:livelock_in_proof", "--variant", "buggy", "--strategy", "random",
                   "--report-dir", str(tmp_path))
    assert proc.returncode == 0 and "[ok]" in proc.stdout and "[RUNAWAY]" not in proc.stdout
    assert "the worker failed and nobody noticed" in proc.stdout


def test_hunt_runs_a_hand_written_plan(tmp_path: Path) -> None:
    """`hunt --plan FILE` and `h.run_plan` run the user's plan once and report it like any counterexample."""
    fault = {"fault": ["worker", "worker fails before its write", None, 1]}
    r = h.run_plan(livelock_in_proof, [fault])
    assert r.found and r.runs == 1 and r.counterexample is not None
    assert "worker failed" in r.counterexample.violation.message and r.counterexample.plan is not None
    assert h.run_plan(livelock_in_proof, [fault], fixed=True).verdict == "none-found"
    typo = h.run_plan(livelock_in_proof, [{"fault": ["worker", "worker fails before its wirte", None, 1]}])
    assert not typo.found and any("never applied" in n for n in typo.notes)

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([fault]))
    proc = run_cli("hunt", f"{MODELS}:livelock_in_proof", "--variant", "buggy", "--plan", str(plan), "--json",
                   "--report-dir", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads(proc.stdout.splitlines()[0])
    assert row["found"] and row["runs"] == 1 and "hand-written plan" in row["proof"]
    assert Path(row["trace"]).is_file()
    plan.write_text('[{"fault": "worker"}]')
    bad = run_cli("hunt", f"{MODELS}:livelock_in_proof", "--plan", str(plan), "--report-dir", str(tmp_path / "r"))
    assert bad.returncode == 2 and "entry 1 is not a plan entry" in bad.stderr and "Traceback" not in bad.stderr
