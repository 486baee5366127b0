"""``python -m bench [--quick] [--json PATH]``: the issue-6 benchmarks, one run, one machine.

Sections (each prints a markdown table; everything also lands in JSON):

1. runtime throughput (:mod:`bench.runtime`): hand-offs/s, ratio to a hand-driven
   coroutine loop, executions/s under ``random``, Hypothesis examples/s;
2. time to the first failure of every documented buggy race, per strategy, over
   several seeds (runs and seconds; median / min / max); search only, no shrink;
   and the two-fault models (:data:`TWO_FAULT_MODELS`) under the default search
   and budget, every seed;
3. the peer baseline: the same race model run live (:func:`harness.sim.repeat_live`:
   Trio's scheduler, real scaled clock with jitter, no harness control), re-run
   the way pytest-repeat does until the harness's oracle fails or a wall cap;
4. shrinking: seconds and runs spent shrinking, the counterexample's deviations
   and steps, against what ``exhaustive`` finds (fewest deviations); 4b the runs
   ``exhaustive:k`` needs to prove each fixed race clean with and without the
   reduction, and 4c the same proofs under looser independence relations
   (:mod:`bench.reduction_bound`): how far any reduction could go;
5. scale: the queue-backlog model at 1x / 10x / 100x event rate (wall seconds per
   virtual second, peak traced memory) and a hunt's executions/s in one process
   versus two processes in parallel;
6. cluster: one hunt's executions/s in process versus ``--cluster local:2`` (Dask,
   two worker processes) on the same run budget, in the same bench run.

Races come from ``races.REGISTRY`` at run time; a race that errors gets an
"error: ..." row and the bench moves on. Known-open races are measured but
left out of the "found" targets.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STRATEGIES = ("random", "pct", "hypothesis", "exhaustive")


@dataclass(frozen=True)
class Settings:
    """Sizes of one bench run; ``quick`` takes about two minutes, ``full`` about fifteen on 2 cores."""

    quick: bool
    seeds: int
    search_cap: float  # wall seconds one search may take before it counts as "not found"
    baseline_cap: float  # wall seconds of live re-runs per race
    time_scale: float  # live runs: real seconds per virtual second
    scale_duration: float  # virtual seconds of the queue-backlog load runs
    hunt_runs: int  # executions in the -n 0 / -n 2 comparison
    reduction_cap: int = 60_000  # runs one exhaustive search of the reduction rows may take
    races: tuple[str, ...] | None = None  # None = every registered race

    @classmethod
    def make(cls, quick: bool, races: tuple[str, ...] | None = None) -> Settings:
        if quick:
            return cls(True, seeds=3, search_cap=3.0, baseline_cap=4.0, time_scale=0.01, scale_duration=4.0,
                       hunt_runs=600, reduction_cap=20_000, races=races)
        # baseline cap: 10 min per race would make the full bench take over an hour; the cap used is printed
        return cls(False, seeds=20, search_cap=10.0, baseline_cap=60.0, time_scale=0.01, scale_duration=30.0,
                   hunt_runs=4000, races=races)


def _mark(ok: bool | None) -> str:
    return "" if ok is None else ("✔" if ok else "✘")


def _err(exc: BaseException) -> str:
    return f"error: {type(exc).__name__}: {str(exc)[:160]}"


def _races(settings: Settings) -> dict[str, Any]:
    from races import REGISTRY

    if settings.races is None:
        return dict(REGISTRY)
    return {n: REGISTRY[n] for n in settings.races if n in REGISTRY}


def _params(race: Any, fixed: bool) -> dict[str, Any]:
    return {"fixed": fixed, **race.params}


# --------------------------------------------------------------- 1 runtime
def runtime(settings: Settings) -> list[dict[str, Any]]:
    from bench import runtime as rt

    return rt.run(quick=settings.quick)


# ------------------------------------------------------ 2 time to failure
def _search(race: Any, strategy: str, seed: int, cap: float) -> dict[str, Any]:
    import harness as h

    r = h.explore(
        race.scenario, strategy=strategy, budget=h.Budget(runs=None, seconds=cap), seed=seed,
        shrink_found=False, prove_minimal=False, **_params(race, False),
    )
    return {"found": r.found, "runs": r.first_found_run if r.found else r.runs, "seconds": r.seconds,
            "violation": r.counterexample.violation.to_json() if r.counterexample else None}


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def time_to_failure(settings: Settings) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, race in _races(settings).items():
        for strategy in STRATEGIES:
            row: dict[str, Any] = {"race": name, "strategy": strategy, "known_open": race.known_open,
                                   "default": strategy == race.strategy.partition(":")[0]}
            try:
                seeds = [0] if strategy == "exhaustive" else list(range(settings.seeds))  # exhaustive is deterministic
                found = [_search(race, strategy, s, settings.search_cap) for s in seeds]
                hits = [f for f in found if f["found"]]
                row["seeds"] = len(seeds)
                row["found"] = len(hits)
                if hits:
                    row["runs"] = _summary([float(f["runs"]) for f in hits])
                    row["seconds"] = _summary([f["seconds"] for f in hits])
                if row["default"] and not race.known_open:
                    med = row["seconds"]["median"] if hits and len(hits) == len(seeds) else float("inf")
                    row["target"] = "found in <= 1 s median (every seed)"
                    row["ok"] = med <= 1.0
            except Exception as exc:
                row["error"] = _err(exc)
                row["ok"] = False if row["default"] and not race.known_open else None
            rows.append(row)
            print(f"  time-to-failure {name} {strategy}: {_fmt_ttf(row)}", file=sys.stderr, flush=True)
    return rows


#: models of Sieve's multi-fault patterns, hunted as a user hunts a model of their own: the default search
#: (the portfolio) and its default budget; the held-out-like ones were written from the docs alone. The stale-state
#: ones need two faults at once (a restart and a stale LIST); cassandra-operator#398 (an unobserved deletion mark)
#: turned out to need one entry (a drop of the pod watch, or its event 2 s late), as its docstring says
TWO_FAULT_MODELS = ("examples/rabbitmq_time_travel.py:scenario", "examples/pxc_stale_state.py:scenario",
                    "examples/cass_operator_412.py:scenario", "examples/cassandra_stale_pod_pvc.py:scenario",
                    "examples/rabbitmq_stale_resize.py:scenario", "examples/zookeeper_stale_scale.py:scenario",
                    "examples/casskop_stale_deletion.py:scenario", "examples/zookeeper_stale_deletion.py:scenario",
                    "examples/cassandra_unobserved_pvc.py:scenario")


def two_fault_ttf(settings: Settings) -> list[dict[str, Any]]:
    """Section 2b: every two-fault model found by the default search within its default budget, per seed."""
    import harness as h
    from harness.explore import resolve_scenario

    rows: list[dict[str, Any]] = []
    for ref in TWO_FAULT_MODELS:
        row: dict[str, Any] = {"race": ref, "strategy": "portfolio (default)", "known_open": False, "default": True}
        try:
            scenario = resolve_scenario(ref)
            found = []
            for seed in range(settings.seeds):
                r = h.explore(scenario, seed=seed, shrink_found=False, prove_minimal=False)  # default budget: 1000
                found.append({"found": r.found, "runs": r.first_found_run if r.found else r.runs,
                              "seconds": r.first_found_seconds if r.found else r.seconds, "by": r.found_by})
            hits = [f for f in found if f["found"]]
            row.update(seeds=len(found), found=len(hits), by=sorted({str(f["by"]) for f in hits}))
            if hits:
                row["runs"] = _summary([float(f["runs"]) for f in hits])
                row["seconds"] = _summary([float(f["seconds"]) for f in hits])
            row["target"] = "found in every seed within 1,000 runs, <= 1 s median"
            row["ok"] = len(hits) == len(found) and row["seconds"]["median"] <= 1.0
        except Exception as exc:
            row["error"] = _err(exc)
            row["ok"] = False
        rows.append(row)
        print(f"  two-fault {ref}: {_fmt_ttf(row)}", file=sys.stderr, flush=True)
    return rows


def _fmt_ttf(row: dict[str, Any]) -> str:
    if "error" in row:
        return str(row["error"])
    if not row.get("found"):
        return f"not found ({row['seeds']} seeds)"
    r, s = row["runs"], row["seconds"]
    miss = "" if row["found"] == row["seeds"] else f" ({row['found']}/{row['seeds']} seeds)"
    return (f"{r['median']:.0f} [{r['min']:.0f}-{r['max']:.0f}] runs, "
            f"{s['median']:.3f} [{s['min']:.3f}-{s['max']:.3f}] s{miss}")


# ------------------------------------------------------------ 3 baseline
def baseline(settings: Settings, ttf: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import harness as h
    from harness.sim import Violation, repeat_live

    rows: list[dict[str, Any]] = []
    for name, race in _races(settings).items():
        row: dict[str, Any] = {"race": name, "known_open": race.known_open, "cap_seconds": settings.baseline_cap,
                               "time_scale": settings.time_scale}
        try:
            # the oracle the harness trips: the live runs count only that one as "found"
            r = h.explore(race.scenario, strategy=race.strategy, budget=h.Budget(runs=None, seconds=settings.search_cap),
                          seed=0, shrink_found=False, prove_minimal=False, **_params(race, False))
            target: Violation | None = r.counterexample.violation if r.counterexample else None
            row["oracle"] = target.name if target else None
            live = repeat_live(race.scenario, params=_params(race, False), runs=None, seconds=settings.baseline_cap,
                               seed=0, time_scale=settings.time_scale, timeout=settings.baseline_cap, target=target)
            row.update(found=live.found, runs=live.runs, seconds=live.seconds, other_failures=live.other_failures,
                       outcome=live.outcome)
            harness_s = next((t["seconds"]["median"] for t in ttf
                              if t["race"] == name and t.get("default") and t.get("seconds")), None)
            row["harness_median_seconds"] = harness_s
            if live.found and harness_s:
                row["ratio"] = live.seconds / harness_s
            if not race.known_open:
                row["target"] = ">= 100x fewer seconds than the baseline, or baseline not found within 10 min"
                if live.found:
                    row["ok"] = bool(row.get("ratio") and row["ratio"] >= 100)
                else:
                    # honest: a cap below 10 minutes cannot prove "not within 10 minutes"
                    row["ok"] = True if settings.baseline_cap >= 600 else None
        except Exception as exc:
            row["error"] = _err(exc)
        rows.append(row)
        print(f"  baseline {name}: {row.get('outcome', row.get('error'))}", file=sys.stderr, flush=True)
    return rows


# -------------------------------------------------------------- 4 shrink
def shrinking(settings: Settings) -> list[dict[str, Any]]:
    import harness as h

    rows: list[dict[str, Any]] = []
    for name, race in _races(settings).items():
        row: dict[str, Any] = {"race": name, "strategy": race.strategy, "known_open": race.known_open}
        try:
            budget = h.Budget(runs=None, seconds=settings.search_cap)
            p = _params(race, False)
            raw = h.explore(race.scenario, strategy=race.strategy, budget=budget, seed=0,
                            shrink_found=False, prove_minimal=False, **p)
            shr = h.explore(race.scenario, strategy=race.strategy, budget=budget, seed=0, prove_minimal=False, **p)
            # what a user gets: shrink, then the exhaustive referee below the shrunk deviation count
            full = h.explore(race.scenario, strategy=race.strategy, budget=budget, seed=0, **p)
            ex = h.explore(race.scenario, strategy="exhaustive:2", budget=budget, seed=0, **p)
            if full.counterexample is None or raw.first_found_run is None:
                row["error"] = "not found by the default strategy (seed 0)"
            else:
                cx = full.counterexample
                # the names of `hunt --json`: the search, then the shrinker and the proof, each on its own
                row.update(found_at_run=full.first_found_run, found_after_s=full.first_found_seconds,
                           shrinker_runs=full.shrink_runs, proof_runs=full.proof_runs, total_runs=full.runs,
                           total_seconds=full.seconds)
                row.update(shrink_seconds=max(0.0, full.seconds - raw.seconds),
                           shrink_runs=full.runs - (full.first_found_run or 0),
                           raw_deviations=raw.counterexample.deviations if raw.counterexample else None,
                           shrinker_deviations=shr.counterexample.deviations if shr.counterexample else None,
                           deviations=cx.deviations, steps=cx.steps, proved_minimal=cx.proved_minimal)
                if ex.counterexample is not None:
                    row.update(min_deviations=ex.counterexample.deviations, min_steps=ex.counterexample.steps)
                    row["target"] = "counterexample at the proved minimum (deviations)"
                    row["ok"] = cx.deviations <= ex.counterexample.deviations
                else:
                    row["min_deviations"] = f"none within 2 deviations ({ex.verdict})"
                    row["ok"] = None
        except Exception as exc:
            row["error"] = _err(exc)
        rows.append(row)
        print(f"  shrink {name}: {row.get('error') or (row['deviations'], row['steps'])}", file=sys.stderr, flush=True)
    return rows


# ----------------------------------------------------------- 4b reduction
#: fixed variants the referee proves clean, with the depth of the full bench's proof: at 2 entries the
#: search without the reduction takes ~95k runs (kruise) and over 60k (deleted_jobs), 10 minutes and more
#: each; volcano_queue_backlog (~94k steps a run) is out of reach
REDUCTION_RACES = {"kruise_imagepulljob": 1, "volcano_deleted_jobs": 1, "volcano_gang_close": 2}


def reduction(settings: Settings) -> list[dict[str, Any]]:
    """Runs ``exhaustive:k`` needs to prove each fixed model clean, with and without the reduction."""
    import harness as h
    from harness.kube._examples import stale_status_writers

    races = _races(settings)
    cases: list[tuple[str, Any, dict[str, Any], int]] = [
        (n, races[n].scenario, {"faults": races[n].faults, **_params(races[n], True)}, 1 if settings.quick else k)
        for n, k in REDUCTION_RACES.items() if n in races
    ]
    cases.append(("kube example: 2 status writers", stale_status_writers, {"fixed": True}, 2))
    rows: list[dict[str, Any]] = []
    for name, scenario, params, depth in cases:
        row: dict[str, Any] = {"race": name, "k": depth}
        try:
            on, off = (
                h.explore(scenario, strategy=h.Exhaustive(depth, reduce=r), budget=settings.reduction_cap,
                          prove_minimal=False, **params)
                for r in (True, False)
            )
            # a search cut by the cap is no verdict: its run count is a lower bound
            row.update(runs=on.runs, runs_full=off.runs, skipped=on.skipped, verdict=on.verdict,
                       verdict_full=off.verdict, ratio=off.runs / on.runs if on.runs else None,
                       cut=off.verdict != "proved-clean",
                       same=on.verdict == off.verdict or (on.verdict == "proved-clean" and off.verdict == "none-found"))
        except Exception as exc:
            row["error"] = _err(exc)
        rows.append(row)
        print(f"  reduction {name}: {row.get('error') or (row['runs'], row['runs_full'])}", file=sys.stderr, flush=True)
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    if ratios:
        median = statistics.median(ratios)
        for r in rows:
            r["median_ratio"] = median
        rows[0]["target"] = ">= 5x fewer runs (median), same verdicts"
        rows[0]["ok"] = median >= 5 and all(r.get("same") for r in rows)
    return rows


# ----------------------------------------------------- 4c reduction bound
def reduction_bound(settings: Settings, reduction_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of the same proofs under looser independence relations: how far any reduction could go.

    At ``k = 1`` for each race of 4b; in the full bench also gang_close at
    ``k = 2``, whose runs without and with the shipped reduction are 4b's.
    """
    from bench.reduction_bound import bound

    races = _races(settings)
    rows: list[dict[str, Any]] = []
    for name in REDUCTION_RACES:
        if name in races:
            rows += bound(name, 1, cap=settings.reduction_cap)
            print(f"  bound {name}: {[r['runs'] for r in rows[-4:]]}", file=sys.stderr, flush=True)
    deep = [r for r in reduction_rows if r.get("race") == "volcano_gang_close" and r.get("k") == 2 and "error" not in r]
    if deep and not settings.quick and not deep[0]["cut"]:
        r = deep[0]
        rows.append({"race": r["race"], "k": 2, "reduction": "none", "runs": r["runs_full"],
                     "verdict": r["verdict_full"], "from": "4b"})
        rows.append({"race": r["race"], "k": 2, "reduction": "declared", "runs": r["runs"], "verdict": r["verdict"],
                     "from": "4b"})
        rows += bound("volcano_gang_close", 2, cap=settings.reduction_cap, kinds=("per key", "per actor"))
    none = {(r["race"], r["k"]): r["runs"] for r in rows if r["reduction"] == "none"}
    for r in rows:
        full = none.get((r["race"], r["k"]))
        r["ratio"] = full / r["runs"] if full and r["runs"] else None
    return rows


