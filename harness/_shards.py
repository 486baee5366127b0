"""How a hunt is cut into shards: their seeds and their slices of the budget, on any process.

The pytest plugin (``--race-hunt``, over pytest-xdist) and ``hunt --cluster``
(over Dask) split a search the same way: a shard's seed is a hash of the hunt's
seed and the shard's name, never of the worker, the process or the order in
which shards finish, so the same ``--seed`` finds the same counterexamples
however many workers run it, and a shard re-run after its worker died finds
what it would have found. Standard library only: the plugin imports this at
configure time and the core never needs Dask for it.
"""

from __future__ import annotations

import hashlib

#: shards per search when nothing else is asked (``--race-hunt`` per race test, ``hunt --cluster`` per search)
DEFAULT_SHARDS = 4


def derive_seed(seed: int, name: str) -> int:
    """A test's or shard's seed from the session (or hunt) seed and its stable name: the same on every worker.

    SHA-256 rather than Python's ``hash()``: string hashing is salted per process
    (``PYTHONHASHSEED``), so two workers would disagree.
    """
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def shard_seed(seed: int, index: int) -> int:
    """The seed of shard ``index`` of every search of a hunt seeded ``seed``.

    Like the local hunt, which searches every target with ``--seed`` itself, the
    shard seeds depend on the hunt seed and the shard index only.
    """
    return derive_seed(seed, f"shard{index}")


def split_runs(runs: int, shards: int) -> list[int]:
    """A run budget cut into at most ``shards`` slices that add up to it, the larger slices first.

    Never a slice of 0 runs (a budget of 3 over 4 shards is 3 shards of 1): an
    empty shard would still report a search that never ran.
    """
    count = max(1, min(shards, runs))
    base, extra = divmod(runs, count)
    return [base + (1 if i < extra else 0) for i in range(count)]
