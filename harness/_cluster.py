"""``hunt --cluster``: the searches of a hunt as shards on a Dask distributed cluster.

A team hunting a rare interleaving over a weekend, or a CI farm, outgrows the
cores of one machine. Dask's distributed scheduler already is the Python
ecosystem's engine for that (a scheduler, workers on many machines, a task
re-run when its worker dies, a dashboard), so the harness grows no pool or
protocol of its own: each search (target, variant) is cut into shards, one Dask
task each, that run :func:`harness.explore` on a worker and send back the
counterexample's JSON and the search's counts. Only this process, the client,
writes traces, reports and the index.

Determinism: a shard's seed is :func:`harness._shards.shard_seed` of the hunt
seed and the shard index and its slice of a run budget is fixed by the shard
count (``--shards``, never the worker count), so ``local:1``, ``local:2`` and a
farm run the same shards to the same results, and a shard re-run after its
worker was killed finds what it would have found. Every shard shrinks what it
finds; the client proves each distinct finding minimal (:func:`prove_findings`),
the waves of its referee on the cluster as an exhaustive search's are, so the
findings and their trace digests are the canonical minima the in-process hunt
reports; findings are grouped by :meth:`Counterexample.signature`, as the
pytest plugin's ``--race-hunt`` does.

Dask is imported only in :func:`open_cluster`, and only under ``--cluster``: the core
keeps no dependency on it (``pip install 'race-harness[cluster]'``). A hunt whose
subject runs OS processes runs the same shards on a pool of processes on this
machine (``harness/_pool.py``), which has the part of Dask's client used here.

Rejected: ``client.map`` over the whole hunt and ``gather`` at the end -- one
lost shard would take every finding with it and Ctrl-C would keep nothing;
futures are collected one by one and each search is reported when its shards
are in.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import logging
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import UsageError
from ._interrupt import stop_requested
from ._shards import shard_seed, split_runs

#: the accepted --cluster forms, as every message about them states them
CLUSTER_FORMS = (
    "--cluster tcp://HOST:PORT (the address a running `dask scheduler` prints) or --cluster local:N "
    "(start N worker processes on this machine)"
)

#: seconds to reach a scheduler and to see its first worker before the hunt gives up (exit 2, nothing searched)
CONNECT_TIMEOUT = 10.0

#: strategies whose search does not depend on the seed: a shard of them would repeat the others' runs
_UNSHARDED = ("exhaustive", "canonical")

_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class ClusterSpec:
    """A checked ``--cluster`` value: a scheduler's address, or a local cluster of ``workers`` processes."""

    address: str | None
    workers: int | None

    def __str__(self) -> str:
        return self.address if self.address is not None else f"local:{self.workers}"


def parse_cluster(text: str) -> ClusterSpec:
    """``local:2`` or ``tcp://10.0.0.5:8786``; anything else is a UsageError (checked before any search)."""
    value = text.strip()
    m = re.fullmatch(r"local:([1-9]\d{0,3})", value)
    if m:
        return ClusterSpec(None, int(m.group(1)))
    if re.fullmatch(r"(tcp|tls)://[^\s/]+:\d{1,5}", value):
        return ClusterSpec(value, None)
    raise UsageError(f"--cluster {text!r} is not valid: use {CLUSTER_FORMS}")


