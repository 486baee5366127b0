"""Issue 37: every verdict is earned. "found" is an oracle violated or a controller's fault; "clean" is a search that
ran what it says; the model's own failures, plans that never applied and fault kinds with no point are said as such."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_support import json_lines, run_cli

import harness as h
from harness.kube import AlreadyExists, APIServer, KubeObject, NotFound
from harness.sim import ReplayChooser, run_once

MODELS = '''
import trio

import harness as h


@h.scenario
async def main_waits_forever(world: h.World, *, fixed: bool = False) -> None:
    """main waits for an event nothing sets: the model is broken, whatever the variant."""
    done = world.Event()

    async def controller() -> None:
        await world.step("reconcile")

    world.spawn("ctrl", controller)
    await done.wait("the controller to report back")


@h.scenario
async def main_reads_a_socket(world: h.World, *, fixed: bool = False) -> None:
    """main blocks on real I/O: its wake-up comes on the real clock, which the harness cannot schedule."""
    async def controller() -> None:
        await world.step("reconcile")

    world.spawn("ctrl", controller)
    a, b = trio.socket.socketpair()
    with a, b:
        await a.recv(1)


@h.scenario
async def hangs_in_both(world: h.World, *, fixed: bool = False) -> None:
    """A controller waits for a delivery its model never produces, in both variants."""
    got = world.Event()

    async def controller() -> None:
        await world.step("reconcile")
        await got.wait("the informer's ADDED event")

    world.spawn("ctrl", controller)


@h.scenario(known_open="upstream#2253: the expectation is recorded after the write")
async def residual(world: h.World, *, fixed: bool = False) -> None:
    """A lost update the fix narrows but does not close: both variants lose it under one interleaving."""
    store = {"x": 0}

    async def increment() -> None:
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1

    world.spawn("a", increment)
    world.spawn("b", increment)
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']}, expected 2", "no lost update")
'''


@pytest.fixture
def models(tmp_path: Path) -> Path:
    (tmp_path / "models.py").write_text(MODELS)
    return tmp_path


def _row(proc: object) -> dict[str, object]:
    [row] = json_lines(proc.stdout)  # type: ignore[attr-defined]
    return row


def test_main_deadlock_is_a_model_error_not_found(models: Path) -> None:
    proc = run_cli("hunt", "models.py:main_waits_forever", "--variant", "buggy", "--report-dir", "out", cwd=models)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[MODEL ERROR]" in proc.stdout and "[ok]" not in proc.stdout and "found" not in proc.stdout.split("]")[0]
    assert "model error: main waited forever at models.py:" in proc.stdout
    assert "await done.wait" in proc.stdout and "eventually oracle" in proc.stdout
    row = _row(run_cli("hunt", "models.py:main_waits_forever", "--variant", "buggy", "--json", "--report-dir", "out",
                       cwd=models))
    assert (row["verdict"], row["found"], row["expected"]) == ("model-error", False, False)
    assert row["runs"] == 1 and row["shrink_runs"] is None and row["proof_runs"] is None  # never shrunk, never proved
    assert row["proved_minimal"] is not True
    # the same under --expect violation, and hunted without a promise
    for extra in (["--expect", "violation"], []):
        proc = run_cli("hunt", "models.py:main_waits_forever", *extra, "--report-dir", "out", cwd=models)
        assert proc.returncode == 1 and "[MODEL ERROR]" in proc.stdout, extra


def test_main_blocked_outside_harness_is_a_model_error(models: Path) -> None:
    row = _row(run_cli("hunt", "models.py:main_reads_a_socket", "--variant", "buggy", "--expect", "violation",
                       "--json", "--report-dir", "out", cwd=models))
    assert (row["verdict"], row["found"], row["expected"]) == ("model-error", False, False)
    assert "main waits on real I/O (a socket) at models.py:" in str(row["model_error"])
    assert "await a.recv(1)" in str(row["model_error"])


def test_same_deadlock_in_both_variants_is_a_model_error(models: Path) -> None:
    proc = run_cli("hunt", "models.py:hangs_in_both", "--variant", "buggy", "--json", "--report-dir", "out", cwd=models)
    assert proc.returncode == 1, proc.stderr
    row = _row(proc)
    assert row["verdict"] == "model-error" and row["expected"] is False
    assert "both variants deadlock the same way" in str(row["model_error"]) and "'ctrl'" in str(row["model_error"])


def test_live_runaway_is_not_the_race(models: Path) -> None:
    proc = run_cli("live", "models.py:residual", "--variant", "buggy", "--runs", "1", "--time-scale", "1e-300", "--json",
                   cwd=models)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = _row(proc)
    assert row["found"] is False and row["expected"] is False
    assert "a runaway is not the race" in str(row["model_error"])


def test_unapplied_plan_entry_is_an_error(models: Path) -> None:
    plan = models / "plan.json"
    plan.write_text(json.dumps([{"hold": ["a", "write x", "x", 1], "until": ["b", "write x", "x", 1]},
                                {"fault": ["b", "wirte x", "x", 1]}]))
    proc = run_cli("hunt", "models.py:residual", "--variant", "buggy", "--plan", str(plan), "--json", "--report-dir",
                   "out", cwd=models)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = _row(proc)
    assert row["expected"] is False and len(row["unapplied"]) == 1  # type: ignore[arg-type]
    [entry] = row["unapplied"]  # type: ignore[misc]
    assert re.match(r"entry \d fault 'b: wirte x' never occurred", entry), entry
    assert "the closest identities: 'b: write x" in entry
    text = run_cli("hunt", "models.py:residual", "--variant", "buggy", "--plan", str(plan), "--report-dir", "out",
                   cwd=models)
    assert text.returncode == 1 and "[PLAN NOT APPLIED]" in text.stdout and "the plan did not apply" in text.stdout
    assert "the plan did not apply" in (models / "out" / "index.html").read_text()
    # a plan that applies whole is a plain result
    plan.write_text(json.dumps([{"hold": ["a", "write x", "x", 1], "until": ["b", "write x", "x", 1]}]))
    ok = _row(run_cli("hunt", "models.py:residual", "--variant", "buggy", "--plan", str(plan), "--json",
                      "--report-dir", "out", cwd=models))
    assert ok["unapplied"] == [] and ok["found"] is True and ok["expected"] is True
    # a plan that applies and stays clean is one run, not a sampled search: the summary says so
    plan.write_text(json.dumps([{"hold": ["a", "read x", "x", 1], "until": ["b", "write x", "x", 1]}]))
    one = run_cli("hunt", "models.py:residual", "--variant", "buggy", "--plan", str(plan), "--expect", "clean",
                  "--report-dir", "out", cwd=models)
    assert one.returncode == 0 and "clean (one run)" in one.stdout and "sampled" not in one.stdout, one.stdout


def test_report_dir_never_overwrites_a_user_file(models: Path) -> None:
    out = models / "mine"
    out.mkdir()
    (out / "index.html").write_text("<p>my own index</p>")
    (out / "models-residual-buggy.json").write_text('{"mine": true}')
    argv = ["hunt", "models.py:residual", "--variant", "buggy", "--report-dir", "mine"]
    first = run_cli(*argv, cwd=models)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (out / "index.html").read_text() == "<p>my own index</p>"
    assert (out / "models-residual-buggy.json").read_text() == '{"mine": true}'
    assert "kept it, and wrote the index to" in first.stderr and "index-2.html" in first.stderr
    assert "did not write; kept them" in first.stderr
    assert (out / "index-2.html").is_file() and (out / "models-residual-buggy-2.json").is_file()
    # a second hunt rewrites its own files in place, and still never the user's
    second = run_cli(*argv, cwd=models)
    assert second.returncode == 0 and not (out / "index-3.html").exists()
    assert not (out / "models-residual-buggy-3.json").exists()
    assert (out / "index.html").read_text() == "<p>my own index</p>"
    # a file of the harness's that the user edited is the user's from then on
    (out / "index-2.html").write_text("<p>edited</p>")
    run_cli(*argv, cwd=models)
    assert (out / "index-2.html").read_text() == "<p>edited</p>" and (out / "index-3.html").is_file()


def test_scenario_known_open_marks_a_user_model(models: Path) -> None:
    proc = run_cli("hunt", "models.py:residual", "--variant", "both", "--json", "--report-dir", "out", cwd=models)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["variant"]: r for r in json_lines(proc.stdout)}
    assert rows["fixed"]["known_open"] is True and rows["fixed"]["found"] is True and rows["fixed"]["expected"] is True
    text = run_cli("hunt", "models.py:residual", "--variant", "both", "--report-dir", "out", cwd=models)
    assert text.returncode == 0 and "known open upstream: models.py:residual still fails" in text.stdout
    index = (models / "out" / "index.html").read_text()
    assert "known open" in index and "upstream#2253: the expectation is recorded after the write" in index
    with pytest.raises(TypeError, match="takes the reason"):
        h.scenario(known_open="")


def test_faults_all_names_kinds_without_points(models: Path) -> None:
    row = _row(run_cli("hunt", "models.py:residual", "--variant", "buggy", "--faults", "all", "--strategy", "random",
                       "--budget", "20", "--json", "--report-dir", "out", cwd=models))
    missing = row["faults_without_points"]
    assert isinstance(missing, list) and "crash: no ControllerProcess or Operator" in missing
    assert any(m.startswith("stale_read:") for m in missing)
    # the kinds a model has points for are not listed
    example = Path(__file__).resolve().parents[2] / "examples" / "sieve_unobserved_state.py"
    ex = _row(run_cli("hunt", f"{example}:scenario", "--variant", "fixed", "--faults", "all", "--budget", "20",
                      "--json", "--report-dir", str(models / "out")))
    kinds = {m.split(":")[0] for m in ex["faults_without_points"]}  # type: ignore[union-attr]
    assert "watch_drop" not in kinds and "crash" in kinds
    assert "no point in the model for crash: no ControllerProcess" in str(ex["outcome"])  # the line and the page


def test_seed_out_of_range_is_a_usage_error(models: Path) -> None:
    for seed in ("-1", str(2**64), str(2**70), "1.5"):
        proc = run_cli("hunt", "models.py:residual", "--seed", seed, "--report-dir", "out", cwd=models)
        assert proc.returncode == 2, (seed, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "--seed" in proc.stderr
    assert not (models / "out").exists()


def test_syntax_error_is_named(models: Path) -> None:
    (models / "broken.py").write_text("import harness as h\n\n\n@h.scenario\nasync def s(world):\n    x = (\n")
    proc = run_cli("hunt", "broken.py:s", "--report-dir", "out", cwd=models)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "syntax error: broken.py, line 6" in proc.stderr and "not marked" not in proc.stderr


def test_closed_pipe_ends_quietly_and_stops(models: Path) -> None:
    """A closed pipe is no traceback; it stops the hunt as Ctrl-C does, with a closed pipe's status (issue 52)."""
    import subprocess
    import sys

    cmd = (f"{sys.executable} -m harness hunt models.py:residual --variant both --report-dir out | head -c 1; "
           "echo \" rc=${PIPESTATUS[0]}\"")
    done = subprocess.run(["bash", "-c", cmd], cwd=models, capture_output=True, text=True, timeout=300)
    assert done.stdout.endswith(" rc=141\n"), done.stdout + done.stderr
    assert "interrupted by a closed pipe: kept" in done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


