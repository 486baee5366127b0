"""Strategies find the toy races, shrink them to the proved minimum, and replay them exactly."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness as h
from harness.explore import Budget, Counterexample
from harness.explore._counterexample import FORMAT_NAME, READABLE_VERSIONS, checksum
from tests import toys

ROOT = Path(__file__).resolve().parents[2]
TOYS = [toys.lost_update, toys.order_violation, toys.slow_liveness]
STRATEGIES = ["random", "pct", "hypothesis", "exhaustive"]


@pytest.mark.parametrize("scenario", TOYS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_finds_every_toy(scenario, strategy) -> None:  # type: ignore[no-untyped-def]
    result = h.explore(scenario, strategy=strategy, budget=3000, seed=3, prove_minimal=False)
    assert result.found, result.outcome
    assert result.verdict == "found"
    assert "found" in result.outcome


@pytest.mark.parametrize("scenario", TOYS, ids=lambda s: s.__name__)
def test_hypothesis_shrinks_to_the_exhaustive_minimum(scenario) -> None:  # type: ignore[no-untyped-def]
    referee = h.explore(scenario, strategy="exhaustive:3", budget=20_000)
    assert referee.found
    minimum = referee.counterexample.deviations  # type: ignore[union-attr]
    # Hypothesis' own shrinking (plus setting deviations back to canonical), no referee:
    shrunk = h.explore(scenario, strategy="hypothesis", budget=3000, seed=1, prove_minimal=False)
    assert shrunk.counterexample is not None
    assert shrunk.counterexample.deviations == minimum
    # and the default pipeline, whose referee proves it:
    full = h.explore(scenario, strategy="hypothesis", budget=3000, seed=3)
    assert full.counterexample is not None and full.counterexample.proved_minimal is True
    assert full.counterexample.deviations == minimum


def test_the_order_violation_needs_exactly_two_deviations() -> None:
    """Two positional deviations (the publisher passed over twice) are one postponement in a plan."""
    assert h.explore(toys.order_violation, strategy="exhaustive:0", budget=20_000).verdict == "proved-clean"
    found = h.explore(toys.order_violation, strategy="exhaustive:1", budget=20_000)
    cx = found.counterexample
    assert cx is not None and cx.deviations == 1 and cx.plan is not None
    assert cx.plan[0].describe() == "hold 'publisher: write data' as long as its window allows"
    assert cx.trace.deviations >= 2  # positionally, the same run passes the publisher over at least twice
    assert 25 <= cx.steps <= 40


def test_the_liveness_toy_shows_only_as_a_300_second_delay() -> None:
    found = h.explore(toys.slow_liveness, strategy="random", budget=500)
    cx = found.counterexample
    assert cx is not None and cx.violation.kind == "oracle"
    assert "within 10 virtual seconds" in cx.violation.message
    assert cx.violation.time == 10.0
    labels = [r.label for r in cx.trace]
    assert labels.index("j1 check record") < labels.index("j2 check record") < labels.index("j1 write record")
    # the fixed toy also loses the race but retries after 5 s: nothing is late
    assert h.explore(toys.slow_liveness, strategy="random", budget=500, fixed=True).verdict == "none-found"


# A plan entry is a hold "until any later action" or "as long as its window allows", so one entry
# covers what took several positional deviations; order_violation's 30 steps make its 2-entry
# level ~10^5 plans without the reduction of the speed issue, so the fast suite proves it to 1.
PROOF_DEPTH = {"lost_update": 2, "order_violation": 1, "slow_liveness": 2}


@pytest.mark.parametrize("scenario", TOYS, ids=lambda s: s.__name__)
def test_fixed_toys_are_proved_clean(scenario) -> None:  # type: ignore[no-untyped-def]
    k = PROOF_DEPTH[scenario.__name__]
    result = h.explore(scenario, strategy=f"exhaustive:{k}", budget=50_000, fixed=True)
    assert result.verdict == "proved-clean"
    assert result.outcome.startswith(f"proved clean up to {k} deviation")


def test_sampled_clean_is_not_worded_as_a_proof() -> None:
    result = h.explore(toys.lost_update, strategy="random", budget=200, fixed=True)
    assert result.verdict == "none-found"
    assert result.outcome.endswith("clean (not a proof)")
    assert "proved" not in result.outcome


def test_found_counterexample_is_proved_minimal_by_default() -> None:
    result = h.explore(toys.order_violation, strategy="random", budget=3000, seed=5)
    cx = result.counterexample
    # the publisher passed over at "write data" until the consumer has read: one postponement
    assert cx is not None and cx.proved_minimal is True and cx.deviations == 1
    assert [type(e).__name__ for e in cx.plan or ()] == ["Hold"]
    assert "(proved minimal)" in result.outcome


def test_pct_reports_its_probability_bound_when_nothing_is_found() -> None:
    result = h.explore(toys.lost_update, strategy="pct:2", budget=50, fixed=True)
    assert result.verdict == "none-found" and result.pct_bound is not None
    assert 0 < result.pct_bound <= 1 and "PCT bound" in result.outcome


def test_budget_parsing() -> None:
    assert Budget.parse("500") == Budget(runs=500)
    assert Budget.parse("30s") == Budget(runs=None, seconds=30.0)
    with pytest.raises(h.UsageError, match="RUNS"):
        Budget.parse("ten")


def test_unknown_strategy_names_the_accepted_ones() -> None:
    with pytest.raises(h.UsageError, match="random, pct"):
        h.explore(toys.lost_update, strategy="dfs")


def ticking(monkeypatch: pytest.MonkeyPatch, step: float) -> list[float]:
    """A wall clock that moves ``step`` seconds each time it is read: a seconds budget then stops after a number of
    reads that does not depend on how fast the machine is (issue 37: no test asserts a wall-clock quantity)."""
    runner = importlib.import_module("harness.explore._runner")  # harness.explore is also explore()'s name
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    monkeypatch.setattr(runner, "wall_clock", clock)
    return now


def test_seconds_budget_stops_a_clean_search(monkeypatch: pytest.MonkeyPatch) -> None:
    now = ticking(monkeypatch, 0.01)
    result = h.explore(toys.order_violation, strategy="hypothesis", budget="1s", fixed=True)
    assert result.verdict == "none-found" and result.runs > 10
    assert 1.0 <= now[0] < 1.5  # it stopped once the budget's second had passed on the clock it was given


# ----------------------------------------------------------------- determinism
def _digest_cmd(seed: int, strategy: str = "random") -> str:
    return (
        "import harness as h; from tests import toys; "
        f"r = h.explore(toys.order_violation, strategy='{strategy}', budget=3000, seed={seed}); "
        "print(r.counterexample.digest(), r.first_found_run)"
    )


def test_same_seed_same_trace_in_process() -> None:
    a = h.explore(toys.order_violation, strategy="random", budget=3000, seed=11)
    b = h.explore(toys.order_violation, strategy="random", budget=3000, seed=11)
    assert a.counterexample is not None and b.counterexample is not None
    assert a.counterexample.digest() == b.counterexample.digest()
    assert a.first_found_run == b.first_found_run


@pytest.mark.parametrize("strategy", ["random", "pct", "hypothesis"])
def test_same_seed_same_trace_in_another_process_and_hash_seed(strategy: str) -> None:
    here = h.explore(toys.order_violation, strategy=strategy, budget=3000, seed=7)
    assert here.counterexample is not None
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", _digest_cmd(7, strategy)], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    digest, first = out.stdout.split()
    assert digest == here.counterexample.digest()
    if strategy != "hypothesis":  # Hypothesis' example count may depend on its process-wide caches
        assert int(first) == here.first_found_run


def test_different_seeds_give_different_traces() -> None:
    from harness.sim import RandomChooser, run_once

    digests = {run_once(toys.order_violation, RandomChooser(seed)).trace.digest() for seed in range(20)}
    assert len(digests) >= 15


# ------------------------------------------------------------------ replay
def test_saved_counterexample_replays_in_a_fresh_process(tmp_path: Path) -> None:
    result = h.explore(toys.order_violation, strategy="random", budget=3000, seed=2)
    cx = result.counterexample
    assert cx is not None
    path = cx.save(tmp_path / "cx.json")
    code = (
        "import sys; from harness.explore import Counterexample; "
        "cx = Counterexample.load(sys.argv[1]); out = cx.replay(); "
        "print(out.trace.digest()); print(out.violation.describe())"
    )
    env = dict(os.environ, PYTHONHASHSEED="999")
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    digest, violation = proc.stdout.strip().splitlines()
    assert digest == cx.digest()
    assert violation == cx.violation.describe()


def test_replay_against_a_changed_scenario_names_the_divergent_step(tmp_path: Path) -> None:
    cx = h.explore(toys.order_violation, strategy="random", budget=3000, seed=2).counterexample
    assert cx is not None
    raw = cx.to_json()
    raw["scenario"] = "tests.explore.changed:order_violation"  # what a later version of the code would say
    raw["checksum"] = checksum(raw)  # written that way: not an edit, a changed scenario
    path = tmp_path / "cx.json"
    path.write_text(json.dumps(raw))
    loaded = Counterexample.load(path)
    with pytest.raises(h.ReplayDivergence) as info:
        loaded.replay()
    msg = str(info.value)
    assert "diverged at step" in msg and "the trace recorded" in msg and "now offers" in msg
    assert "re-run the hunt" in msg
    assert info.value.step > 1


def _sealed(**fields: object) -> dict[str, object]:
    """A trace-shaped dict with a matching checksum (unless ``checksum`` is given)."""
    raw: dict[str, object] = {"format": FORMAT_NAME, "version": READABLE_VERSIONS[-1], **fields}
    raw.setdefault("checksum", checksum(raw))
    return raw


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "does not exist"),
        ('{"format": "race-harness-trace", "version": 1, "scen', "not valid JSON"),
        ("[1, 2, 3]", "not a race-harness trace"),
        ('{"format": "race-harness-trace", "version": 99}', "version 99"),
        ('{"format": "race-harness-trace", "version": 1, "scenario": "x:y"}', "has no checksum"),
        (json.dumps(_sealed(scenario="x:y")), "missing or has a malformed field"),
        (json.dumps(_sealed(scenario="x:y", checksum="0" * 64)), "edited or damaged"),
    ],
)
def test_bad_trace_files_get_one_paragraph_errors(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(h.TraceFileError) as info:
        Counterexample.load(path)
    msg = str(info.value)
    assert expected in msg
    assert "\n" not in msg and "re-run the hunt" in msg


def test_truncated_real_trace_is_reported_not_raised(tmp_path: Path) -> None:
    cx = h.explore(toys.lost_update, strategy="random", budget=100).counterexample
    assert cx is not None
    path = cx.save(tmp_path / "cx.json")
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(h.TraceFileError, match="truncated"):
        Counterexample.load(path)


def test_program_lists_the_deviations() -> None:
    cx = h.explore(toys.order_violation, strategy="exhaustive:2", budget=20_000).counterexample
    assert cx is not None
    program = cx.program()
    # one hold, said once: the first step it displaced names it, the next one it spans does not repeat it
    assert program.count("<- choice") == 1
    assert "instead of 'publisher: write data'" in program
    assert program.splitlines()[-1].startswith("  => at t=0.000, step #")
    assert "oracle violated" in program.splitlines()[-1]


def test_exhaustive_cut_short_by_its_budget_says_so() -> None:
    result = h.explore(toys.order_violation, strategy="exhaustive:2", budget=50, fixed=True)
    assert result.verdict == "none-found"
    assert "not a proof" in result.outcome and "stopped when the budget (50 runs) ran out" in result.outcome