@dataclass(frozen=True)
class Search:
    """One search of the hunt as the client plans it: what a shard needs to run it anywhere."""

    label: str
    scenario: str  # scenario_ref: resolved on the worker from the module or file it names
    params: dict[str, Any]
    strategy: Any  # a strategy's name, or a Strategy (hunt-test's portfolio in short turns): its seed is the shard's
    faults: Any  # a fault spec as explore() takes it (a string, a frozenset or None)
    runs: int | None
    seconds: float | None
    #: the shard shrinks what it finds and leaves the minimality proof to the client, which runs it with its
    #: referee's shards on the cluster (:func:`prove_findings`); False: each shard proves on its worker
    prove_on_client: bool = True
    #: explore()'s other options: shrink_budget, and canonical_first (shard 0 only: the canonical order is the same
    #: run in every shard, so one of them runs it)
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of search ``search``: its seed and its slice of the budget."""

    search: int
    index: int
    seed: int
    runs: int | None
    seconds: float | None


def plan_shards(searches: list[Search], seed: int, shards: int, workers: int) -> list[Shard]:
    """Every shard of the hunt, search by search, in a fixed order.

    A run budget is split among the shards; a time budget gives every shard
    ``seconds * workers / shards``, so the hunt takes about as long as the
    in-process one and explores about ``workers`` times as much.
    """
    out: list[Shard] = []
    for i, s in enumerate(searches):
        name = _strategy_name(s.strategy)
        count = 1 if name in _UNSHARDED else shards
        if s.runs is not None:
            for k, runs in enumerate(split_runs(s.runs, count)):
                out.append(Shard(i, k, shard_seed(seed, k), runs, s.seconds))
        else:
            seconds = (s.seconds or 1.0) * (workers if count > 1 else 1) / count
            out.extend(Shard(i, k, shard_seed(seed, k), None, seconds) for k in range(count))
    return out


def _strategy_name(strategy: Any) -> str:
    if strategy is None or isinstance(strategy, str):
        return (strategy or "").partition(":")[0].strip()
    return str(getattr(strategy, "name", ""))


def run_shard(search: Search, shard: Shard) -> dict[str, Any]:
    """What a worker runs: one shard's search, returned as JSON-able data (Dask pickles nothing else of ours).

    Module-level so Dask sends it by reference: the worker imports this
    harness, and the scenario from the module or file its reference names.
    """
    from .explore import Budget, explore
    from .explore._counterexample import resolve_scenario

    scenario = resolve_scenario(search.scenario)
    strategy = search.strategy
    if dataclasses.is_dataclass(strategy) and not isinstance(strategy, type) and hasattr(strategy, "seed"):
        strategy = dataclasses.replace(strategy, seed=shard.seed)  # a strategy made with the hunt's seed: the shard's
    options: dict[str, Any] = {"strategy": strategy} if strategy else {}
    options.update(search.options)
    if shard.index != 0:
        options.pop("canonical_first", None)
    result = explore(
        scenario,
        **options,
        budget=Budget(runs=shard.runs, seconds=shard.seconds),
        seed=shard.seed,
        faults=search.faults,
        prove_minimal=not search.prove_on_client,
        **search.params,
    )
    cx = result.counterexample
    return {
        "verdict": result.verdict,
        "runs": result.runs,
        "steps": result.steps,
        "seconds": result.seconds,
        "live_seconds": result.live_seconds,
        "strategy": result.strategy,
        "found_by": result.found_by,
        "space": result.space,
        "faults_injected": dict(result.faults_injected),
        "notes": list(result.notes),
        "runaway": result.runaway,
        "model_error": result.model_error,
        "pct_bound": result.pct_bound,
        "proved_bound": result.proved_bound,
        "counterexample": None if cx is None else cx.to_json(),
    }


def warm_worker(scenarios: list[str]) -> list[str]:
    """Import the harness and every scenario's module on a worker before the hunt's clock starts.

    A worker process starts cold; without this, its first shard pays for
    importing Trio, Hypothesis and the models inside the search. Returns what
    could not be resolved (the shard that needs it then fails with the usual
    message), so a warm-up never raises.
    """
    from .explore import explore  # noqa: F401  (the import is the point)
    from .explore._counterexample import resolve_scenario

    failed = []
    for ref in scenarios:
        try:
            resolve_scenario(ref)
        except Exception as exc:  # reported by the shard that needs it
            failed.append(f"{ref}: {type(exc).__name__}")
    return failed


# ------------------------------------------------------------------ the client's side
@dataclass
class Finding:
    """One distinct failure of a search: its signature, the shards that found it and its first counterexample."""

    signature: str
    shards: list[int]
    seeds: list[int]
    counterexample: Any


@dataclass
class ShardedResult:
    """A search's shards folded into one :class:`harness.explore.Result`, and its distinct findings."""

    search: int  # its index in the hunt's order
    result: Any
    shards: int
    shards_done: int
    findings: list[Finding] = field(default_factory=list)


