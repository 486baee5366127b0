"""``hunt --cluster`` and a hunt of OS processes: the searches as shards on Dask (``harness/_cluster.py``) or on a
pool of worker processes here (``harness/_pool.py``); files, lines and index as in process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._errors import UsageError
from .._interrupt import stop_requested
from .._terminal import printable
from . import _hunt as hunting
from ._common import _n, _one_line
from ._hunt import _Kept
from ._targets import _label, _Target


def _check_cluster(args: argparse.Namespace) -> Any:
    """--cluster, --shards and --workers checked with the other options, before any target is imported or searched."""
    if args.shards is not None and args.shards < 1:
        raise UsageError(f"--shards {args.shards} is not valid: use a whole number >= 1, e.g. --shards 8")
    workers = getattr(args, "workers", None)
    if workers is not None and workers < 1:
        raise UsageError(f"--workers {workers} is not valid: use a whole number >= 1 (1: one core, no worker "
                         "process), e.g. --workers 2")
    if args.cluster is None:
        return None
    if workers is not None:
        raise UsageError("--workers is for a hunt on this machine; on a cluster its workers are Dask's: use "
                         "--cluster local:N for N workers here, or leave --workers out")
    from .._cluster import parse_cluster

    return parse_cluster(args.cluster)


#: the programs outside the world by the names of the classes that wait for them, where the class is not the word
_OUTSIDE_WORDS = {"Calls": "admission webhook server"}


def _outside_searches(args: argparse.Namespace, targets: list[_Target]) -> dict[tuple[int, str], str]:
    """The searches whose subject runs a program outside the world (an OS process): (target, variant) -> what.

    A test command (``hunt-test``) always is one. A scenario whose module uses ``harness.operators``'
    processes (:func:`_may_run_processes`) is probed: its canonical run up to the first program outside it
    would start (``harness.sim._driver.waits_for_outside``), so a variant or a parameter that starts none
    stays in process. Any other scenario is not run an extra time: a model in process searches as before.
    A hand-written ``--plan`` is one run: nothing to share among workers.
    """
    if getattr(args, "plan_entries", None) is not None:
        return {}
    if getattr(args, "test_command", None):
        return {(id(t), v): "a test command" for t in targets for v in t.variants}
    from ..sim._driver import waits_for_outside

    found = {}
    for t in targets:
        for v in t.variants:
            if not _may_run_processes(t.scenario):
                continue
            what = waits_for_outside(t.scenario, params=dict(t.params_by_variant[v]))
            if what is not None:
                what = _OUTSIDE_WORDS.get(what, what)
                found[(id(t), v)] = f"an {what}" if what[:1] in "AEIOU" else f"a {what}"
    return found


def _may_run_processes(scenario: Any) -> bool:
    """Whether the scenario's module holds ``harness.operators``' process classes (``ExternalOperator``, ``TestProcess``,
    a subclass) or the package itself: read from its globals, so nothing is imported or run to say no.

    A scenario that reaches them only through a module of its own is searched in process (as before: slower,
    the same verdicts); the header line of a hunt says when its searches went to workers.
    """
    import inspect

    module = sys.modules.get(getattr(inspect.unwrap(scenario), "__module__", "") or "")
    for value in vars(module).values() if module is not None else ():
        if inspect.ismodule(value) and value.__name__.startswith("harness.operators"):
            return True
        if inspect.isclass(value) and any(
            c.__module__ == "harness.operators._external" and c.__name__ == "ExternalOperator" for c in value.__mro__
        ):
            return True
    return False


def _hunt_on_cluster(
    args: argparse.Namespace, spec: Any, targets: list[_Target], budget: Any, out_dir: Path, kept: _Kept
) -> int:
    """The searches on a Dask cluster (harness/_cluster.py); the files, lines and index as in process."""
    from .._cluster import open_cluster
    from .._shards import DEFAULT_SHARDS

    console = _console(args)
    with open_cluster(spec) as client:  # an unreachable cluster is a UsageError here: exit 2, nothing searched
        entries, write_failed = _hunt_sharded(
            args, client, console, targets, budget, out_dir, kept, shards=args.shards or DEFAULT_SHARDS, where="the cluster",
            header=lambda workers, shards, searches: f"cluster {spec}: {_n(workers, 'worker')}, "
            f"{_n(shards, 'shard')} of {_n(searches, 'search', 'searches')}",
        )
    return hunting._hunt_end(args, targets, entries, out_dir, console, kept, stop_requested(), write_failed)


def _hunt_on_pool(
    args: argparse.Namespace, outside: dict[tuple[int, str], str], targets: list[_Target], budget: Any, out_dir: Path,
    kept: _Kept,
) -> int:
    """The searches of OS processes in shards on every core (harness/_pool.py); the others in process, as ever."""
    from .._pool import open_pool, usable_cores
    from .._shards import DEFAULT_SHARDS

    cores = usable_cores()
    workers = args.workers or cores
    shards = args.shards or max(DEFAULT_SHARDS, cores)  # the machine's, never --workers': the same shards for any N
    what = sorted(set(outside.values()))

    def header(pool_workers: int, planned: int, searches: int) -> str:
        runs = "is a test command" if "a test command" in what else "runs " + " and ".join(what)
        where = "this process" if pool_workers == 1 else "--workers 1 for one core"
        return (f"{_n(searches, 'search', 'searches')} in {_n(planned, 'shard')} on {_n(pool_workers, 'worker')}: "
                f"the scenario {runs} (real clock; {where})")

    console = _console(args)
    with open_pool(workers) as pool:
        entries, write_failed = _hunt_sharded(
            args, pool, console, targets, budget, out_dir, kept, shards=shards,
            where=f"{_n(pool.workers, 'worker')} here", header=header,
            sharded=lambda t, variant: (id(t), variant) in outside,
        )
    return hunting._hunt_end(args, targets, entries, out_dir, console, kept, stop_requested(), write_failed)


def _console(args: argparse.Namespace) -> Any:
    """The hunt's console, None with --json (piped or in CI: 140 columns, as the hunt in process)."""
    if args.json:
        return None
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=140)


