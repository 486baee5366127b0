"""The exhaustive referee's shards: in process, batched, on a Dask cluster, with one verdict (issue 28).

The referee cuts each wave of plans into shards by a rule of the wave's length
alone and reads the shards' reports back in plan order, so wherever the shards
run -- a plain loop here, Dask tasks on two worker processes, futures that
complete in any order -- the verdict, the canonical minimum, the plans counted
and the reduction's skips are those of the in-process search. The cluster is a
real one (two processes on 127.0.0.1), and the killed worker is killed by SIGKILL.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness import _cluster
from harness._pool import SerialPool
from harness.explore import _exhaustive
from harness.explore._exhaustive import RefereeJob, _report, run_plans
from harness.sim import Limits, PlanChooser, RunOutcome, run_batch, run_once
from tests.toys import lost_update, slow_liveness

distributed = pytest.importorskip("distributed", reason="the cluster tests need pip install -e '.[test]' (dask)")


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """Two worker processes on 127.0.0.1, shared by this module's tests."""
    with _cluster.open_cluster(_cluster.ClusterSpec(None, 2)) as c:
        yield c


@pytest.fixture
def small_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    """One plan per shard: the toys' waves are small, and the point is many shards."""
    monkeypatch.setattr(_exhaustive, "MIN_SHARD_PLANS", 1)
    monkeypatch.setattr(_exhaustive, "MAX_SHARD_PLANS", 2)


def _same(a: h.Result, b: h.Result) -> None:
    assert (a.verdict, a.runs, a.skipped, a.proved_bound) == (b.verdict, b.runs, b.skipped, b.proved_bound)
    if a.counterexample is None:
        assert b.counterexample is None
    else:
        assert b.counterexample is not None
        assert a.counterexample.digest() == b.counterexample.digest()
        assert a.counterexample.plan == b.counterexample.plan
        assert a.counterexample.deviations == b.counterexample.deviations


CASES = [
    (lost_update, False, "exhaustive:2"),
    (lost_update, True, "exhaustive:2"),
    (slow_liveness, False, "exhaustive:2"),
    (slow_liveness, True, "exhaustive:2"),
    (lost_update, False, "exhaustive:1"),
]


@pytest.mark.parametrize(("scenario", "fixed", "strategy"), CASES)
def test_sharded_referee_keeps_verdict_minimum_and_plan_count(
    client: Any, small_shards: None, scenario: Any, fixed: bool, strategy: str
) -> None:
    here = h.explore(scenario, strategy=strategy, fixed=fixed)
    shards = _cluster.DaskShards(client)
    there = h.explore(scenario, strategy=strategy, fixed=fixed, shard_runner=shards)
    _same(here, there)
    assert here.verdict == ("proved-clean" if fixed and strategy.startswith("exhaustive") else "found")
    assert len(shards.costs) > 1, "the search was not cut into shards"
    assert sum(plans for _wave, plans, _s in shards.costs) >= there.runs - 1  # every counted plan ran on a worker


class _Later:
    """A future of :class:`_ReverseClient`: its shard runs when any future of the wave is first polled."""

    def __init__(self, owner: _ReverseClient, fn: Any, args: tuple[Any, ...]) -> None:
        self.owner, self.fn, self.args = owner, fn, args
        self.value: Any = None
        self.ran = False
        self.cancelled = False

    def done(self) -> bool:
        self.owner.finish_all()
        return True

    def result(self) -> Any:
        assert self.ran and not self.cancelled
        return self.value

    def cancel(self) -> None:
        self.cancelled = True


class _ReverseClient:
    """A stand-in for ``distributed.Client`` whose shards finish last first: the latest shard reports first."""

    def __init__(self) -> None:
        self.pending: list[_Later] = []
        #: per wave: the shard indexes in the order they finished, and which of them had an accepted plan
        self.finished: list[list[tuple[int, bool]]] = []

    def nthreads(self) -> dict[str, int]:
        return {"tcp://127.0.0.1:1": 1}  # one worker of one thread: the proof's budget is the in-process one

    def submit(self, fn: Any, *args: Any, pure: bool = True) -> _Later:
        fut = _Later(self, fn, args)
        self.pending.append(fut)
        return fut

    def finish_all(self) -> None:
        if not self.pending:
            return
        wave, self.pending = self.pending, []
        order = []
        for i in reversed(range(len(wave))):
            fut = wave[i]
            fut.value, fut.ran = fut.fn(*fut.args), True
            reports, _seconds = fut.value
            order.append((i, any(rep.accepted for rep, _had_run in reports)))
        self.finished.append(order)


async def in_order(world: h.World) -> None:
    """Three actors act once each; any reordering fails: several plans of level 1 fail, in different shards."""
    order: list[str] = []

    async def act(name: str) -> None:
        await world.step(f"{name} acts", key=name)
        order.append(name)

    for name in ("a", "b", "c"):
        world.spawn(name, act, name)
    world.at_end(lambda: order == ["a", "b", "c"] or f"they acted in the order {order}", "in order")