# --------------------------------------------------------------- 5 scale
def _load_run(scale: float, duration: float, traced: bool) -> tuple[float, float, int, str | None, float]:
    from harness.sim import Limits, ReplayChooser, run_once
    from races.volcano_queue_backlog import queue_backlog

    limits = Limits(max_steps=100_000_000)
    params = {"fixed": True, "scale": scale, "duration": duration}
    if traced:
        tracemalloc.start()
    t = time.perf_counter()
    out = run_once(queue_backlog, ReplayChooser([]), params=params, limits=limits)
    wall = time.perf_counter() - t
    peak = 0
    if traced:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    v = out.violation.describe() if out.violation else None
    return wall, out.end_time, peak, v, float(out.steps)


def scale_load(settings: Settings) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for scale in (1.0, 10.0, 100.0):
        row: dict[str, Any] = {"scale": f"{scale:g}x", "duration": settings.scale_duration}
        try:
            # 100x is ~100x the work: give it a tenth of the virtual time (the ratio is per virtual second)
            duration = settings.scale_duration if scale < 100 else max(1.0, settings.scale_duration / 10)
            wall, end, _, v, steps = _load_run(scale, duration, traced=False)
            _, _, peak, _, _ = _load_run(scale, min(duration, 2.0 if settings.quick else 5.0), traced=True)
            row.update(duration=duration, virtual_seconds=end, wall_seconds=wall, wall_per_virtual=wall / end if end else None,
                       steps=steps, peak_mib=peak / 2**20, violation=v)
            if scale == 10.0:
                row["target"] = "< 1 wall s per virtual s (faster than real time)"
                row["ok"] = bool(row["wall_per_virtual"] is not None and row["wall_per_virtual"] < 1.0)
        except ModuleNotFoundError as exc:
            row["error"] = f"error: {exc} (queue-backlog model not available)"
        except Exception as exc:
            row["error"] = _err(exc)
        rows.append(row)
        print(f"  scale {row['scale']}: {row.get('error') or round(row['wall_per_virtual'], 4)}", file=sys.stderr, flush=True)
    return rows


