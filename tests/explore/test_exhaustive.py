"""The exhaustive referee (harness/explore/_exhaustive.py): to its verdict, cut by a budget, in shards, batched."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

import harness as h
from harness.explore._exhaustive import MAX_SHARD_PLANS, MIN_SHARD_PLANS, cut_shards
from tests.cli.cli_support import run_main
from tests.explore.test_minimal import two_lost_updates
from tests.toys import lost_update

TOY = str(Path(__file__).resolve().parents[1] / "toys.py") + ":lost_update"


def _levels(scenario: h.Scenario, k: int, **kw: object) -> tuple[h.Result, dict[int, tuple[int, int]]]:
    """A search and, per level, the last (plans done, plans known) its progress hook saw."""
    seen: dict[int, tuple[int, int]] = {}

    def hook(phase: str, level: int, done: int, known: int) -> None:
        assert phase == "exhaustive" and done <= known
        seen[level] = (done, known)

    r = h.explore(scenario, strategy=f"exhaustive:{k}", level_progress=hook, **kw)  # type: ignore[arg-type]
    return r, seen


def test_exhaustive_runs_to_its_verdict_without_budget(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    r, levels = _levels(lost_update, 4, fixed=True)
    # more runs than a sampling budget of 300: a proof is not capped by it (measured: 446 runs)
    assert r.verdict == "proved-clean" and r.proved_bound == 4 and r.runs > 300
    assert sum(done for done, _known in levels.values()) == r.runs
    assert all(done == known for done, known in levels.values())  # every plan of every level ran
    capped = h.explore(lost_update, strategy="exhaustive:4", budget=300, fixed=True)
    assert capped.verdict == "none-found" and capped.runs == 300
    # the command line: no --budget, and the race-less file scenario ends with the proof
    code, out, err = run_main(capsys, "hunt", TOY, "--variant", "fixed", "--strategy", "exhaustive:4",
                              "--report-dir", str(tmp_path))
    assert code == 0, err
    assert f"proved clean up to 4 deviations (holds and faults; the model's own fault flags; no time windows; " \
           f"{r.runs:,} runs" in out
    assert "plans run of those known" not in out  # the live bar is for terminals only


def test_cut_exhaustive_names_complete_levels() -> None:
    _full, levels = _levels(lost_update, 4, fixed=True)
    budget = levels[0][0] + levels[1][0] + levels[2][0] + 5  # levels 0-2 and 5 plans of level 3
    cut = h.explore(lost_update, strategy="exhaustive:4", budget=budget, fixed=True)
    assert cut.verdict == "none-found" and cut.runs == budget
    m = re.search(r"levels 0-2 complete; level 3: 5 of at least ([\d,]+) plans run", cut.outcome)
    assert m is not None, cut.outcome
    assert 5 < int(m.group(1).replace(",", "")) <= levels[3][1]  # the plans known when it stopped
    assert "raise the budget, or leave it out, for a proof" in cut.outcome
    one = h.explore(lost_update, strategy="exhaustive:4", budget=1, fixed=True)
    assert "level 0 complete; level 1: 0 of at least" in one.outcome
    # the minimality proof says the same when its own budget cuts it (2 entries: 2 runs per entry)
    r = h.explore(two_lost_updates, strategy="random", budget=2000, proof_budget=2)
    cx = r.counterexample
    assert cx is not None and cx.proved_minimal is None
    assert re.search(r"1 not covered: stopped after 4 runs \(level 0 complete; level 1: 3 of at least \d+ plans run\)",
                     cx.proof), cx.proof


def test_level_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    from harness.cli import _LiveProgress

    out = StringIO()
    live = _LiveProgress(Console(file=out, force_terminal=True, width=120))
    hook = live.start("lost_update (fixed)", None)
    r = h.explore(lost_update, strategy="exhaustive:3", progress=hook, level_progress=live.levels, fixed=True)
    live.stop()
    assert r.verdict == "proved-clean"
    assert "exhaustive, level 3" in out.getvalue() and "plans run of those known" in out.getvalue()


def test_shards_follow_the_plan_order_only() -> None:
    assert cut_shards(0) == [] and cut_shards(3) == [3]
    for n in (1, 7, 50, 257, 2048, 10_001):
        sizes = cut_shards(n)
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
        assert max(sizes) <= MAX_SHARD_PLANS and (min(sizes) >= MIN_SHARD_PLANS or len(sizes) == 1)


def test_cut_proof_says_what_remains_on_the_command_line_and_its_page(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A proof its budget cut says how many plans of the level it cut are left, about how long they would take
    and the budget that would reach them: in the trace, on the hunt's line and on the counterexample's page."""
    target = str(Path(__file__).resolve().parents[1] / "toys.py") + ":paused_lost_updates"
    code, out, err = run_main(capsys, "hunt", target, "--strategy", "random", "--seed", "1", "--proof-budget", "2",
                              "--report-dir", str(tmp_path))
    assert code == 0, err  # a scenario of ours promises nothing: its violation is a finding, not a failure
    remains = re.compile(r"level 1: at least ([\d,]+) plans? not run(, about [\d,]+ by [^;]+)?; a proof budget of "
                         r"([\d,]+) runs an entry \(--proof-budget\) would likely reach them")
    took = re.compile(r"would likely reach them: about \d+ (s|min|h) more at [\d.]+ ms a run \(1 worker\)")
    line = " ".join(out.split())
    assert remains.search(line) is not None and took.search(line) is not None, out
    [trace] = tmp_path.glob("*.json")
    cx = h.Counterexample.load(trace)
    assert cx.proved_minimal is None and remains.search(cx.proof), cx.proof
    assert "ms a run" not in cx.proof  # (measured: on the line, never in the saved trace, the same in every run)
    assert cx.proof.startswith("not proved minimal: no counterexample with <= 0 deviations; 1 not covered: stopped "
                               "after 6 runs (level 0 complete; level 1: 5 of at least"), cx.proof
    page = trace.with_suffix(".html").read_text()
    assert remains.search(" ".join(page.split())) is not None
