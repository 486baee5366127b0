"""Issue 29 item 1 and issue 26 items 1-2: a broken model is never the race found, a control can be declared,
and what was searched (parameters, time to find apart from shrink and proof) is printed everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import LOST_UPDATE, assert_one_clean_error, json_lines, run_cli, run_main

MODELS = '''
import harness as h


@h.scenario
async def setup_breaks(world: h.World, *, fixed: bool = False, delay: float = 1.0) -> None:
    """The scenario's own setup raises: the model never ran."""
    async def worker() -> None:
        await world.step("work")

    world.spawn("ctrl", worker)
    await world.step("create the cluster")
    world.call_later(delay + "s", lambda: None)  # TypeError: the model is broken, not the controller


@h.scenario
async def panics_in_both(world: h.World, *, fixed: bool = False) -> None:
    """A controller raises whatever the variant: the fix does not change it."""
    cache: dict[str, int] = {}

    async def controller() -> None:
        await world.step("reconcile")
        cache["missing"] += 1  # KeyError in both variants

    world.spawn("ctrl", controller)


@h.scenario
async def counter(world: h.World, *, fixed: bool = False, concurrent: bool = True) -> None:
    """A lost update when two writers overlap (buggy: no lock); ``concurrent=false`` switches the trigger off."""
    store = {"x": 0}
    lock = world.Lock()

    async def increment() -> None:
        if fixed:
            await lock.acquire()
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1
        if fixed:
            lock.release()

    async def both() -> None:
        await increment()
        await increment()

    if concurrent:
        world.spawn("a", increment)
        world.spawn("b", increment)
    else:
        world.spawn("a", both)  # one writer after the other: nothing to race
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']}, expected 2", "no lost update")


@h.scenario
async def waits_in_both(world: h.World, *, fixed: bool = False) -> None:
    """A controller waits on an event nothing sets, identically in both variants."""
    ready = world.Event()

    async def controller() -> None:
        await world.step("reconcile")
        await ready.wait()

    world.spawn("ctrl", controller)


@h.scenario
async def panics_when_buggy(world: h.World, *, fixed: bool = False) -> None:
    """A controller panics on a nil map only in the buggy variant: a panic is a bug, found as an exception."""
    cache: dict[str, int] = {}

    async def controller() -> None:
        await world.step("reconcile")
        if not fixed:
            cache["missing"] += 1

    world.spawn("ctrl", controller)
