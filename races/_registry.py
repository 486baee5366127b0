"""The registry of documented races: one :class:`Race` per scenario, buggy and fixed.

Each race module defines ``RACES: list[Race]`` and is registered the way a
third-party package registers its races: an entry point in the
``race_harness.races`` group (see ``pyproject.toml``). :data:`REGISTRY` is every
registered race, this project's first in the order of :data:`MODULES` (the order
of README's list of races), then other installed packages' races.

:data:`REGISTRY` reads the entry points on first use, not at import: a race
module imported first (``from races.volcano_gang_close import scenario``)
imports this package, and loading the entry points then would find that module
half-initialised. Run from a checkout that was never installed (no package
metadata), the entry points are missing and the modules of :data:`MODULES` are
registered in this process instead, so ``races.REGISTRY`` works either way.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from harness.explore import Race as Race
from harness.explore import registered_races
from harness.explore._scenarios import add_races, name_of

MODULES = (
    "races.kruise_imagepulljob",
    "races.kueue_second_pass",
    "races.volcano_gang_close",
    "races.volcano_deleted_jobs",
    "races.volcano_queue_backlog",
)


def _load() -> dict[str, Race]:
    races = registered_races()
    if not any(name_of(r.scenario)[0] in MODULES for r in races.values()):
        for mod_name in MODULES:  # not installed: register our own modules in this process
            add_races(getattr(importlib.import_module(mod_name), "RACES", []))
        races = registered_races()
    order = {m: i for i, m in enumerate(MODULES)}

    def rank(r: Race) -> int:
        return order.get(name_of(r.scenario)[0], len(order))

    return {r.name: r for r in sorted(races.values(), key=rank)}  # stable: declared order within a module


class _Registry(Mapping[str, Race]):
    """A read-only mapping of race name to :class:`Race`, loaded on first use."""

    def __init__(self) -> None:
        self._races: dict[str, Race] | None = None

    def _data(self) -> dict[str, Race]:
        if self._races is None:
            self._races = _load()
        return self._races

    def __getitem__(self, name: str) -> Race:
        return self._data()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data())

    def __len__(self) -> int:
        return len(self._data())

    def __repr__(self) -> str:
        return f"REGISTRY({', '.join(self._data())})"


REGISTRY: Mapping[str, Race] = _Registry()
