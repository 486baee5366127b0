"""Issue 12, items 1 and 2: Ctrl-C anywhere in a hunt keeps what was found and exits 130.

In-process tests interrupt at a chosen execution (``interrupting.py`` raises
SIGINT in its own process, which is what Ctrl-C does); the subprocess tests send
real SIGINTs at instants spread over a whole hunt of a documented race.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import interrupting
import pytest
from cli_support import ROOT, json_lines, run_cli, run_main, session_line

import harness as h
from harness.explore import Counterexample

FILE = Path(interrupting.__file__).resolve()
TOY = f"{FILE}:order_violation"
SWITCHES = f"{FILE}:two_switches"


def _calibrate(token: str, scenario: object = interrupting.order_violation) -> tuple[int, int]:
    """(runs of the search, runs in all) of the toy's hunt, counted by the toy itself."""
    calls: list[int] = []
    result = h.explore(
        scenario, strategy="random", budget=3000, seed=2, token=token,  # type: ignore[arg-type]
        progress=lambda n, f: calls.append(n),
    )
    assert result.runs == interrupting.executions(token)
    return len(calls), result.runs


def test_item1_ctrl_c_during_the_minimality_proof_keeps_the_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two_switches needs 2 plan entries, so its proof runs the canonical run and then every 1-entry plan
    search, total = _calibrate("calibrate-proof", interrupting.two_switches)
    assert total > search + 10, "the toy's hunt has a proof with more than one run to interrupt"
    at = search + 3  # inside the proof's 1-entry level
    code, out, err = run_main(
        capsys, "hunt", SWITCHES, "--strategy", "random", "--budget", "3000", "--seed", "2", "--json",
        "--param", f"interrupt_at={at}", "--param", "token=proof", "--report-dir", str(tmp_path),
    )
    assert code == 130, err
    [rec] = json_lines(out)
    assert rec["verdict"] == "interrupted" and rec["found"] is True and rec["proved_minimal"] is not True
    assert "interrupted: kept 1 counterexample (" in err and "), not proved minimal (interrupted); the index" in err
    # the first Ctrl-C is answered at once, then the one line of what was kept
    assert "Traceback" not in err and err.strip().splitlines()[0].startswith("stopping: waiting for the current run")
    assert len(err.strip().splitlines()) == 2
    saved = json.loads(Path(rec["trace"]).read_text())
    assert saved["meta"]["minimality"] == "not proved minimal (interrupted)" and saved["proved_minimal"] is None
    assert (tmp_path / "index.html").is_file()
    again = Counterexample.load(rec["trace"]).replay()  # the saved trace replays to the same violation
    assert again.violation is not None and again.violation.name == saved["violation"]["name"]
    assert again.trace.digest() == saved["digest"]


def test_item2_an_interrupted_hunt_never_exits_0_nor_says_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(
        capsys, "hunt", TOY, "--variant", "fixed", "--strategy", "random", "--budget", "300",
        "--param", "interrupt_at=5", "--param", "token=fixed", "--report-dir", str(tmp_path),
    )
    assert code == 130
    assert "[interrupted]" in out and "[ok]" not in out
    assert "interrupted: kept 0 counterexamples; the index of 1 search of 1 is" in err
    assert (tmp_path / "index.html").is_file()