def test_later_shard_failure_does_not_win(small_shards: None) -> None:
    # the last shard of the wave finishes first and fails first; the first failing plan in the
    # referee's order still wins
    here = h.explore(in_order, strategy="exhaustive:1")
    fake = _ReverseClient()
    there = h.explore(in_order, strategy="exhaustive:1", shard_runner=_cluster.DaskShards(fake))
    _same(here, there)
    failing = [order for order in fake.finished if sum(acc for _i, acc in order) >= 2]
    assert failing, f"no wave had two failing shards: {fake.finished}"
    order = failing[0]
    first_failed = next(i for i, acc in order if acc)
    earliest_failing = min(i for i, acc in order if acc)
    assert first_failed > earliest_failing  # a later shard failed first ...
    assert here.counterexample is not None
    # ... and the minimum is the in-process one (checked by _same): the plan of the earliest failing shard


DIES_ONCE = '''
import os
import signal
from pathlib import Path

import harness as h
from tests.toys import lost_update


@h.scenario
async def dies_once(world: h.World, *, marker: str, client_pid: int, fixed: bool = False) -> None:
    """The toys' lost update, whose first run on a worker process kills that process."""
    m = Path(marker)
    if os.getpid() != client_pid and not m.exists():
        m.write_text("a worker was killed here")
        os.kill(os.getpid(), signal.SIGKILL)
    await lost_update(world, fixed=fixed)
'''


class _FlakyWorkerClient:
    """Shards run here in order; the first shard of two plans or more "fails" its first plan on the worker (as
    an OS process's timing can) and stops there, as a worker stops at an accepted plan: its re-run here passes."""

    def __init__(self) -> None:
        self.pool = SerialPool()
        self.flaked: list[Any] = []

    def nthreads(self) -> dict[str, int]:
        return self.pool.nthreads()

    def submit(self, fn: Any, *args: Any, pure: bool = False) -> Any:
        _ref, _job, plans = args

        def shard(*a: Any) -> Any:
            reports, seconds = fn(*a)
            if not self.flaked and len(plans) >= 2:
                self.flaked.append(plans[0])
                return [(reports[0][0], True)], seconds
            return reports, seconds

        return self.pool.submit(shard, *args, pure=pure)


def test_plan_failing_on_a_worker_only_runs_the_rest_of_its_shard() -> None:
    # before: the referee read 1 report of the shard's plans and raised "a shard runner reported 20 of 22
    # plans and no reason to stop" (a Go envtest suite's hunt in CI)
    here = h.explore(lost_update, strategy="exhaustive:2", fixed=True)
    fake = _FlakyWorkerClient()
    there = h.explore(lost_update, strategy="exhaustive:2", fixed=True, shard_runner=_cluster.DaskShards(fake))
    assert fake.flaked, "no shard of two plans: nothing was checked"
    _same(here, there)
    assert there.verdict == "proved-clean"


def test_killed_worker_costs_one_shard(client: Any, small_shards: None, tmp_path: Path) -> None:
    model = tmp_path / "dies_once.py"
    model.write_text(DIES_ONCE)
    from harness.explore import resolve_scenario

    scenario = resolve_scenario(f"{model}:dies_once")
    marker = tmp_path / "killed"
    params: dict[str, Any] = {"marker": str(marker), "client_pid": os.getpid(), "fixed": True}
    shards = _cluster.DaskShards(client)
    there = h.explore(scenario, strategy="exhaustive:2", shard_runner=shards, **params)
    assert marker.is_file(), "no worker was killed"
    here = h.explore(scenario, strategy="exhaustive:2", **params)
    _same(here, there)
    assert there.verdict == "proved-clean"
    client.wait_for_workers(2, timeout=60)  # Dask's nanny restarts the killed worker: the next tests keep two


def test_referee_batches_plans_with_same_digests() -> None:
    job = RefereeJob({"fixed": True}, Limits(), None, True, None, True)
    [root] = run_plans(lost_update, job, [()], lambda rep: True)
    plans = [p for rep in run_plans(lost_update, job, list(root.children), lambda rep: True) for p in rep.children]
    assert len(plans) > 5
    # the batch: one trio.run for every plan, each run's trace as run_once makes it
    batched: list[str] = []

    def keep(out: RunOutcome) -> bool:
        batched.append(out.trace.digest())
        return True

    run_batch(lost_update, (PlanChooser(p, footprints=True) for p in plans), keep, params={"fixed": True})
    alone = [run_once(lost_update, PlanChooser(p, footprints=True), params={"fixed": True}).trace.digest()
             for p in plans]
    assert batched == alone
    # and the referee's reports of the batch are those of the plans run one by one
    reports = run_plans(lost_update, job, plans, lambda rep: True)
    one_by_one = []
    for p in plans:
        chooser = PlanChooser(p, footprints=True)
        one_by_one.append(_report(chooser, run_once(lost_update, chooser, params={"fixed": True}), job))
    assert reports == one_by_one