def _hunt_sharded(
    args: argparse.Namespace, client: Any, console: Any, targets: list[_Target], budget: Any, out_dir: Path,
    kept: _Kept, *, shards: int, where: str, header: Any, sharded: Any = None,
) -> tuple[list[Any], bool]:
    """The searches as shards on ``client`` (a Dask client, or a pool with its interface); (entries, a write failed).

    A sampling search (random, PCT, Hypothesis, a portfolio) is cut into seeded shards, each a
    whole search with its shrink on a worker; the minimality proof of what they
    found runs here, with its referee's shards (and those of the canonical
    representative's pass) on the workers, once per distinct finding. An ``exhaustive`` or
    ``canonical`` search does not depend on the seed, so it is not repeated
    per shard: its referee runs here and every shard of its levels (and of its
    minimality proof) is a task on a worker (:class:`~harness._cluster.DaskShards`).
    ``sharded(t, variant)``: whether that search goes to the workers (default: all); the others run here.
    """
    from .._cluster import ClusterHunt, DaskShards, Search, _strategy_name, prove_findings
    from ..explore import scenario_ref

    searches, order, refereed, local = [], [], [], []
    position: dict[tuple[int, str], int] = {}  # the in-process order, kept by the summary and the index
    options: dict[str, Any] = {}
    if getattr(args, "test_command", None):
        options["canonical_first"] = True
    if hasattr(args, "shrink_budget"):
        options["shrink_budget"] = args.shrink_budget
    for t in targets:
        for variant in t.variants:
            position[(id(t), variant)] = len(position)
            if sharded is not None and not sharded(t, variant):
                local.append((t, variant))
                continue
            strategy = args.strategy or t.strategy
            if getattr(args, "plan_entries", None) is None and _strategy_name(strategy) in ("exhaustive", "canonical"):
                refereed.append((t, variant))
                continue
            b = hunting._run_budget(t, budget, strategy)
            searches.append(Search(
                _label(t, variant), scenario_ref(t.scenario), t.params_by_variant[variant], strategy,
                hunting._faults_for(args, t), b.runs, b.seconds, options=dict(options),
            ))
            order.append((t, variant))
    entries: list[tuple[int, Any]] = []
    write_failed = False
    shown = console if console is not None and console.is_terminal else None
    for t, variant in local:  # (in process, as a hunt without workers searches them)
        if stop_requested():
            break
        live = hunting._LiveProgress(console) if shown is not None else None
        entry, failed = hunting._hunt_one(t, variant, args, budget, out_dir, console, live, kept)
        entries.append((position[(id(t), variant)], entry))
        kept.searches += 1
        write_failed = write_failed or failed
    for t, variant in refereed:
        if stop_requested():
            break
        referee = DaskShards(client, where)
        live = hunting._LiveProgress(console) if shown is not None else None
        entry, failed = hunting._hunt_one(t, variant, args, budget, out_dir, console, live, kept,
                                          shard_runner=referee)
        entries.append((position[(id(t), variant)], entry))
        kept.searches += 1
        write_failed = write_failed or failed
        if console is not None and referee.costs:
            console.print(f"    {referee.describe()}", markup=False, highlight=False)
    if searches and not stop_requested():
        hunt = ClusterHunt(client, searches, args.seed, shards, shown)
        if console is not None:
            console.print(header(hunt.workers, len(hunt.shards), len(searches)), markup=False, highlight=False)
        for sharded_result in hunt.results():
            t, variant = order[sharded_result.search]
            # the shards shrank; the minimality proof of each finding runs here, its shards on the workers
            proof = prove_findings(sharded_result, t.scenario, client, getattr(args, "proof_budget", 5000), where)
            if console is not None and proof.costs:
                console.print(f"    minimality proof: {proof.describe()}", markup=False, highlight=False)
            entry, failed = hunting._hunt_one(t, variant, args, budget, out_dir, console, None, kept,
                                              result=sharded_result.result)
            entries.append((position[(id(t), variant)], entry))
            kept.searches += 1
            write_failed = write_failed or failed
            if console is not None:
                for f in sharded_result.findings:
                    shards_of = ", ".join(map(str, f.shards))
                    console.print(f"    signature {f.signature}: found by {_n(len(f.shards), 'shard')} of "
                                  f"{sharded_result.shards} ({shards_of})", markup=False, highlight=False)
            for f in sharded_result.findings[1:]:  # another bug in the same search: its own trace, nothing lost
                if not _save_other(f.counterexample, out_dir, entry, f.signature, kept, console):
                    write_failed = True
    return [entry for _pos, entry in sorted(entries, key=lambda pe: pe[0])], write_failed


def _save_other(cx: Any, out_dir: Path, entry: Any, sig: str, kept: _Kept, console: Any) -> bool:
    """A second distinct failure of one search (another shard's): saved beside the first, named by signature."""
    stem = Path(entry.json_path).stem if entry.json_path else "finding"
    path = out_dir / f"{stem}-{sig[:8]}.json"
    cx.meta.update(race=entry.name, variant=entry.variant, known_open=entry.known_open, upstream=entry.upstream)
    hunting._copy_scenario_file(cx, path.with_suffix(".py"), entry.name)  # (replayable where the first one is)
    try:
        cx.save(path)
    except (OSError, UsageError) as exc:
        print(f"error: could not write {path} ({_one_line(exc)})", file=sys.stderr)
        return False
    kept.traces.append(str(path))
    if console is not None:
        console.print(printable(f"    another failure of {entry.name}: {cx.violation.describe()}; trace {path}"),
                      markup=False, highlight=False)
    return True