def merge(index: int, search: Search, planned: list[Shard], payloads: dict[int, dict[str, Any]], seconds: float,
          interrupted: bool) -> ShardedResult:
    """Fold the shards that came back: the counterexample with the fewest deviations (then steps, then the
    lowest shard) stands for the search, and every other signature is kept as a finding of its own."""
    from .explore import Counterexample, Result

    findings: dict[str, Finding] = {}
    best: tuple[int, int, int, Any] | None = None
    by_shard: dict[int, Any] = {}
    with tempfile.TemporaryDirectory(prefix="race-harness-shards-") as tmp:
        for k in sorted(payloads):
            raw = payloads[k]["counterexample"]
            if raw is None:
                continue
            path = Path(tmp) / f"shard{k}.json"
            path.write_text(json.dumps(raw), encoding="utf-8")
            cx = Counterexample.load(path)  # the checks of any trace file: a worker is another machine
            by_shard[k] = cx
            sig = cx.signature()
            f = findings.setdefault(sig, Finding(sig, [], [], cx))
            f.shards.append(k)
            f.seeds.append(cx.seed if cx.seed is not None else 0)
            if best is None or (cx.deviations, cx.steps, k) < best[:3]:
                best = (cx.deviations, cx.steps, k, cx)
    done = [payloads[k] for k in sorted(payloads)]
    first = payloads[best[2]] if best is not None else (done[0] if done else {})
    cut = interrupted or len(done) < len(planned) or any(p["verdict"] == "interrupted" for p in done)
    proved = [p["proved_bound"] for p in done if p["verdict"] == "proved-clean"]
    # a shard that met the model's own failure, or a run that never ends, speaks for the search: never the race
    broken_k = next((k for k in sorted(payloads) if payloads[k]["verdict"] in ("model-error", "runaway")), None)
    broken = payloads[broken_k] if broken_k is not None else None
    if broken_k is not None and broken_k in by_shard:
        first, best = payloads[broken_k], (0, 0, broken_k, by_shard[broken_k])
    verdict = (
        "interrupted" if cut
        else str(broken["verdict"]) if broken is not None
        else "found" if best is not None
        else "proved-clean" if done and len(proved) == len(done)
        else "none-found"
    )
    result = Result(
        scenario=search.scenario,
        params=dict(search.params),
        strategy=str(first.get("strategy", search.strategy or "")),
        verdict=verdict,
        runs=sum(int(p["runs"]) for p in done),
        steps=sum(int(p["steps"]) for p in done),
        seconds=seconds,
        # the real seconds every shard's runs waited for operator processes (the line says the hunt used them)
        live_seconds=sum(float(p.get("live_seconds", 0.0)) for p in done),
        counterexample=None if best is None else best[3],
        runaway=first.get("runaway") if broken is not None else None,
        model_error=first.get("model_error") if broken is not None else None,
        proved_bound=min(proved) if verdict == "proved-clean" else None,
        pct_bound=first.get("pct_bound"),
        notes=list(first.get("notes", [])),
        found_by=first.get("found_by"),
        space=_summed_space(str(first.get("space", "")), done),
    )
    ordered = sorted(findings.values(), key=lambda f: f.shards[0])
    return ShardedResult(index, result, len(planned), len(done), ordered)


def _summed_space(space: str, done: list[dict[str, Any]]) -> str:
    """The first shard's space with the faults every shard injected, summed (each shard counted its own)."""
    import re

    from .explore._runner import injected_words

    counts: dict[str, int] = {}
    for p in done:
        for kind, n in dict(p.get("faults_injected") or {}).items():
            counts[kind] = counts.get(kind, 0) + int(n)
    return re.sub(r", [\d,]+ injected(?:: [a-z_]+ [\d,]+(?:, [a-z_]+ [\d,]+)*)?", lambda _m: injected_words(counts),
                  space, count=1)