def _hunt_cmd(race: str, runs: int, seed: int, out: str) -> list[str]:
    return [sys.executable, "-m", "harness", "hunt", race, "--variant", "fixed", "--strategy", "random",
            "--budget", str(runs), "--seed", str(seed), "--json", "--report-dir", out]


def _timed_procs(cmds: list[list[str]]) -> tuple[float, int]:
    t = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) for c in cmds]
    runs = 0
    for p in procs:
        out, _ = p.communicate()
        for line in out.splitlines():
            if line.startswith("{"):
                runs += int(json.loads(line)["runs"])
    return time.perf_counter() - t, runs


def _hunt_race(settings: Settings) -> str | None:
    """The race the hunt rows measure: gang_close's fixed variant, a clean search of cheap runs."""
    races = _races(settings)
    return next((n for n in ("volcano_gang_close", "kruise_imagepulljob") if n in races), next(iter(races), None))


def parallel_hunt(settings: Settings) -> list[dict[str, Any]]:
    name = _hunt_race(settings)
    if name is None:
        return [{"mode": "-", "error": "no race registered"}]
    n = settings.hunt_runs
    with tempfile.TemporaryDirectory() as tmp:
        try:
            one_s, one_runs = _timed_procs([_hunt_cmd(name, n, 0, tmp + "/a")])
            two_s, two_runs = _timed_procs([_hunt_cmd(name, n // 2, 1, tmp + "/b"), _hunt_cmd(name, n - n // 2, 2, tmp + "/c")])
        except Exception as exc:
            return [{"mode": "-", "error": _err(exc)}]
    e1, e2 = one_runs / one_s, two_runs / two_s
    what = (f"`python -m harness hunt {name} --variant fixed --strategy random`: {n} runs in 1 process vs "
            f"{n // 2}+{n - n // 2} in 2 processes at once (wall time incl. interpreter start-up; {os.cpu_count()} CPUs)")
    return [
        {"mode": "-n 0 (1 process)", "runs": one_runs, "seconds": one_s, "executions_per_s": e1, "measured": what},
        {"mode": "-n 2 (2 processes)", "runs": two_runs, "seconds": two_s, "executions_per_s": e2, "speedup": e2 / e1,
         "target": ">= 1.7x the executions/s of -n 0", "ok": e2 / e1 >= 1.7, "measured": what},
    ]


def _hunt_json(cmd: list[str]) -> tuple[float, int, float]:
    """(wall seconds incl. start-up, runs, the hunt's own search seconds) of one ``hunt --json`` process."""
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode not in (0, 1) or not lines:
        raise RuntimeError(f"exit {done.returncode}: {' '.join(done.stderr.split())[:300]}")
    return wall, sum(int(d["runs"]) for d in lines), sum(float(d["seconds"]) for d in lines)


def cluster_hunt(settings: Settings) -> list[dict[str, Any]]:
    """The same hunt in process and on a two-worker Dask LocalCluster: executions/s and their ratio.

    The ratio is taken over the hunt's own search seconds (for the cluster: from
    submitting the shards to the last one back, so shipping and merging count),
    without interpreter and cluster start-up, which a long hunt pays once; the
    wall seconds with start-up are in the row too.
    """
    name = _hunt_race(settings)
    if name is None:
        return [{"mode": "-", "error": "no race registered"}]
    n = settings.hunt_runs
    with tempfile.TemporaryDirectory() as tmp:
        try:
            one = _hunt_json(_hunt_cmd(name, n, 0, tmp + "/a"))
            two = _hunt_json([*_hunt_cmd(name, n, 0, tmp + "/b"), "--cluster", "local:2"])
        except Exception as exc:
            return [{"mode": "-", "error": _err(exc)}]
    e1, e2 = one[1] / one[2], two[1] / two[2]
    what = (f"`python -m harness hunt {name} --variant fixed --strategy random --budget {n} --seed 0` in process vs "
            f"with `--cluster local:2` (4 shards); executions/s over the search seconds, wall incl. start-up beside "
            f"them; {os.cpu_count()} CPUs")
    return [
        {"mode": "in process", "runs": one[1], "seconds": one[2], "wall_seconds": one[0], "executions_per_s": e1,
         "measured": what},
        {"mode": "--cluster local:2", "runs": two[1], "seconds": two[2], "wall_seconds": two[0], "executions_per_s": e2,
         "speedup": e2 / e1, "target": ">= 1.7x in process (2 cores, a search of more than a few seconds)",
         "ok": e2 / e1 >= 1.7, "measured": what},
    ]


def proof_rows(settings: Settings) -> list[dict[str, Any]]:
    """Section 7: the referee batched, one proof in process and on local:2, the same shards on paper (bench/proof.py)."""
    from bench import proof

    return proof.run(settings.quick)


# ------------------------------------------------------------- rendering
def _table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def _num(v: Any, fmt: str = "{:,.0f}") -> str:
    return "-" if v is None else fmt.format(v) if isinstance(v, (int, float)) else str(v)


def render(res: dict[str, Any]) -> str:
    s = res["sections"]
    parts = [f"# race-harness bench — {res['date']} — `{res['command']}`", "",
             f"{res['machine']}; quick={res['quick']}; live time scale {res['settings']['time_scale']} s per virtual s", ""]
    parts += ["## 1. Runtime throughput", "",
              "Absolute rates are measured, not targets: actors are Trio tasks, and bare Trio tasks handing off "
              "with no harness at all set the ceiling, so the target is on the part of a hand-off that is ours "
              "(the bare-Trio row) and, for users, on a proof's wall time (section 7).", ""]
    parts.append(_table(["metric", "measured", "target", ""], [
        [r["metric"] + (f" ({r['detail']})" if r.get("detail") else ""),
         _num(r["value"], "{:.2f}x" if r.get("ratio") else "{:,.1f}"), r["target"], _mark(r["ok"])]
        for r in s["runtime"]]))
    parts += ["", f"## 2. Time to first failure (buggy variants; search only, no shrink; {res['settings']['seeds']} seeds; "
              f"cap {res['settings']['search_cap']:g} s per search; runs and s as median [min-max])", ""]
    parts.append(_table(["race", "strategy", "time to failure", "target", ""], [
        [r["race"] + (" (known open)" if r["known_open"] else ""), r["strategy"] + (" *" if r["default"] else ""),
         _fmt_ttf(r), r.get("target", ""), _mark(r.get("ok"))] for r in s["time_to_failure"]]))
    parts += ["", "`*` = the race's default strategy; exhaustive is deterministic (one run of the search).", ""]
    two = s.get("two_fault", [])
    if two:
        parts += ["Sieve's multi-fault patterns (a restart and a stale LIST; a pod whose deletion mark no reconcile "
                  "sees, which is one entry), hunted as a user hunts a model: the default search (the portfolio) and "
                  "its default budget (1,000 runs), every seed; `found by` names the portfolio member whose run first "
                  "failed.", ""]
        parts.append(_table(["model", "found by", "time to failure", "target", ""], [
            [r["race"], ", ".join(r.get("by", [])) or "-", _fmt_ttf(r), r.get("target", ""), _mark(r.get("ok"))]
            for r in two]))
        parts.append("")
    done = [r for r in s.get("shrinking", []) if "found_at_run" in r]
    if done:
        parts += ["What a user's hunt spends (default strategy, seed 0; the names of `hunt --json`): the search "
                  "until the first failure, then the shrinker and the minimality proof, counted apart.", ""]
        parts.append(_table(["race", "found_at_run", "found_after_s", "shrink_runs", "proof_runs", "total runs",
                             "total s"], [
            [r["race"], _num(r["found_at_run"]), _num(r["found_after_s"], "{:.3f}"), _num(r["shrinker_runs"]),
             _num(r["proof_runs"]), _num(r["total_runs"]), _num(r["total_seconds"], "{:.2f}")] for r in done]))
        parts.append("")
    parts += [f"## 3. Peer baseline: live re-runs (Trio's scheduler, real clock x {res['settings']['time_scale']}, "
              f"±20% jitter, no harness), pytest-repeat style, cap {res['settings']['baseline_cap']:g} s per race", ""]
    parts.append(_table(["race", "baseline", "harness median", "ratio", "target", ""], [
        [r["race"] + (" (known open)" if r["known_open"] else ""), r.get("outcome") or r.get("error", ""),
         _num(r.get("harness_median_seconds"), "{:.3f} s"), _num(r.get("ratio"), "{:,.0f}x"),
         r.get("target", ""), _mark(r.get("ok")) or ("? cap < 10 min" if "target" in r else "")]
        for r in s["baseline"]]))
    parts += ["", "## 4. Shrinking (default strategy, seed 0) against `exhaustive:2`", ""]

    parts += ["Shrink = shrinker + minimality proof (the default pipeline); deviations: as found → after the shrinker "
              "→ reported (proved minimal?).", ""]
    heads = ["race", "shrink s", "shrink runs", "deviations", "steps", "exhaustive min (dev, steps)", ""]
    parts.append(_table(heads, [
        [r["race"], *(["", "", r["error"], "", "", "✘"] if "error" in r else [
            _num(r["shrink_seconds"], "{:.3f}"), _num(r["shrink_runs"]),
            f"{_num(r['raw_deviations'])} → {_num(r['shrinker_deviations'])} → {r['deviations']}"
            + (" (proved)" if r.get("proved_minimal") else ""), str(r["steps"]),
            f"{r['min_deviations']}, {_num(r.get('min_steps'))}", _mark(r.get("ok"))])]
        for r in s["shrinking"]]))
    red = s.get("reduction", [])
    if red:
        parts += ["", "## 4b. Reduction in the exhaustive referee (fixed variants, proved clean)", ""]
        parts.append(_table(["model", "k", "runs with", "runs without", "fewer", "verdicts", "target", ""], [
            [r["race"], str(r["k"]), *(["", "", r["error"], "", "", "✘"] if "error" in r else [
                _num(r["runs"]), ("≥ " if r["cut"] else "") + _num(r["runs_full"]),
                ("≥ " if r["cut"] else "") + _num(r.get("ratio"), "{:.2f}x"),
                r["verdict"] + ("" if r["same"] else f" ≠ {r['verdict_full']}"), r.get("target", ""),
                _mark(r.get("ok"))])]
            for r in red]))
        if "median_ratio" in red[0]:
            parts += ["", f"Median: {red[0]['median_ratio']:.2f}x fewer runs. '≥': the search without the reduction "
                      f"reached the cap ({res['settings']['reduction_cap']:,} runs) before its proof."]
    bnd = s.get("reduction_bound", [])
    if bnd:
        parts += ["", "## 4c. How far a reduction could go (fixed variants, proved clean; `python -m bench.reduction_bound`)",
                  "", "The same proofs under looser independence: *declared* is the referee as shipped (across "
                  "declared processes by their apiserver footprints, and inside a process that records its memory "
                  "by key, the garbage collector, by the footprints the story reads); *per key* also takes two "
                  "actions of any one process on different object keys to commute (what recording every model's "
                  "memory by key could add at best); *per actor* takes every actor to be its own process (unsound: "
                  "an upper bound on any footprint-based reduction).", ""]
        parts.append(_table(["model", "k", "independence", "runs", "fewer than none", "verdict"], [
            [r["race"], str(r["k"]), r["reduction"] + (f" (from {r['from']})" if r.get("from") else ""),
             _num(r["runs"]), _num(r.get("ratio"), "{:.2f}x"), r["verdict"]]
            for r in bnd]))
    parts += ["", "## 5. Scale", "", "Queue-backlog model (fixed variant, canonical run) at 1x/10x/100x event rate:", ""]
    parts.append(_table(["load", "virtual s", "wall s", "wall s / virtual s", "steps", "peak MiB (tracemalloc)", "target", ""], [
        [r["scale"], *(["", "", r["error"], "", "", "", ""] if "error" in r else [
            _num(r["virtual_seconds"], "{:.1f}"), _num(r["wall_seconds"], "{:.2f}"), _num(r["wall_per_virtual"], "{:.4f}"),
            _num(r["steps"]), _num(r["peak_mib"], "{:.1f}"), r.get("target", ""), _mark(r.get("ok"))])]
        for r in s["scale"]]))
    parts += ["", "Hunt executions/s, one process vs two in parallel:", ""]
    parts.append(_table(["mode", "runs", "wall s", "executions/s", "speed-up", "target", ""], [
        [r["mode"], *(["", "", r["error"], "", "", ""] if "error" in r else [
            _num(r["runs"]), _num(r["seconds"], "{:.2f}"), _num(r["executions_per_s"], "{:,.0f}"),
            _num(r.get("speedup"), "{:.2f}x"), r.get("target", ""), _mark(r.get("ok"))])]
        for r in s["parallel"]]))
    if s["parallel"] and "measured" in s["parallel"][0]:
        parts += ["", f"Measured: {s['parallel'][0]['measured']}."]
    cluster = s.get("cluster", [])
    if cluster:
        parts += ["", "## 6. Hunting on a Dask cluster", ""]
        parts.append(_table(["mode", "runs", "search s", "wall s (start-up incl.)", "executions/s", "ratio", "target", ""], [
            [r["mode"], *(["", "", "", r["error"], "", "", ""] if "error" in r else [
                _num(r["runs"]), _num(r["seconds"], "{:.2f}"), _num(r["wall_seconds"], "{:.2f}"),
                _num(r["executions_per_s"], "{:,.0f}"), _num(r.get("speedup"), "{:.2f}x"), r.get("target", ""),
                _mark(r.get("ok"))])]
            for r in cluster]))
        if "measured" in cluster[0]:
            parts += ["", f"Measured: {cluster[0]['measured']}."]
        bare = next((r.get("speedup") for r in s["parallel"] if r.get("speedup")), None)
        dask = next((r.get("speedup") for r in cluster if r.get("speedup")), None)
        if bare and dask:
            parts += ["", f"The machine's own ceiling: two bare hunt processes at once give {bare:.2f}x "
                      f"(section 5, wall time with start-up, so a little low); the cluster reaches {dask / bare:.2f} of it."]
    proof = s.get("proof", [])
    if proof:
        parts += ["", "## 7. Proof wall time: batched, on two workers, and on paper", ""]
        parts.append(_table(["metric", "measured", "target", ""], [
            [r["metric"] + (f" ({r['detail']})" if r.get("detail") else ""),
             _num(r["value"], "{:.2f}x" if r.get("ratio") else "{:,.1f}"), r["target"], _mark(r["ok"])]
            for r in proof]))
        parts += ["", "On paper: the in-process proof's shards, wave after wave, each shard to the first free worker "
                  "(bench/proof.py); shipping a task is not in it, the 2-worker row shows what it costs."]
    return "\n".join(parts) + "\n"


def run(quick: bool = False, races: tuple[str, ...] | None = None, settings: Settings | None = None,
        sections: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run the bench and return the JSON-able result (``render`` makes the markdown)."""
    st = settings or Settings.make(quick, races)
    want = sections or (
        "runtime", "time_to_failure", "two_fault", "baseline", "shrinking", "reduction", "reduction_bound", "scale",
        "parallel", "cluster", "proof",
    )
    started = time.perf_counter()
    out: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python -m bench" + (" --quick" if st.quick else ""),
        "quick": st.quick,
        "machine": f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
                   f"{os.cpu_count()} CPUs",
        "settings": st.__dict__ | {"races": list(st.races) if st.races else None},
        "sections": {},
    }
    steps: list[tuple[str, Callable[[], list[dict[str, Any]]]]] = [
        ("runtime", lambda: runtime(st)),
        ("time_to_failure", lambda: time_to_failure(st)),
        ("two_fault", lambda: two_fault_ttf(st)),
        ("baseline", lambda: baseline(st, out["sections"].get("time_to_failure", []))),
        ("shrinking", lambda: shrinking(st)),
        ("reduction", lambda: reduction(st)),
        ("reduction_bound", lambda: reduction_bound(st, out["sections"].get("reduction", []))),
        ("scale", lambda: scale_load(st)),
        ("parallel", lambda: parallel_hunt(st)),
        ("cluster", lambda: cluster_hunt(st)),
        ("proof", lambda: proof_rows(st)),
    ]
    for name, fn in steps:
        if name not in want:
            out["sections"][name] = []
            continue
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        t = time.perf_counter()
        try:
            out["sections"][name] = fn()
        except Exception as exc:
            out["sections"][name] = []
            out.setdefault("errors", {})[name] = _err(exc)
        print(f"bench: {name} done in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    out["seconds"] = time.perf_counter() - started
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m bench", description="race-harness benchmarks (issue 6)")
    p.add_argument("--quick", action="store_true", help="about one minute: fewer seeds, smaller caps")
    p.add_argument("--json", default=str(ROOT / "bench" / "results.json"), metavar="PATH",
                   help="where to write the JSON (default bench/results.json)")
    p.add_argument("--markdown", default=None, metavar="PATH", help="also write the tables to PATH (for the README)")
    p.add_argument("--race", action="append", default=None, metavar="RACE", help="only these races (repeatable)")
    args = p.parse_args(argv)
    res = run(quick=args.quick, races=tuple(args.race) if args.race else None)
    text = render(res)
    print(text)
    Path(args.json).write_text(json.dumps(res, indent=2, default=str) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(text)
    print(f"(JSON: {args.json}; {res['seconds']:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
