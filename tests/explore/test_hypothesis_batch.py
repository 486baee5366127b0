"""The Hypothesis strategy: many examples in one ``trio.run``, the same runs for the same seed, clean stops.

Hypothesis runs in a worker thread and hands each drawn plan to ``run_batch`` on
the main thread (``harness/explore/_hypothesis.py``, ``_Handoff``). These tests
pin what that must not change: one ``trio.run`` for a whole search, the same
sequence of plans in any process, a stop between two runs that loses nothing,
and errors that surface where they did.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import trio

import harness as h
from harness import _interrupt
from harness.sim import Hold, World, run_once
from tests import toys

_hyp = importlib.import_module("harness.explore._hypothesis")  # harness.explore is also a function's name
ROOT = Path(__file__).resolve().parents[2]
_RUNS: dict[str, int] = {}


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hypothesis plans"]


@h.scenario
async def counted(
    world: World, *, fixed: bool = False, token: str = "", stop_at: int = 0, signal_at: int = 0, raise_at: int = 0
) -> None:
    """``toys.order_violation``, counting its runs; at a chosen run it asks to stop, sends SIGINT, or raises."""
    n = _RUNS[token] = _RUNS.get(token, 0) + 1
    if n == stop_at:
        _interrupt.request_stop()  # what the first Ctrl-C does under the CLI
    if n == signal_at:
        signal.raise_signal(signal.SIGINT)
    if n == raise_at:
        raise SystemExit(3)
    await toys.order_violation(world, fixed=fixed)


# ------------------------------------------------------------ one trio.run
@pytest.fixture
def trio_runs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every ``trio.run`` call of the test, by its entry function."""
    calls: list[object] = []
    real = trio.run

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(trio, "run", counting)
    return calls


def test_a_search_runs_all_its_examples_in_one_trio_run(trio_runs: list[object]) -> None:
    calls = trio_runs
    result = h.explore(toys.order_violation, strategy="hypothesis", budget=300, fixed=True)
    assert result.verdict == "none-found" and result.runs == 300  # the runs budget, exactly
    assert len(calls) == 2  # the canonical run, then 299 examples in one
    assert not _workers()