def prove_findings(sharded: ShardedResult, scenario: Any, client: Any, proof_budget: int = 5000,
                   where: str = "the cluster") -> DaskShards:
    """Prove each finding of a search minimal here, its referee's shards on the cluster; findings that prove to
    one canonical minimum become one (their shards together). Returns the shard runner (its costs).

    ``proof_budget`` is ``--proof-budget``: runs per entry and per worker (see :class:`DaskShards`)."""
    from .explore import prove_found

    shards = DaskShards(client, where)
    merged: dict[str, Finding] = {}
    result = sharded.result
    for f in sharded.findings:
        if stop_requested():
            merged.setdefault(f.signature, f)
            continue
        was = f.counterexample
        cx, runs = prove_found(scenario, was, proof_budget=proof_budget, shard_runner=shards)
        result.runs += runs
        result.proof_runs = (result.proof_runs or 0) + runs
        if result.counterexample is was:
            result.counterexample = cx
            result.notes = [n for n in result.notes if n != "minimality not checked"]
            if cx.proved_minimal is None and cx.proof:
                result.notes.append(cx.proof)
        sig = cx.signature()
        if sig in merged:
            merged[sig].shards.extend(f.shards)
            merged[sig].seeds.extend(f.seeds)
        else:
            merged[sig] = Finding(sig, list(f.shards), list(f.seeds), cx)
    sharded.findings = list(merged.values())
    return shards


@contextmanager
def open_cluster(spec: ClusterSpec) -> Iterator[Any]:
    """A connected ``distributed.Client`` with at least one worker; every failure is one UsageError (exit 2).

    A local cluster binds the scheduler and its workers to 127.0.0.1 (nothing
    listens on the network) and keeps Dask's logs to errors, so the hunt's
    output stays the hunt's.
    """
    try:  # by name: mypy checks this module whether or not the extra is installed
        distributed: Any = importlib.import_module("distributed")
    except ImportError:
        raise UsageError(
            "--cluster needs Dask distributed, which is not installed; install it with "
            "pip install 'race-harness[cluster]' (in a checkout: pip install -e '.[cluster]')"
        ) from None

    dask_log = logging.getLogger("distributed")
    level = dask_log.level
    dask_log.setLevel(logging.ERROR)
    cluster: Any = None
    client: Any = None
    try:
        if spec.address is None:
            try:
                cluster = distributed.LocalCluster(
                    n_workers=spec.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    # no dashboard, and its HTTP endpoints on a free port: a second hunt must not clash on 8787
                    dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                    silence_logs=logging.ERROR,
                )
            except Exception as exc:
                raise UsageError(
                    f"--cluster {spec}: could not start {spec.workers} local Dask workers ({type(exc).__name__}: "
                    f"{exc}); use fewer (local:1), or start a scheduler and workers yourself and pass --cluster "
                    "tcp://HOST:PORT"
                ) from None
            address = cluster.scheduler_address
        else:
            address = spec.address
        try:
            client = distributed.Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"--cluster {spec}: no Dask scheduler answered there within {CONNECT_TIMEOUT:g} s "
                f"({type(exc).__name__}: {' '.join(str(exc).split()) or 'no answer'}); nothing was searched. "
                "Start one with `dask scheduler` on that machine (it prints its tcp:// address) and workers "
                "with `dask worker tcp://HOST:8786` on each machine, check the host, port and firewall, or hunt "
                "on this machine with --cluster local:N"
            ) from None
        try:
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise UsageError(
                f"--cluster {spec}: the scheduler answered but has no worker after {CONNECT_TIMEOUT:g} s "
                f"({type(exc).__name__}); nothing was searched. Start workers with `dask worker {address}` on the "
                "machines that should search"
            ) from None
        yield client
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        dask_log.setLevel(level)