def test_request_loop_advances_virtual_time() -> None:
    """Two actors undo each other's writes until a view catches up 50 ms later: on a cluster every request takes
    time, so the loop moves the clock and heals; at zero latency it would starve the catch-up timer for ever."""
    seen: dict[str, float] = {}

    async def loop(world: h.World, *, latency: float) -> None:
        api = APIServer(world, request_latency=latency)
        caught_up = {"v": False}

        def catch_up() -> None:
            caught_up["v"] = True
            seen["caught_up_at"] = world.now

        world.call_later(0.05, catch_up, label="the stale view catches up")

        async def operator() -> None:  # re-creates what it believes is missing
            while not caught_up["v"]:
                try:
                    await api.create(KubeObject(kind="ConfigMap", namespace="default", name="cfg"))
                except AlreadyExists:
                    pass

        async def collector() -> None:  # deletes what it believes is orphaned
            while not caught_up["v"]:
                try:
                    await api.delete("ConfigMap", "default", "cfg")
                except NotFound:
                    pass

        world.spawn("operator", operator)
        world.spawn("gc", collector)

    healed = run_once(loop, ReplayChooser([]), params={"latency": 0.001})
    assert healed.violation is None, healed.violation
    assert seen["caught_up_at"] == pytest.approx(0.05)
    assert 0.05 <= healed.end_time < 0.06  # the clock moved by the requests' latency, not in one jump
    starved = run_once(loop, ReplayChooser([]), params={"latency": 0.0})
    assert starved.violation is not None and starved.violation.kind == "livelock"
