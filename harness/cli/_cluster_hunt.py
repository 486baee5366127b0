"""``hunt --cluster``: the searches as Dask shards (``harness/_cluster.py``); files, lines and index as in process."""

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
    """--cluster and --shards checked with the other options, before any target is imported or searched."""
    if args.cluster is None:
        if args.shards is not None:
            raise UsageError("--shards goes with --cluster (e.g. --cluster local:2 --shards 8); leave it out otherwise")
        return None
    if args.shards is not None and args.shards < 1:
        raise UsageError(f"--shards {args.shards} is not valid: use a whole number >= 1, e.g. --shards 8")
    from .._cluster import parse_cluster

    return parse_cluster(args.cluster)


def _hunt_on_cluster(
    args: argparse.Namespace, spec: Any, targets: list[_Target], budget: Any, out_dir: Path, kept: _Kept
) -> int:
    """The searches on a Dask cluster (harness/_cluster.py); the files, lines and index as in process.

    A sampling search (random, PCT, Hypothesis) is cut into seeded shards, each a
    whole search with its shrink on a worker; the minimality proof of what they
    found runs here, with its referee's shards (and those of the canonical
    representative's pass) on the cluster, once per distinct finding. An ``exhaustive`` or
    ``canonical`` search does not depend on the seed, so it is not repeated
    per shard: its referee runs here and every shard of its levels (and of its
    minimality proof) is a task on the cluster (:class:`~harness._cluster.DaskShards`).
    """
    from .._cluster import _UNSHARDED, ClusterHunt, DaskShards, Search, open_cluster, prove_findings
    from .._shards import DEFAULT_SHARDS
    from ..explore import scenario_ref

    console = None
    if not args.json:
        from rich.console import Console

        console = Console() if sys.stdout.isatty() else Console(width=140)
    searches, order, refereed = [], [], []
    position: dict[tuple[int, str], int] = {}  # the in-process order, kept by the summary and the index
    for t in targets:
        for variant in t.variants:
            position[(id(t), variant)] = len(position)
            strategy = args.strategy or t.strategy
            if getattr(args, "plan_entries", None) is None and (strategy or "").partition(":")[0] in _UNSHARDED:
                refereed.append((t, variant))
                continue
            b = hunting._run_budget(t, budget, strategy)
            searches.append(Search(
                _label(t, variant), scenario_ref(t.scenario), t.params_by_variant[variant], strategy,
                hunting._faults_for(args, t), b.runs, b.seconds,
            ))
            order.append((t, variant))
    entries: list[tuple[int, Any]] = []
    write_failed = False
    with open_cluster(spec) as client:  # an unreachable cluster is a UsageError here: exit 2, nothing searched
        shown = console if console is not None and console.is_terminal else None
        for t, variant in refereed:
            if stop_requested():
                break
            shards = DaskShards(client)
            live = hunting._LiveProgress(console) if shown is not None else None
            entry, failed = hunting._hunt_one(t, variant, args, budget, out_dir, console, live, kept,
                                              shard_runner=shards)
            entries.append((position[(id(t), variant)], entry))
            kept.searches += 1
            write_failed = write_failed or failed
            if console is not None and shards.costs:
                console.print(f"    {shards.describe()}", markup=False, highlight=False)
        if searches and not stop_requested():
            hunt = ClusterHunt(client, searches, args.seed, args.shards or DEFAULT_SHARDS, shown)
            if console is not None:
                console.print(f"cluster {spec}: {_n(hunt.workers, 'worker')}, {_n(len(hunt.shards), 'shard')} "
                              f"of {_n(len(searches), 'search', 'searches')}", markup=False, highlight=False)
            for sharded in hunt.results():
                t, variant = order[sharded.search]
                # the shards shrank; the minimality proof of each finding runs here, its shards on the cluster
                proof = prove_findings(sharded, t.scenario, client, getattr(args, "proof_budget", 5000))
                if console is not None and proof.costs:
                    console.print(f"    minimality proof: {proof.describe()}", markup=False, highlight=False)
                entry, failed = hunting._hunt_one(t, variant, args, budget, out_dir, console, None, kept,
                                                  result=sharded.result)
                entries.append((position[(id(t), variant)], entry))
                kept.searches += 1
                write_failed = write_failed or failed
                if console is not None:
                    for f in sharded.findings:
                        shards_of = ", ".join(map(str, f.shards))
                        console.print(f"    signature {f.signature}: found by {_n(len(f.shards), 'shard')} of "
                                      f"{sharded.shards} ({shards_of})", markup=False, highlight=False)
                for f in sharded.findings[1:]:  # another bug in the same search: its own trace, nothing lost
                    if not _save_other(f.counterexample, out_dir, entry, f.signature, kept, console):
                        write_failed = True
    ordered = [entry for _pos, entry in sorted(entries, key=lambda pe: pe[0])]
    return hunting._hunt_end(args, targets, ordered, out_dir, console, kept, stop_requested(), write_failed)


def _save_other(cx: Any, out_dir: Path, entry: Any, sig: str, kept: _Kept, console: Any) -> bool:
    """A second distinct failure of one search (another shard's): saved beside the first, named by signature."""
    stem = Path(entry.json_path).stem if entry.json_path else "finding"
    path = out_dir / f"{stem}-{sig[:8]}.json"
    cx.meta.update(race=entry.name, variant=entry.variant, known_open=entry.known_open, upstream=entry.upstream)
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