class ClusterHunt:
    """The shards of a hunt, submitted at once; :meth:`results` hands back each search in order, merged.

    Each search is reported as soon as its own shards and those of the searches
    before it are in, so the output and the index keep the in-process order. A
    shard whose worker died is re-run by Dask on another worker; what the other
    shards found is already here. On Ctrl-C the futures still out are cancelled
    and every search that got any shard back is reported as interrupted.
    """

    def __init__(self, client: Any, searches: list[Search], seed: int, shards: int, console: Any = None) -> None:
        self.client = client
        self.searches = searches
        self.workers = max(1, sum(client.nthreads().values()))
        self.shards = plan_shards(searches, seed, shards, self.workers)
        # every worker imports what the shards need now, so the hunt's seconds are search, not start-up
        try:
            client.run(warm_worker, sorted({s.scenario for s in searches}))
        except Exception:  # best effort: a worker lost here is the shards' business (Dask re-runs them)
            pass
        self.started = time.perf_counter()
        self.progress = _ShardProgress(console, searches, self.shards) if console is not None else None
        self.futures: dict[Any, Shard] = {
            client.submit(run_shard, searches[s.search], s, pure=False): s for s in self.shards
        }
        self.payloads: dict[int, dict[int, dict[str, Any]]] = {i: {} for i in range(len(searches))}
        self.finished_at: dict[int, float] = {}

    def _collect(self) -> None:
        for fut in [f for f in self.futures if f.done()]:
            if fut.status != "finished" and stop_requested():
                continue  # (a worker stopped meanwhile: the stop's own end collects what came back)
            shard = self.futures.pop(fut)
            payload = fut.result()  # a shard that raised raises here, as the in-process search would
            self.payloads[shard.search][shard.index] = payload
            if self.progress is not None:
                self.progress.advance(shard, int(payload["runs"]))
            if len(self.payloads[shard.search]) == self._planned(shard.search):
                self.finished_at[shard.search] = time.perf_counter() - self.started

    def _planned(self, search: int) -> int:
        return sum(1 for s in self.shards if s.search == search)

    def results(self) -> Iterator[ShardedResult]:
        """Each search in order; after Ctrl-C, only those that got a shard back (as interrupted), then stops."""
        try:
            for i in range(len(self.searches)):
                while i not in self.finished_at and not stop_requested():
                    self._collect()
                    if i not in self.finished_at:
                        time.sleep(_POLL_SECONDS)
                if stop_requested():
                    self._cancel()
                    for j in range(i, len(self.searches)):
                        if self.payloads[j]:
                            yield self._merge(j, interrupted=j not in self.finished_at)
                    return
                yield self._merge(i, interrupted=False)
        finally:
            self._cancel()
            if self.progress is not None:
                self.progress.stop()

    def _merge(self, i: int, *, interrupted: bool) -> ShardedResult:
        planned = [s for s in self.shards if s.search == i]
        seconds = self.finished_at.get(i, time.perf_counter() - self.started)
        return merge(i, self.searches[i], planned, self.payloads[i], seconds, interrupted)

    def _cancel(self) -> None:
        if self.futures:
            self._collect_quietly()
            self.client.cancel(list(self.futures))
            self.futures.clear()

    def _collect_quietly(self) -> None:
        """What came back before the cancel is kept; a shard that failed meanwhile is dropped, not raised."""
        for fut in [f for f in self.futures if f.done()]:
            shard = self.futures.pop(fut)
            if fut.status == "finished":
                self.payloads[shard.search][shard.index] = fut.result()


