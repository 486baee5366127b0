"""Smoke test of ``python -m bench``: every section runs at tiny sizes and renders. No timing assertions."""

from __future__ import annotations

import json

import pytest

from bench import runtime
from bench.run import Settings, render, run

TINY = Settings(quick=True, seeds=1, search_cap=0.5, baseline_cap=0.3, time_scale=0.001, scale_duration=0.5, hunt_runs=4)


def test_runtime_functions_run_at_tiny_sizes() -> None:
    assert runtime.coroutine_loop(2, 50) > 0
    assert runtime.scheduler_loop(2, 50) > 0
    assert runtime.handoffs(2, 50) > 0
    assert runtime.executions(3) > 0
    assert runtime.hypothesis_examples(3) > 0


def test_old_path_switches_run_and_restore() -> None:
    """The issue-13 ratio rows switch the replaced paths on for one side only, and always back off."""
    from harness.sim import World

    outcome, direct = World.outcome, World._direct_time
    with runtime.old_paths(eager_trace=True, time_through_trio=True):
        assert World._direct_time is False and World.outcome is not outcome
        assert runtime.time_jumps(2) > 0 and runtime.executions_batched(2) > 0
    assert World.outcome is outcome and World._direct_time is direct
    rate, ratio = runtime._best_ratio(lambda: runtime.time_jumps(2), lambda: runtime.time_jumps(2), time_through_trio=True)
    assert rate > 0 and ratio > 0 and World._direct_time is direct
    assert runtime.race_runs("volcano_deleted_jobs", 2) > 0


@pytest.mark.slow
def test_every_section_runs_and_renders() -> None:
    from races import REGISTRY

    if not REGISTRY:
        pytest.skip("no race registered yet")
    name = next(iter(REGISTRY))
    settings = Settings(**{**TINY.__dict__, "races": (name,)})
    res = run(settings=settings, sections=("time_to_failure", "baseline", "shrinking", "scale", "parallel"))
    json.dumps(res, default=str)  # the JSON file can be written
    assert "errors" not in res, res.get("errors")
    s = res["sections"]
    assert {r["race"] for r in s["time_to_failure"]} == {name}
    assert {r["strategy"] for r in s["time_to_failure"]} == {"random", "pct", "hypothesis", "exhaustive"}
    assert [r["race"] for r in s["baseline"]] == [name] and [r["race"] for r in s["shrinking"]] == [name]
    assert [r["scale"] for r in s["scale"]] == ["1x", "10x", "100x"]
    assert [r["mode"] for r in s["parallel"]][:1] in (["-n 0 (1 process)"], ["-"])
    text = render(res)
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5."):
        assert heading in text


def test_simulated_proof_runs_waves_in_turn_and_shards_on_the_first_free_worker() -> None:
    from bench.proof import simulate

    costs = [(1, 4, 1.0), (1, 4, 1.0), (1, 4, 2.0), (2, 4, 1.0), (2, 4, 0.5)]
    assert simulate(costs, 1) == 5.5  # one worker: every shard in turn
    assert simulate(costs, 2) == 3.0 + 1.0  # wave 1: {1, 1+2} -> 3; wave 2: {1, 0.5} -> 1
    assert simulate(costs, 128) == 2.0 + 1.0  # more workers than shards: each wave's largest shard