def test_ctrl_c_in_the_search_skips_the_remaining_searches_and_lists_what_ran(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = h.explore(interrupting.order_violation, strategy="random", budget=3000, seed=2, token="calibrate-first")
    assert first.first_found_run is not None and first.first_found_run > 3
    code, out, err = run_main(
        capsys, "hunt", TOY, "--variant", "both", "--strategy", "random", "--budget", "3000", "--seed", "2",
        "--json", "--param", "token=both", "--param", "interrupt_at=2", "--report-dir", str(tmp_path),
    )
    # the buggy search stops before its failing run; the fixed one never starts
    assert code == 130
    [rec] = json_lines(out)
    assert rec["variant"] == "buggy" and rec["verdict"] == "interrupted" and rec["found"] is False
    assert "interrupted: kept 0 counterexamples; the index of 1 search of 2 is" in err


def test_interrupted_index_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52, item 2: a cut session's index never shows "all as promised"; it and --json say how far it got."""
    code, out, _ = run_main(
        capsys, "hunt", TOY, "--variant", "both", "--strategy", "random", "--budget", "3000", "--seed", "2",
        "--json", "--param", "token=index", "--param", "interrupt_at=2", "--report-dir", str(tmp_path),
    )
    assert code == 130
    page = (tmp_path / "index.html").read_text()
    assert "all as promised" not in page
    assert "interrupted after 1 of 2 searches" in page
    session = session_line(out)
    assert session is not None and session["session"] == "interrupted"
    assert (session["searches"], session["planned"]) == (1, 2)
    assert session["outcome"] == "interrupted after 1 of 2 searches"
    # the same hunt run whole says nothing of the kind
    whole = tmp_path / "whole"
    code, out, _ = run_main(
        capsys, "hunt", TOY, "--variant", "both", "--strategy", "random", "--budget", "3000", "--seed", "2",
        "--json", "--param", "token=index-whole", "--report-dir", str(whole),
    )
    assert code == 0 and session_line(out) is None
    assert "all as promised" in (whole / "index.html").read_text()


def _spawn(report_dir: Path, variant: str = "buggy", *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "hunt", "volcano_deleted_jobs", "--variant", variant, "--json",
         "--report-dir", str(report_dir), *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a child")
def test_a_second_ctrl_c_stops_at_once_and_leaves_no_half_written_file(tmp_path: Path) -> None:
    proc = _spawn(tmp_path, "both", "--budget", "8s")
    time.sleep(1.2)  # in the buggy search, its shrink, or the fixed variant's 8 s search (the buggy hunt alone
    # can end in under a second)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.005)  # before the first one's run, save and index are done
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    # Two real signals 5 ms apart race the first one's own wind-down (on a loaded machine it can
    # finish in between): either way the exit is 130, with one plain line and no torn file.
    assert "Traceback" not in err
    assert "interrupted again: stopped at once" in err or "interrupted: kept" in err, err
    for trace in tmp_path.glob("*.json"):
        Counterexample.load(trace)  # complete, or not there at all


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to itself")
def test_a_second_ctrl_c_after_the_first_is_answered_exits_130_at_once_with_its_line() -> None:
    """The at-once path, without the race of two real signals against the first one's wind-down.

    The process sends itself both signals; the first is answered (a stop request)
    before the second arrives, so the second must end it at once, mid-work.
    """
    code = (
        "import os, signal, time\n"
        "from harness import _interrupt\n"
        "with _interrupt.sigint_requests_stop(lambda: 'interrupted again: stopped at once; kept 1 counterexample'):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    assert _interrupt.stop_requested()\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(10)\n"
        "print('not reached')\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stdout == "" and time.monotonic() - started < 10
    assert done.stderr == ("stopping: waiting for the current run to end (Ctrl-C again stops at once)\n"
                           "interrupted again: stopped at once; kept 1 counterexample\n")


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a child")
def test_sigint_at_a_dozen_instants_of_a_buggy_hunt_always_keeps_what_was_found(tmp_path: Path) -> None:
    # the buggy variant (search, shrink, proof, report), then the fixed one (a search that finds nothing)
    started = time.monotonic()
    # a seconds budget: the buggy search stops at its finding, the fixed one searches 8 s to interrupt
    full = _spawn(tmp_path / "full", "both", "--budget", "8s")
    out, err = full.communicate(timeout=600)
    whole = time.monotonic() - started
    assert full.returncode == 0, err
    reference, _ = json_lines(out)
    oracle = json.loads(Path(reference["trace"]).read_text())["violation"]["name"]

    # 14 instants from after start-up to near the end
    instants = [0.6 + i * (0.9 * whole - 0.6) / 13 for i in range(14)]
    interrupted = found_before = in_fixed_search = 0
    seen: list[tuple[float, int | None, bool]] = []  # (instant, exit code, found before it)
    for i, at in enumerate(instants):
        folder = tmp_path / f"at{i}"
        proc = _spawn(folder, "both", "--budget", "8s")
        time.sleep(at)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=600)
        seen.append((round(at, 2), proc.returncode, any(r["found"] for r in json_lines(out))))
        if proc.returncode == 0:
            continue  # it had finished (a slow start, a fast machine): nothing to interrupt
        interrupted += 1
        recs = json_lines(out)
        in_fixed_search += len(recs) == 2 and recs[1]["verdict"] == "interrupted"
        assert proc.returncode == 130, (at, err)
        assert "interrupted" in err and "Traceback" not in err, (at, err)
        for rec in recs:
            if rec["found"]:
                found_before += 1
                replay = run_cli("replay", rec["trace"], "--json")
                assert replay.returncode == 0, (at, replay.stderr)
                saved = json.loads(Path(rec["trace"]).read_text())
                assert saved["violation"]["name"] == oracle
                assert json.loads(replay.stdout)["digest"] == saved["digest"]
                assert (folder / "index.html").is_file()
    assert interrupted >= 10, (whole, seen)
    assert found_before >= 2, (whole, seen)  # instants after the violation was found: shrink, proof, report
    assert in_fixed_search >= 2, (whole, seen)  # and instants in a search


def test_sigterm_keeps_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 30 item 4: SIGTERM (timeout, kill, a cancelled CI job) is handled like Ctrl-C, with exit 143."""
    search, _ = _calibrate("calibrate-term", interrupting.two_switches)
    code, out, err = run_main(
        capsys, "hunt", SWITCHES, "--strategy", "random", "--budget", "3000", "--seed", "2", "--json",
        "--param", f"interrupt_at={search + 3}", "--param", "token=term", "--param", "sig=SIGTERM",
        "--report-dir", str(tmp_path),
    )
    assert code == 143, err
    [rec] = json_lines(out)  # the JSON line is printed
    assert rec["verdict"] == "interrupted" and rec["found"] is True
    assert "interrupted by SIGTERM: kept 1 counterexample (" in err and "Traceback" not in err
    assert Path(rec["trace"]).is_file() and (tmp_path / "index.html").is_file()
    # the table too, without --json
    code, out, err = run_main(
        capsys, "hunt", SWITCHES, "--strategy", "random", "--budget", "3000", "--seed", "2",
        "--param", f"interrupt_at={search + 3}", "--param", "token=term-table", "--param", "sig=SIGTERM",
        "--report-dir", str(tmp_path),
    )
    assert code == 143 and "[interrupted]" in out and "┃ race" in out


def test_sigterm_from_outside_keeps_findings(tmp_path: Path) -> None:
    """A real SIGTERM from another process, as `timeout` sends it, in the middle of a hunt of a documented race."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "hunt", "volcano_gang_close", "--variant", "fixed", "--strategy", "random",
         "--budget", "100000", "--json", "--report-dir", str(tmp_path / "r")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "r").exists() and time.monotonic() < deadline:  # checked after the handler is in place
        time.sleep(0.05)
    time.sleep(1.0)  # inside the search
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    [rec] = json_lines(out)
    assert rec["verdict"] == "interrupted" and "Traceback" not in err
    assert (tmp_path / "r" / "index.html").is_file()


def test_ctrl_c_during_start_up_is_one_line_without_traceback(tmp_path: Path) -> None:
    """Issue 29 item 7: once the package starts importing, Ctrl-C exits 130 with one line, never a traceback from
    the imports. (Before the package's first line Python itself is starting: runpy and site print their own.)"""
    import ast

    init = ROOT / "harness" / "__init__.py"
    line = next(n.lineno for n in ast.parse(init.read_text()).body if not isinstance(n, ast.Expr))
    first_statement = f'File "{init}", line {line}, in <module>'
    for delay in (0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3):
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "hunt", "kruise_imagepulljob", "--variant", "buggy",
             "--report-dir", str(tmp_path / "r")],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)
        # A SIGINT that arrives while Python loads the package is raised at the package's first statement, before
        # any line of ours can install a handler: that one frame is the interpreter's, not the harness's code.
        ours = [line for line in err.splitlines() if "File " in line and "/harness/" in line
                and line.strip() != first_statement]
        assert not ours, (delay, err)  # no traceback through any module of the harness
        if "Traceback" not in err:
            assert proc.returncode in (0, 130, -signal.SIGINT), (delay, err)
            lines = err.strip().splitlines()
            if lines and lines[0].startswith("stopping: waiting for the current run"):  # answered at once
                lines = lines[1:]
            assert len(lines) <= 1, (delay, err)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pipe's reader going away is seen by poll")