'''


@pytest.fixture
def models(tmp_path: Path) -> Path:
    (tmp_path / "models.py").write_text(MODELS)
    (tmp_path / "model.py").write_text(LOST_UPDATE)
    return tmp_path


def test_bad_param_type_is_a_usage_error(models: Path) -> None:
    cases = [
        ("volcano_gang_close", "delete_at=abc", "delete_at takes a number"),
        ("model.py:lost_update", "fixed=maybe", "fixed takes true or false"),
        ("model.py:lost_update", "warm=1.5", "warm takes a whole number"),
        ("model.py:lost_update", "wram=1", "it takes: fixed, warm"),
    ]
    for target, param, words in cases:
        argv = ["hunt", target, "--param", param, "--report-dir", "out"]
        if target == "volcano_gang_close":
            argv[2:2] = ["--variant", "buggy"]
        proc = run_cli(*argv, cwd=models)
        assert proc.returncode == 2, (param, proc.stdout, proc.stderr)
        assert_one_clean_error(proc.stderr, words)
        assert not (models / "out").exists()  # refused before anything ran or was written
    # what fits is taken: a str parameter gets the text as typed, true/false any case for a bool
    from harness.explore._params import check_params

    async def fn(world: object, *, name: str = "x", on: bool = False, at: float | None = None) -> None: ...

    assert check_params(fn, {"name": 3, "on": "TRUE", "at": None}, "fn", {"name": "3", "on": "TRUE", "at": "null"}) \
        == {"name": "3", "on": True, "at": None}


def test_scenario_setup_exception_is_a_model_error_not_found(models: Path) -> None:
    proc = run_cli("hunt", "models.py:setup_breaks", "--variant", "buggy", "--report-dir", "out", cwd=models)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[MODEL ERROR]" in proc.stdout and "[ok]" not in proc.stdout
    assert "model error: the scenario raised TypeError at" in proc.stdout and "models.py:" in proc.stdout
    proc = run_cli("hunt", "models.py:setup_breaks", "--variant", "buggy", "--json", "--report-dir", "out", cwd=models)
    [rec] = json_lines(proc.stdout)
    assert proc.returncode == 1
    assert rec["verdict"] == "model-error" and rec["found"] is False and rec["expected"] is False
    assert rec["model_error"].startswith("model error: the scenario raised TypeError at")
    # a scenario hunted as is (no promise) is not "clean" either: a broken model fails
    proc = run_cli("hunt", "models.py:setup_breaks", "--report-dir", "out", cwd=models)
    assert proc.returncode == 1 and "[MODEL ERROR]" in proc.stdout


def test_same_exception_in_both_variants_is_a_model_error(models: Path) -> None:
    proc = run_cli("hunt", "models.py:panics_in_both", "--variant", "buggy", "--json", "--report-dir", "out",
                   cwd=models)
    [rec] = json_lines(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert rec["verdict"] == "model-error" and rec["expected"] is False
    assert "model error: both variants raise KeyError at" in rec["model_error"] and "'ctrl'" in rec["model_error"]
    # the control: an exception only the buggy variant raises is a finding, labelled as an exception
    proc = run_cli("hunt", "models.py:panics_when_buggy", "--variant", "both", "--report-dir", "out", cwd=models)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[ok] models.py:panics_when_buggy (buggy): " in proc.stdout and "actor raised" in proc.stdout
    assert "found (exception)" in proc.stdout


def test_expect_clean_exits_zero_for_a_clean_control(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A negative control: the buggy variant with its trigger switched off promises to stay clean, and exits 0."""
    out_dir = str(models / "out")
    target = f"{models}/models.py:counter"
    control = ["hunt", target, "--variant", "buggy", "--param", "concurrent=false", "--report-dir", out_dir]
    code, out, err = run_main(capsys, *control, "--expect", "clean")
    assert code == 0, out + err
    line = next(x for x in out.splitlines() if x.startswith("["))
    assert line.startswith("[ok] ") and "counter [concurrent=false] (buggy): " in line and "clean (not a proof)" in line
    # without --expect, --variant buggy promises a violation: the same clean search is not as promised
    code, out, _ = run_main(capsys, *control)
    assert code == 1 and "[UNEXPECTED]" in out
    # the positive control still finds it; --expect clean there is a failed promise, said in the JSON row
    code, out, _ = run_main(capsys, "hunt", target, "--variant", "buggy", "--expect", "clean", "--json",
                            "--report-dir", out_dir)
    [rec] = json_lines(out)
    assert code == 1 and rec["expect"] == "clean" and rec["found"] is True and rec["expected"] is False
    # --param fixed=true with --expect clean: --variant is not needed to declare a promise
    code, out, _ = run_main(capsys, "hunt", target, "--param", "fixed=true", "--expect", "clean", "--json",
                            "--report-dir", out_dir)
    [rec] = json_lines(out)
    assert code == 0 and rec["expected"] is True and rec["params"] == {"fixed": True}


def test_params_are_printed_everywhere(
    models: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(models)
    out_dir = models / "out"
    argv = ["hunt", "model.py:lost_update", "--variant", "buggy", "--param", "warm=2", "--report-dir", "out"]
    code, out, _ = run_main(capsys, *argv)
    assert code == 0
    summary = next(line for line in out.splitlines() if line.startswith("[ok]"))
    assert "lost_update [warm=2] (buggy):" in summary
    table = [line for line in out.splitlines() if "│" in line and "lost_update" in line]
    assert table and "[warm=2]" in table[0]
    code, out, _ = run_main(capsys, *argv, "--json")
    [rec] = json_lines(out)
    assert rec["params"] == {"warm": 2}
    index = (out_dir / "index.html").read_text()
    assert "warm=2" in index
    page = (models / rec["report"]).read_text()
    assert "warm=2" in page
    assert json.loads((models / rec["trace"]).read_text())["params"]["warm"] == 2


def test_json_separates_found_at_from_shrink_and_proof(models: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "hunt", f"{models}/model.py:lost_update", "--variant", "buggy", "--strategy",
                            "random", "--json", "--report-dir", str(models / "out"))
    [rec] = json_lines(out)
    assert code == 0 and rec["found"]
    assert 1 <= rec["found_at_run"] <= rec["runs"]
    assert 0 <= rec["found_after_s"] <= rec["seconds"]
    assert rec["shrink_runs"] >= 1 and rec["proof_runs"] >= 1  # a random walk's run is shrunk, then proved minimal
    assert rec["found_at_run"] + rec["shrink_runs"] + rec["proof_runs"] == rec["runs"]
    assert rec["seed"] == 0 and rec["found_by"] == "random"  # which seed, and which strategy's run first failed
    code, out, _ = run_main(capsys, "hunt", f"{models}/model.py:lost_update", "--variant", "buggy", "--strategy",
                            "random", "--report-dir", str(models / "out"))
    head = next(line for line in out.splitlines() if "found at run" in line)
    assert "shrink" in head and "proof" in head
    # a clean search has no time to find
    code, out, _ = run_main(capsys, "hunt", f"{models}/model.py:lost_update", "--variant", "fixed", "--json",
                            "--report-dir", str(models / "out"))
    [rec] = json_lines(out)
    assert rec["found_at_run"] is None and rec["shrink_runs"] is None and rec["proof_runs"] is None


def test_live_crash_is_a_model_error(models: Path) -> None:
    """Live mode: the scenario's own code raising is an error of the model (exit 1, where it raised), never the
    race found, whichever variant promised a failure."""
    for variant in ("buggy", "fixed"):
        done = run_cli("live", "models.py:setup_breaks", "--variant", variant, "--runs", "2", "--time-scale", "0.001",
                       cwd=models)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "model error on live run 1: the scenario raised TypeError at " in done.stdout, done.stdout
        assert "models.py:13 in setup_breaks" in done.stdout and "Traceback" not in done.stderr
        js = run_cli("live", "models.py:setup_breaks", "--variant", variant, "--runs", "1", "--time-scale", "0.001",
                     "--json", cwd=models)
        [row] = json_lines(js.stdout)
        assert js.returncode == 1 and row["found"] is False and row["expected"] is False
        assert row["model_error"].startswith("the scenario raised TypeError at ")
        assert "models.py:13 in setup_breaks" in row["model_error"]


def test_same_failure_in_both_variants_is_one_verdict(models: Path) -> None:
    """Issue 52, item 4: a hang both variants show alike is a model error in every row, and searched alone too."""
    for variant in ("both", "fixed", "buggy"):
        proc = run_cli("hunt", "models.py:waits_in_both", "--variant", variant, "--json", "--report-dir", "out",
                       cwd=models)
        recs = json_lines(proc.stdout)
        assert proc.returncode == 1, (variant, proc.stdout, proc.stderr)
        assert recs and all(r["verdict"] == "model-error" and r["found"] is False for r in recs), (variant, recs)
        assert all("both variants deadlock the same way" in r["model_error"] for r in recs)
    # the same for an exception: the fixed variant searched alone is a model error, never "found UNEXPECTED"
    proc = run_cli("hunt", "models.py:panics_in_both", "--variant", "fixed", "--report-dir", "out", cwd=models)
    assert proc.returncode == 1 and "[MODEL ERROR]" in proc.stdout and "UNEXPECTED]" not in proc.stdout
    # the control: a failure of the fixed variant alone stays the fixed variant's finding
    proc = run_cli("hunt", "models.py:counter", "--variant", "fixed", "--param", "concurrent=true", "--json",
                   "--report-dir", "out", cwd=models)
    [rec] = json_lines(proc.stdout)
    assert rec["verdict"] != "model-error"


def test_model_error_page_says_model_error(models: Path) -> None:
    """Issue 52, item 3: the page of a model error says what the terminal and the index say, and blames the
    actor that waits at the line it waits on, not the step it ran last."""
    proc = run_cli("hunt", "models.py:waits_in_both", "--variant", "both", "--json", "--report-dir", "out",
                   cwd=models)
    recs = json_lines(proc.stdout)
    page = Path(models / recs[0]["report"]).read_text() if not Path(recs[0]["report"]).is_absolute() \
        else Path(recs[0]["report"]).read_text()
    bar = page[page.index('<span class="pill bad">'):].split("</span>")[0]
    assert "model error (not the race)" in bar
    assert "Model error (not the race)" in page and "Deadlock: deadlock" not in page
    assert "both variants deadlock the same way" in page  # the CLI's own line and remedy
    assert "load or logic bug" not in page and "while doing" not in page
    assert "waits for <span class=\"q\">wait for event</span>" in page and "models.py:" in page
    # and a replay's page of the saved trace says so too (the hunt kept it in the trace)
    saved = json.loads(Path(models / recs[0]["trace"] if not Path(recs[0]["trace"]).is_absolute()
                            else recs[0]["trace"]).read_text())
    assert saved["meta"]["model_error"].startswith("model error: both variants deadlock")
