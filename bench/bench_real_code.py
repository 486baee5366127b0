"""Real code at the speed of models (issue 51): what a real operator's run and proof cost, side by side in one run.

Run: ``.venv/bin/python bench/bench_real_code.py``. Prints, measured in one run:

* **per request**: a GET through ``api.transport()`` (httpx, the REST handler, JSON both ways) against the
  same GET through ``httpx.MockTransport`` answering the same bytes with no semantics at all (httpx's own
  floor), and against a model's direct ``await api.get(...)``;
* **per run**: a canonical run of ``examples/lightkube_operator.py`` (fixed) against the same operator
  written as a model (``bench/bench_http.py``'s ``AppOperatorModel``);
* **per proof**: the minimality proof of two real lightkube operators' counterexamples (the lightkube
  example's one entry, and ``examples/lightkube_restart_operator.py``'s two: a crash and a late watch event),
  each found by the default search with ``--faults crash`` at seed 0 and shrunk, then proved four ways: as
  the proof runs (fewest holds first, reduced), by fault count as an exhaustive search orders a level (the
  proof's order before), without the referee's reduction, and both. Runs, seconds, and whether the verdict
  and the plan are the same;
* **prefix sharing, the most it could save**: over the plans of levels 1 and 2 of the restart operator's
  proof (a sample), the share of each run's steps before its first step that differs from the canonical
  run: what keeping the state at a plan's first deviation could at best spare.
"""

from __future__ import annotations

import sys
import time
import warnings
from typing import Any

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

import httpx

import harness as h
from bench.bench_http import direct_gets, http_gets, model_scenario, timed
from examples import lightkube_operator as lk
from examples import lightkube_restart_operator as restart
from harness.explore import prove_found
from harness.explore._exhaustive import RefereeJob, run_plans
from harness.explore._faults import parse_faults
from harness.explore._minimum import ProofOrder
from harness.kube import APIServer, KubeObject
from harness.sim import Limits, PlanChooser, World, run_once

ORDERS = {
    "fewest holds first, reduced (the proof)": ProofOrder(),
    "fewest faults first, reduced": ProofOrder(fewest_holds_first=False),
    "fewest holds first, unreduced": ProofOrder(reduce=False),
    "fewest faults first, unreduced (every plan)": ProofOrder(fewest_holds_first=False, reduce=False),
}


async def floor_gets(world: World, n: int) -> None:
    """The same GET as ``http_gets``, answered by ``httpx.MockTransport`` with the bytes the apiserver sent."""
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "cfg", extra={"data": {"a": "1"}}))
    async with httpx.AsyncClient(transport=api.transport(client="bench"), base_url="http://kube") as real:
        answer = await real.get("/api/v1/namespaces/default/configmaps/cfg")
    body, headers = answer.content, dict(answer.headers)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers=headers)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler), base_url="http://kube") as client:
        for _ in range(n):
            (await client.get("/api/v1/namespaces/default/configmaps/cfg")).json()
            await world.step("a GET answered")  # the yield point the transport's GET has


def per_request(n: int = 2000) -> None:
    direct = timed(direct_gets, n=n) / n * 1e6
    through = timed(http_gets, n=n) / n * 1e6
    floor = timed(floor_gets, n=n) / n * 1e6
    print(f"GET through api.transport():      {through:8.1f} us")
    print(f"GET through httpx.MockTransport:  {floor:8.1f} us   transport / httpx's floor {through / floor:.2f}x")
    print(f"GET, a model's direct api.get:    {direct:8.1f} us   transport / direct {through / direct:.1f}x")


def per_run() -> None:
    real = timed(lk.scenario, repeat=5, fixed=True)
    model = timed(model_scenario, repeat=5)
    print(f"run, lightkube example (fixed):   {real * 1e3:8.1f} ms")
    print(f"run, the same as a model:         {model * 1e3:8.1f} ms   real / model {real / model:.1f}x")


def proofs() -> None:
    for name, scenario in (("lightkube example", lk.scenario), ("restart operator", restart.scenario)):
        found = h.explore(scenario, seed=0, faults="crash", prove_minimal=False, fixed=False)
        cx = found.counterexample
        assert cx is not None and cx.plan is not None, found.outcome
        print(f"{name}: found at run {found.first_found_run}, shrunk to {len(cx.plan)} "
              f"{'entry' if len(cx.plan) == 1 else 'entries'}")
        first: tuple[Any, ...] | None = None
        for what, order in ORDERS.items():
            t0 = time.perf_counter()
            proved, runs = prove_found(scenario, cx, order=order)
            sec = time.perf_counter() - t0
            got = (proved.proved_minimal, len(proved.plan or ()), proved.digest())
            same = "" if first is None else ("  same verdict and plan" if got == first else
                                             f"  DIFFERENT: {got[:2]} vs {first[:2]}")
            first = first or got
            print(f"  proof, {what:40s} {runs:7,} runs {sec:7.1f} s  {proved.proof}{same}")


def prefix_share(sample: int = 300) -> None:
    params = {"fixed": False}
    faults = parse_faults("crash")
    job = RefereeJob(params, Limits(), faults, True, None, True)
    [root] = run_plans(restart.scenario, job, [()], lambda rep: True)
    level1 = run_plans(restart.scenario, job, list(root.children), lambda rep: True)
    plans = list(root.children) + [p for rep in level1 for p in rep.children][: max(0, sample - len(root.children))]
    ref = PlanChooser(())
    canonical = run_once(restart.scenario, ref, params=params, faults=faults)
    shared = total = 0
    for plan in plans[:sample]:
        chooser = PlanChooser(plan)
        run_once(restart.scenario, chooser, params=params, faults=faults)
        same = next((i for i, (a, b) in enumerate(zip(chooser.ran, ref.ran, strict=False)) if a != b),
                    min(len(chooser.ran), len(ref.ran)))
        shared += same
        total += len(chooser.ran)
    print(f"prefix sharing: of {total:,} steps in {min(sample, len(plans))} plans of levels 1-2, {shared:,} "
          f"({shared / total:.0%}) come before the run's first step that differs from the canonical run "
          f"({canonical.steps} steps)")


def main() -> None:
    warnings.simplefilter("ignore", ResourceWarning)  # httpx's abandoned generator chain (see tests/kube)
    per_request()
    per_run()
    proofs()
    prefix_share()


if __name__ == "__main__":
    main()
