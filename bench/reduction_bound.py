"""How far any reduction over these races could go: runs of ``exhaustive:k`` under looser independence.

``python -m bench.reduction_bound [--race NAME] [-k K]`` proves each fixed race
clean three times and prints the runs each proof took:

- ``declared``: the referee as shipped. Two actions are independent when
  they belong to different declared processes and touch no common apiserver
  resource that one of them writes (``World.share_memory``), and, inside a
  process that records every access to its memory by key
  (``share_memory(..., recorded=True)``: the garbage collector), when they
  are of different actors and their footprints (informer cache entries, work
  queue items and order, graph nodes, expectations: what the story reads)
  share no key one of them writes. Under every relation, a sibling that moves
  the held action across a jump of virtual time is still searched (the
  referee checks that outside the relation).
- ``per key``: also takes two actions of *any* one process to be independent
  when they are about different object keys (both keys known) and touch no
  common resource. It assumes a model's own memory is partitioned by object
  key, which these models do not promise (their memory is not recorded): an
  upper bound of what recording every model's memory by key could add.
- ``per actor``: every actor its own process; only apiserver resources count.
  Unsound (an informer and the worker that reads its cache are taken to be
  independent); an upper bound on what any footprint-based reduction skips.

The two looser relations replace the referee's dependence check for the
length of one proof and are never used by a search. A verdict that differs
from the ``declared`` one shows an order the looser relation wrongly skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from harness.explore import _exhaustive
from harness.sim import Ident

REDUCTIONS = ("declared", "per key", "per actor")


def _actor_footprint(dep: Any, actor: str) -> dict[object, bool]:
    """Every resource ``actor`` touched in the run -> whether it wrote it (built once per run and actor)."""
    cache: dict[str, dict[object, bool]] = dep.__dict__.setdefault("_by_actor", {})
    fp = cache.get(actor)
    if fp is None:
        fp = cache[actor] = {}
        for ident, touched in dep.footprint.items():
            if ident.actor == actor:
                for res, wrote in touched:
                    fp[res] = fp.get(res, False) or wrote
    return fp


def _conflict(dep: Any, held: Ident, y: Ident) -> bool:
    mine = _actor_footprint(dep, held.actor)
    return any(res in mine and (wrote or mine[res]) for res, wrote in dep.footprint.get(y, ()))


def _per_key(declared: Callable[[Any, Ident, Ident], bool]) -> Callable[[Any, Ident, Ident], bool]:
    def dependent(dep: Any, held: Ident, y: Ident) -> bool:
        px, py = dep.process_of(held.actor), dep.process_of(y.actor)
        if held.actor == y.actor:
            return True
        if px is not None and px == py and held.key is not None and y.key is not None and held.key != y.key:
            return _conflict(dep, held, y)
        return declared(dep, held, y)

    return dependent


def _per_actor(declared: Callable[[Any, Ident, Ident], bool]) -> Callable[[Any, Ident, Ident], bool]:
    def dependent(dep: Any, held: Ident, y: Ident) -> bool:
        return held.actor == y.actor or _conflict(dep, held, y)

    return dependent


@contextlib.contextmanager
def independence(kind: str) -> Iterator[None]:
    """Run the referee under the ``kind`` relation (one of :data:`REDUCTIONS`) inside the block."""
    declared = _exhaustive._Dependence.__call__
    looser = {"per key": _per_key, "per actor": _per_actor}.get(kind)
    try:
        if looser is not None:
            _exhaustive._Dependence.__call__ = looser(declared)  # type: ignore[method-assign]
        yield
    finally:
        _exhaustive._Dependence.__call__ = declared  # type: ignore[method-assign]


def bound(name: str, k: int, cap: int = 200_000, kinds: tuple[str, ...] = ("none", *REDUCTIONS)) -> list[dict[str, Any]]:
    """One proof of ``name`` fixed clean up to ``k`` entries per relation in ``kinds`` ("none": no reduction)."""
    import harness as h
    from races import REGISTRY

    race = REGISTRY[name]
    rows: list[dict[str, Any]] = []
    for kind in kinds:
        t = time.perf_counter()
        with independence(kind):
            r = h.explore(race.scenario, strategy=h.Exhaustive(k, reduce=kind != "none"), budget=cap,
                          prove_minimal=False, faults=race.faults, fixed=True, **race.params)
        rows.append({"race": name, "k": k, "reduction": kind, "runs": r.runs, "verdict": r.verdict,
                     "seconds": time.perf_counter() - t})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reduction_bound", description=__doc__.splitlines()[0])
    parser.add_argument("--race", action="append", help="a registered race (repeatable)")
    parser.add_argument("-k", type=int, default=1, help="plan entries to prove clean up to (default 1)")
    args = parser.parse_args(argv)
    races = args.race or ["kruise_imagepulljob", "volcano_deleted_jobs", "volcano_gang_close"]
    print("| race | k | reduction | runs | fewer than none | verdict | s |")
    print("|---|---|---|---|---|---|---|")
    for name in races:
        rows = bound(name, args.k)
        full = rows[0]["runs"]
        for r in rows:
            print(f"| {r['race']} | {r['k']} | {r['reduction']} | {r['runs']:,} | {full / r['runs']:.2f}x "
                  f"| {r['verdict']} | {r['seconds']:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