class _ShardProgress:
    """A rich live row per search (shards done, runs explored) on an interactive terminal only; transient."""

    def __init__(self, console: Any, searches: list[Search], shards: list[Shard]) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("shards, {task.fields[runs]:,} runs explored"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._runs = [0] * len(searches)
        self._tasks = [
            self._progress.add_task(s.label, total=sum(1 for sh in shards if sh.search == i), runs=0)
            for i, s in enumerate(searches)
        ]
        self._progress.start()

    def advance(self, shard: Shard, runs: int) -> None:
        self._runs[shard.search] += runs
        self._progress.update(self._tasks[shard.search], advance=1, runs=self._runs[shard.search])

    def stop(self) -> None:
        self._progress.stop()


# ------------------------------------------------------------------ the referee's shards on the cluster
def run_referee_shard(scenario: str, job: Any, plans: list[Any]) -> tuple[list[tuple[Any, bool]], float]:
    """What a worker runs for one shard of the exhaustive referee: its plans in order, batched in one ``trio.run``.

    Returns each plan's report without its run (a run's trace is not sent back: it is large, and the
    client re-runs the one plan it needs, deterministically), flagged when the report had one (the
    accepted plan, a runaway); the shard stops there, as in process; and the shard's seconds.
    """
    from .explore._counterexample import resolve_scenario
    from .explore._exhaustive import run_plans

    started = time.perf_counter()
    reports = run_plans(resolve_scenario(scenario), job, plans, lambda rep: rep.outcome is None)
    out = [(dataclasses.replace(rep, outcome=None), rep.outcome is not None) for rep in reports]
    return out, time.perf_counter() - started


class DaskShards:
    """The referee's shards of a wave as Dask tasks (a :class:`~harness.explore._exhaustive.ShardRunner`).

    Every shard of a wave is submitted at once; the reports are handed to the referee in plan order,
    shard after shard, so the first failing plan in the referee's order wins even when a later shard
    finishes first, and the count of plans run to the verdict is the in-process one. Once the referee
    stops (a plan accepted, the budget spent, Ctrl-C), the shards still running are cancelled. A
    shard whose worker died is re-run by Dask's scheduler on another worker: it costs that shard's
    time, not the proof. ``costs`` notes each shard's (wave, plans, seconds), as
    :class:`~harness.explore._exhaustive.InProcessShards` does.
    """

    def __init__(self, client: Any, where: str = "the cluster") -> None:
        self.client = client
        self.where = where
        self.costs: list[tuple[int, int, float]] = []
        self._wave = 0
        #: the worker threads connected now: a minimality proof's budget is this many times ``--proof-budget``
        #: (a budget per worker, so that a proof on more workers reaches further in the same wall time)
        self.workers = max(1, sum(client.nthreads().values()))

    def describe(self) -> str:
        """One line on where the referee's runs went: shards, waves, and the largest shard against the mean."""
        return describe_shard_costs(self.costs, self.where)

    def run_wave(
        self, scenario: Any, job: Any, shards: list[list[Any]], on_report: Any, should_stop: Any,
    ) -> None:
        from .explore import scenario_ref
        from .explore._exhaustive import run_plans

        self._wave += 1
        ref = scenario_ref(scenario)
        pending = [(self.client.submit(run_referee_shard, ref, job, plans, pure=False), plans) for plans in shards]
        try:
            i = 0
            while i < len(pending):
                fut, plans = pending[i]
                while not fut.done():
                    if should_stop() or stop_requested():
                        return
                    time.sleep(_POLL_SECONDS / 5)
                reports, seconds = fut.result()
                self.costs.append((self._wave, len(reports), seconds))
                for k, (rep, had_run) in enumerate(reports):
                    if had_run:  # the accepted plan (or a runaway): its run, again, here
                        [rep] = run_plans(scenario, job, [rep.plan], lambda _rep: True)
                        if rep.outcome is None:  # an OS process's timing is the OS's: one more try
                            [rep] = run_plans(scenario, job, [rep.plan], lambda _rep: True)
                        rest = plans[k + 1:]
                        if rep.outcome is None and rest:
                            # It failed there and twice not here: not a failing plan (it fails twice in a
                            # row); the worker stopped its shard at it, so the shard's other plans run now,
                            # reported next, in plan order.
                            more = self.client.submit(run_referee_shard, ref, job, rest, pure=False)
                            pending.insert(i + 1, (more, rest))
                    if not on_report(rep):
                        return
                i += 1
        finally:
            for fut, _plans in pending:
                if not fut.done():
                    fut.cancel()


def describe_shard_costs(costs: list[tuple[int, int, float]], where: str = "the cluster") -> str:
    """"referee on the cluster: 412 shards in 9 waves, 38.2 s of runs, the largest shard 3.1x the mean"."""
    if not costs:
        return f"referee on {where}: no shard ran"
    seconds = [c[2] for c in costs]
    mean = sum(seconds) / len(seconds)
    waves = len({c[0] for c in costs})
    ratio = f", the largest shard {max(seconds) / mean:.1f}x the mean" if mean > 0 else ""
    return (f"referee on {where}: {len(costs):,} shard{'s' if len(costs) != 1 else ''} in {waves:,} "
            f"wave{'s' if waves != 1 else ''}, {sum(seconds):.1f} s of runs{ratio}")