def test_seconds_budget_runs_chunks_of_examples_each_in_one_trio_run(
    trio_runs: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    from .test_explore import ticking

    ticking(monkeypatch, 0.001)  # a clock that moves per read: the run count no longer depends on the machine
    calls = trio_runs
    result = h.explore(toys.order_violation, strategy="hypothesis", budget=h.Budget(runs=None, seconds=0.5), fixed=True)
    assert result.verdict == "none-found" and result.runs > 1
    assert len(calls) <= 2 + (result.runs - 1) // _hyp._CHUNK  # the canonical run, then one per chunk
    assert not _workers()


# ------------------------------------------------------------- determinism
def _plans(monkeypatch: pytest.MonkeyPatch, scenario: Any, seed: int, budget: int, **params: Any) -> tuple[list[Any], Any]:
    seen: list[Any] = []
    real = _hyp._Pools.plan

    def plan(self: Any, raw: bytes) -> Any:
        out = real(self, raw)
        seen.append([e.to_json() for e in out])
        return out

    monkeypatch.setattr(_hyp._Pools, "plan", plan)
    result = h.explore(scenario, strategy="hypothesis", budget=budget, seed=seed, prove_minimal=False, **params)
    monkeypatch.undo()
    return seen, result


_IN_ANOTHER_PROCESS = """
import hashlib, importlib, json, sys
import harness as h
from tests import toys
hyp = importlib.import_module("harness.explore._hypothesis")
seen = []
real = hyp._Pools.plan
def plan(self, raw):
    out = real(self, raw)
    seen.append([e.to_json() for e in out])
    return out
hyp._Pools.plan = plan
fixed = sys.argv[3] == "fixed"
r = h.explore(getattr(toys, sys.argv[1]), strategy="hypothesis", budget=int(sys.argv[2]), seed=5, prove_minimal=False,
              fixed=fixed)
print(hashlib.sha256(json.dumps(seen).encode()).hexdigest(), r.first_found_run,
      r.counterexample.digest() if r.counterexample else None)
"""


def _digest(plans: list[Any]) -> str:
    return hashlib.sha256(json.dumps(plans).encode()).hexdigest()


@pytest.mark.parametrize(("toy", "variant", "budget"), [("order_violation", "fixed", 300), ("lost_update", "buggy", 3000)])
def test_same_seed_same_runs_in_another_process_and_hash_seed(
    monkeypatch: pytest.MonkeyPatch, toy: str, variant: str, budget: int
) -> None:
    # This process has imported far more modules than the child: Hypothesis would mix other
    # constants from their source into integer draws; a byte string draw takes none of them.
    plans, here = _plans(monkeypatch, getattr(toys, toy), 5, budget, fixed=variant == "fixed")
    assert len(plans) >= 2
    env = dict(os.environ, PYTHONHASHSEED="4242")
    out = subprocess.run(
        [sys.executable, "-c", _IN_ANOTHER_PROCESS, toy, str(budget), variant],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )
    digest, first, cx = out.stdout.split()
    assert digest == _digest(plans)
    assert first == str(here.first_found_run)
    assert cx == str(here.counterexample.digest() if here.counterexample else None)


def test_same_seed_same_runs_different_seed_other_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    a, ra = _plans(monkeypatch, toys.DepositMachine.scenario, 3, 400)
    b, rb = _plans(monkeypatch, toys.DepositMachine.scenario, 3, 400)
    c, _ = _plans(monkeypatch, toys.DepositMachine.scenario, 4, 400)
    assert a == b and ra.first_found_run == rb.first_found_run
    assert ra.counterexample is not None and rb.counterexample is not None
    assert ra.counterexample.digest() == rb.counterexample.digest()
    assert a != c


def test_a_search_runs_inside_a_users_own_hypothesis_test() -> None:
    # Hypothesis keeps "inside a test" per thread: the search's @given, built on the worker, is not nested in this one
    from hypothesis import given, settings
    from hypothesis import strategies as st

    found: list[bool] = []

    @settings(max_examples=3, database=None, deadline=None)
    @given(st.integers(0, 3))
    def outer(seed: int) -> None:
        found.append(h.explore(toys.lost_update, strategy="hypothesis", budget=50, seed=seed).found)

    outer()
    assert len(found) >= 3 and all(found)


# ---------------------------------------------------------------- stopping
def test_a_stop_request_ends_the_search_after_that_run(monkeypatch: pytest.MonkeyPatch) -> None:
    with _interrupt.sigint_requests_stop():
        result = h.explore(counted, strategy="hypothesis", budget=500, fixed=True, token="stop", stop_at=40)
    assert result.verdict == "interrupted" and result.runs == 40  # the 40th run ended, no 41st began
    assert _RUNS["stop"] == 40
    assert not _workers()


def test_ctrl_c_inside_a_run_ends_the_search_as_interrupted() -> None:
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's default handler here")
    result = h.explore(counted, strategy="hypothesis", budget=500, fixed=True, token="sigint", signal_at=25)
    assert result.verdict == "interrupted" and result.runs == 25
    assert _RUNS["sigint"] == 25
    assert not _workers()


def test_ctrl_c_in_the_shrink_keeps_what_hypothesis_found() -> None:
    first = h.explore(counted, strategy="hypothesis", budget=3000, seed=2, token="calibrate", prove_minimal=False)
    assert first.first_found_run is not None and first.first_found_run > 2
    at = first.first_found_run + 2  # inside the shrink
    with _interrupt.sigint_requests_stop():
        result = h.explore(counted, strategy="hypothesis", budget=3000, seed=2, token="shrink", stop_at=at)
    assert result.verdict == "interrupted" and result.counterexample is not None
    assert result.first_found_run == first.first_found_run
    assert result.counterexample.proof == "not proved minimal (interrupted)"
    assert not _workers()


def test_hunt_interrupted_during_a_hypothesis_search_exits_130(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "hunt", f"{Path(__file__).resolve()}:counted", "--variant", "fixed",
         "--strategy", "hypothesis", "--budget", "500", "--json", "--param", "signal_at=30",
         "--report-dir", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 130, proc.stderr
    line, session = proc.stdout.splitlines()  # the search's row, then the cut session's own line
    rec = json.loads(line)
    assert rec["verdict"] == "interrupted" and rec["runs"] == 30
    assert json.loads(session)["session"] == "interrupted"
    assert "Traceback" not in proc.stderr


def test_an_exception_out_of_a_run_surfaces_and_the_worker_ends() -> None:
    with pytest.raises(SystemExit) as info:
        h.explore(counted, strategy="hypothesis", budget=500, fixed=True, token="raise", raise_at=12)
    assert info.value.code == 3
    assert _RUNS["raise"] == 12
    assert not _workers()


def test_an_error_in_the_plan_drawing_surfaces(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = [0]
    real = _hyp._Pools.plan

    def plan(self: Any, raw: bytes) -> Any:
        calls[0] += 1
        if calls[0] >= 7:
            raise RuntimeError("a bug in the plan spelling")
        return real(self, raw)

    monkeypatch.setattr(_hyp._Pools, "plan", plan)
    with pytest.raises(RuntimeError, match="a bug in the plan spelling"):
        h.explore(toys.order_violation, strategy="hypothesis", budget=500, fixed=True)
    assert not _workers()


def test_a_halt_ends_a_hypothesis_search_at_once_and_is_never_replayed() -> None:
    # _Halt relies on Hypothesis re-raising a BaseException that is not an Exception (as it
    # does KeyboardInterrupt) without replaying it. Should that change, this fails first; the
    # search would stay correct (every call after a halt raises it again), one call dearer.
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    calls: list[bytes] = []

    @settings(max_examples=100, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.binary(min_size=1))
    def search(raw: bytes) -> None:
        calls.append(raw)
        if len(calls) >= 3:
            raise _hyp._Halt

    with pytest.raises(_hyp._Halt):
        search()
    assert len(calls) == 3


# ------------------------------------------------------------ what is drawn
def test_log_index_spans_the_range_and_favours_the_start() -> None:
    for n in (1, 2, 3, 50, 4000):
        picks = [_hyp._log_index(n, b) for b in range(256)]
        assert min(picks) == 0 and max(picks) == n - 1
        assert picks.count(0) >= max(picks.count(i) for i in range(n))


async def _timer_race(world: World, *, fixed: bool = False) -> None:
    """A delivery that goes wrong only when it comes right after a later timer, before that instant's check."""
    log: list[str] = []

    async def deliver() -> None:
        await world.step("deliver", key="obj", window=2.0)
        log.append("deliver")

    async def poll() -> None:
        await world.sleep(1.0, "wait a second")
        log.append("timer")
        await world.step("check", key="obj")
        log.append("check")

    world.spawn("informer", deliver)
    world.spawn("poller", poll)
    world.at_end(lambda: fixed or log != ["timer", "deliver", "check"] or "delivered between timer and check",
                 "no delivery between timer and check")


def test_holds_end_at_a_later_instant_or_inside_the_window() -> None:
    chooser = _hyp._PlanRun()
    out = run_once(_timer_race, chooser)
    assert out.violation is None
    pools = _hyp._Pools(chooser)
    base = pools.bases[0]
    deliver = next(i for i in base.held if i.label == "deliver")
    nominal, latest = base.windows[deliver]
    assert latest - nominal == pytest.approx(2.0)
    at = base.until(deliver, 1, 128)
    assert isinstance(at, float) and nominal < at < latest
    leader = base.until(deliver, 3, 0)  # the first action of the next instant: the timer's step
    assert leader is not None and not isinstance(leader, float) and leader.actor == "poller"
    assert run_once(_timer_race, _hyp._PlanRun((Hold(deliver, leader),))).violation is not None