def test_closed_pipe_stops_the_hunt(tmp_path: Path) -> None:
    """Issue 52, item 5: ``hunt | head -3`` stops when ``head`` exits, not after the whole hunt: the search in
    hand ends, the index is written and says how far the session got, and the exit status is a closed pipe's."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "hunt", "--report-dir", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    first = [proc.stdout.readline() for _ in range(3)]  # what `head -3` reads
    proc.stdout.close()  # ... and then `head` exits
    _, err = proc.communicate(timeout=300)
    assert all(first), first
    assert proc.returncode == 141, err
    assert "interrupted by a closed pipe: kept" in err and "Traceback" not in err, err
    page = (tmp_path / "index.html").read_text()
    m = re.search(r"interrupted after (\d+) of (\d+) searches", page)
    assert m is not None and int(m[1]) < int(m[2]), "the hunt stopped before its last search"


BUSY = '''
import os

import harness as h


@h.scenario
async def busy(world: h.World, *, flag: str = "") -> None:
    async def worker() -> None:
        await world.step("work")

    world.spawn("worker", worker)
    await world.step("set up")
    if flag:
        open(flag, "w").close()  # the test's sign that the loop has begun
    while True:  # a CPU loop: never reaches a yield point
        pass
'''


def test_cpu_loop_without_yield_is_a_model_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52, item 1: a model that never yields is a model error naming its actor and line, not a hang.
    The watchdog's clock is injected: each look says 4 s passed, so no test waits on the machine's speed."""
    from harness.sim import _watchdog

    (tmp_path / "busy.py").write_text(BUSY)
    ticks = iter(range(0, 10**9, 4))
    saved = (_watchdog.SETTINGS.clock, _watchdog.SETTINGS.bound)
    _watchdog.configure(clock=lambda: float(next(ticks)), bound=10.0)
    try:
        code, out, err = run_main(capsys, "hunt", f"{tmp_path / 'busy.py'}:busy", "--json", "--report-dir",
                                  str(tmp_path / "r"))
    finally:
        _watchdog.configure(clock=saved[0], bound=saved[1])
    assert code == 1, err
    [rec] = json_lines(out)
    assert rec["verdict"] == "model-error" and rec["found"] is False
    assert rec["model_error"].startswith("model error: main ran "), rec["model_error"]
    # the loop's own line (`while True:` or its `pass`), in the scenario's own function
    assert re.search(r"s without a yield point at \S*busy\.py:1[67] in busy: ", rec["model_error"]), rec["model_error"]
    # the run after it is unharmed: nothing of the watchdog lands later
    assert h.explore(interrupting.order_violation, strategy="random", budget=20, seed=2, token="after-busy").runs


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a child")
def test_first_sigint_answers_at_once(tmp_path: Path) -> None:
    """Issue 52, item 1: the first Ctrl-C is answered at once, and stops the hunt even inside a loop that never
    yields (the watchdog's bound is set far beyond the test's patience: only the stop can end this run)."""
    (tmp_path / "busy.py").write_text(BUSY)
    flag = tmp_path / "looping"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "hunt", f"{tmp_path / 'busy.py'}:busy", "--param", f"flag={flag}",
         "--yield-timeout", "3600", "--report-dir", str(tmp_path / "r")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    lines = err.strip().splitlines()
    assert lines[0] == "stopping: waiting for the current run to end (Ctrl-C again stops at once)", err
    assert proc.returncode == 130, err
    assert "interrupted: kept 0 counterexamples" in err and "Traceback" not in err, err