def test_cut_sharded_proof_names_complete_levels(client: Any, small_shards: None) -> None:
    full = h.explore(lost_update, strategy="exhaustive:3", fixed=True)
    assert full.verdict == "proved-clean"
    budget = full.runs // 2
    here = h.explore(lost_update, strategy="exhaustive:3", budget=budget, fixed=True)
    there = h.explore(lost_update, strategy="exhaustive:3", budget=budget, fixed=True,
                      shard_runner=_cluster.DaskShards(client))
    assert here.verdict == there.verdict == "none-found"
    assert here.runs == there.runs == budget
    assert here.outcome.split(" in ")[0] == there.outcome.split(" in ")[0]
    assert here.notes == there.notes
    assert any("complete; level" in n for n in there.notes) or "complete; level" in there.outcome, there.outcome


def _three_entry_counterexample(scenario: Any, seed: int, **params: Any) -> h.Counterexample:
    """A counterexample found and shrunk to its 3 entries, its minimality left for the test to prove."""
    found = h.explore(scenario, seed=seed, prove_minimal=False, **params)
    cx = found.counterexample
    assert cx is not None and cx.plan is not None and len(cx.plan) == 3, found.outcome
    return cx


#: the toy's proof budget: its levels 0-2 are ~3,500 runs, more than 3 entries x 1,000 on one worker, fewer than
#: 3 x 1,000 on each of two
TOY_PROOF_BUDGET = 1_000
#: #3375's residual's --proof-budget on two workers: runs an entry and a worker (bench/proof.py measures it)
RESIDUAL_PROOF_BUDGET = 50_000


@pytest.mark.parametrize("case", ["toy", pytest.param("3375_residual", marks=pytest.mark.slow)])
def test_three_entry_minimum_proved_within_budget(client: Any, case: str) -> None:
    """A 3-entry minimum whose level 2 does not fit the proof budget on one worker is proved on two.

    The proof budget is per worker (``--proof-budget``, ``DaskShards.workers``): the same budget on two
    workers reaches twice as far in about the same wall time. On one worker the cut proof says how many plans of
    level 2 are left, about how long they would take and the budget that would reach them; that budget, in
    process, proves the same minimum in the same runs as two workers do (the sharded referee is the in-process
    search). The slow case is #3375's residual itself (level 2: tens of thousands of plans, minutes of runs).
    """
    import time

    from harness.explore import prove_found

    if case == "toy":
        from tests.toys import paused_lost_updates

        scenario: Any = paused_lost_updates
        cx, budget = _three_entry_counterexample(scenario, 1, strategy="random"), TOY_PROOF_BUDGET
    else:
        from races import REGISTRY

        race = REGISTRY["volcano_deleted_jobs_3375_residual"]
        scenario, budget = race.scenario, RESIDUAL_PROOF_BUDGET
        cx = _three_entry_counterexample(scenario, 0, strategy=race.strategy, budget=race.budget, fixed=False,
                                         **race.params)
    if case == "toy":
        one, one_runs = prove_found(scenario, cx, proof_budget=budget)
    else:  # the default budget, in process: a few hundred runs, cut before level 2 (its proof would be minutes)
        one, one_runs = prove_found(scenario, cx)
    assert one.proved_minimal is None, one.proof
    m = re.search(r"level 2: at least ([\d,]+) plans not run.*; "
                  r"a proof budget of ([\d,]+) runs an entry \(--proof-budget\) would likely reach them", one.proof)
    assert m is not None, one.proof
    assert re.fullmatch(r"about .+ more at [\d.]+ ms a run \(1 worker\)", one.proof_time), one.proof_time
    left, asked = (int(g.replace(",", "")) for g in m.groups())

    shards = _cluster.DaskShards(client)
    assert shards.workers == 2
    t = time.perf_counter()
    two, two_runs = prove_found(scenario, cx, proof_budget=budget, shard_runner=shards)
    wall = time.perf_counter() - t
    print(f"{case}: proved on {shards.workers} workers in {wall:.1f} s, {two_runs:,} runs; {shards.describe()}")
    assert two.proved_minimal is True and two.proof == "proved minimal", two.proof
    assert two.plan is not None and len(two.plan) == 3 and two.violation.same_bug(cx.violation)
    assert one_runs + left <= two_runs  # "at least": every plan counted as left ran before the minimum was met
    if case == "toy":
        assert 3 * budget < two_runs <= 2 * 3 * budget  # beyond one worker's budget, within two workers'
        here, here_runs = prove_found(scenario, cx, proof_budget=asked)
        assert here.proved_minimal is True and (here.digest(), here.plan) == (two.digest(), two.plan)
        assert here_runs == two_runs
