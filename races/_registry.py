"""The registry of documented races: one :class:`Race` per scenario, buggy and fixed.

Each race module defines ``RACES: list[Race]``; :data:`REGISTRY` collects them in
the order of :data:`MODULES` (the order of ``upstream-races.md``).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

MODULES = (
    "races.kruise_imagepulljob",
    "races.kueue_second_pass",
    "races.volcano_gang_close",
    "races.volcano_deleted_jobs",
    "races.volcano_queue_backlog",
)


@dataclass(frozen=True)
class Race:
    """A documented race: where it comes from, how to run it, what to expect.

    ``scenario(world, *, fixed: bool, **params)`` builds the cluster, spawns the
    actors and registers the oracles. ``known_open`` marks a case the upstream
    fix did not close: its fixed variant is *expected* to fail, and the output
    says so instead of hiding it.
    """

    name: str
    title: str
    upstream: str  # "openkruise/kruise#1528 (fix PR #1526, fd7e86e8)"
    scenario: Callable[..., Awaitable[object]]
    params: dict[str, Any] = field(default_factory=dict)
    budget: int = 2000  # runs the default hunt may spend per variant
    strategy: str = "random"
    known_open: bool = False
    #: words a maintainer would expect in the minimal counterexample, in order
    key_events: tuple[str, ...] = ()


def _load() -> dict[str, Race]:
    out: dict[str, Race] = {}
    for mod_name in MODULES:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name == mod_name:
                continue  # not written yet
            raise
        for race in getattr(mod, "RACES", []):
            out[race.name] = race
    return out


REGISTRY: dict[str, Race] = _load()
