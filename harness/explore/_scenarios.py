"""The scenario mark and the race registry: which scenarios the harness may run.

A trace file is untrusted input, so it may only name a *marked* scenario: a
function decorated with :func:`scenario`, a :class:`~harness.RaceMachine`
subclass, or the scenario of a :class:`Race` registered through the entry-point
group :data:`ENTRY_POINT_GROUP`. This module owns the mark (and ``known_open``),
the registry, and the check on an imported object (:func:`is_marked`); the
same mark read from a module's source, before anything runs, is
``_source.py``'s, and how a reference is resolved under both checks is
``_references.py``'s.
"""

from __future__ import annotations

import inspect
import types
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

#: the entry-point group third-party packages (and ``races/``) register races in
ENTRY_POINT_GROUP = "race_harness.races"

#: the attribute :func:`scenario` sets
_MARK = "__race_scenario__"
_KNOWN_OPEN = "__race_known_open__"

F = TypeVar("F")


@overload
def scenario(fn: F, /) -> F: ...


@overload
def scenario(*, known_open: str) -> Callable[[F], F]: ...


def scenario(fn: F | None = None, /, *, known_open: str | None = None) -> F | Callable[[F], F]:
    """Mark an ``async def fn(world, **params)`` (or a RaceMachine class) as a scenario.

    Only marked scenarios may be named by a trace file, so a replay never runs a
    callable that was not written to be one::

        @harness.scenario
        async def lost_update(world: harness.World, *, fixed: bool = False) -> None: ...

    ``known_open`` says the fixed variant still fails, and why (a residual the
    upstream fix left, with its reference): the fixed variant is then *expected*
    to fail, as a registered race's ``Race.known_open``, and every output says
    "known open" with this text instead of hiding or failing it::

        @harness.scenario(known_open="kruise#2253: the update expectation is recorded after the write")
        async def sidecarset(world: harness.World, *, fixed: bool = False) -> None: ...
    """
    if fn is None:
        if not isinstance(known_open, str) or not known_open.strip():
            raise TypeError("@harness.scenario(known_open=...) takes the reason the fix leaves open, as text "
                            "(e.g. 'kruise#2253: the update expectation is recorded after the write')")

        def mark(f: F) -> F:
            scenario(f)
            setattr(f, _KNOWN_OPEN, known_open.strip())
            return f

        return mark
    target: Any = fn
    if not (inspect.iscoroutinefunction(target) or (isinstance(target, type) and getattr(target, _MARK, False) is True)):
        raise TypeError(
            f"@harness.scenario marks an 'async def' scenario function or a RaceMachine subclass, not {fn!r}"
        )
    setattr(fn, _MARK, True)
    return fn


def known_open_of(fn: Any) -> str | None:
    """The ``known_open`` text a scenario was marked with (``@harness.scenario(known_open=...)``), else None."""
    text = getattr(fn, _KNOWN_OPEN, None)
    return text if isinstance(text, str) else None


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Race:
    """A documented race: where it comes from, how to run it, what to expect.

    ``scenario(world, *, fixed: bool, **params)`` builds the cluster, spawns the
    actors and registers the oracles. ``known_open`` marks a case the upstream
    fix did not close: its fixed variant is *expected* to fail, and the output
    says so instead of hiding it. A package registers races with an entry point
    in the ``race_harness.races`` group naming a ``Race`` or a list of them::

        [project.entry-points."race_harness.races"]
        my_races = "my_package.races:RACES"
    """

    name: str
    title: str
    upstream: str  # "openkruise/kruise#1528 (fix PR #1526, fd7e86e8)"
    scenario: Callable[..., Awaitable[object]]
    params: dict[str, Any] = field(default_factory=dict)
    budget: int = 2000  # runs the default hunt may spend per variant
    strategy: str = "random"
    known_open: bool = False
    #: the fault kinds its hunt places (``--faults`` form): "all" once its fixed variant was checked
    #: clean under them; "default" leaves each component's own flags
    faults: str = "default"
    #: words a maintainer would expect in the minimal counterexample, in order
    key_events: tuple[str, ...] = ()


_REGISTRY: dict[str, Race] | None = None
_EXTRA: dict[str, Race] = {}
_SKIPPED: list[str] = []


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    seen: set[tuple[str, str]] = set()
    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if (ep.name, ep.value) not in seen:  # an editable install can list a distribution twice
            seen.add((ep.name, ep.value))
            out.append(ep)
    # this project's own races first, in its declared order; then other packages' by name
    own = [ep for ep in out if _dist_name(ep) == "race-harness"]
    return own + sorted((ep for ep in out if _dist_name(ep) != "race-harness"), key=lambda e: (_dist_name(e), e.name))


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return str(getattr(dist, "name", "") or "")


def race_modules() -> frozenset[str]:
    """The modules the ``race_harness.races`` entry points name, read from metadata (nothing imported)."""
    return frozenset(str(ep.value).partition(":")[0].strip() for ep in _entry_points()) | {
        r.scenario.__module__ for r in _EXTRA.values()
    }


def _races_in(value: Any) -> list[Race]:
    if isinstance(value, Race):
        return [value]
    if isinstance(value, types.ModuleType):
        value = getattr(value, "RACES", [])
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
        items = list(value)
        if all(isinstance(r, Race) for r in items):
            return items
    raise TypeError(f"expected a Race, a list of Race or a module with RACES, got {type(value).__name__}")


def registered_races() -> dict[str, Race]:
    """Every race registered through :data:`ENTRY_POINT_GROUP` (loaded once), plus :func:`add_races`.

    A package whose entry point cannot be loaded is skipped with a warning that
    names it, so one broken package does not stop a hunt of the others.
    """
    global _REGISTRY
    races = _REGISTRY
    if races is None:
        races = {}
        complete = True
        _SKIPPED.clear()
        for ep in _entry_points():
            try:
                found = _races_in(ep.load())
            except Exception as exc:
                complete = False  # not cached: a module imported half-way now may load next time
                why = (f"the races of entry point {ep.name} = {ep.value!r} ({_dist_name(ep) or 'unknown package'}) "
                       f"could not be loaded: {type(exc).__name__}: {exc}")
                _SKIPPED.append(why)
                warnings.warn(f"race-harness: skipped {why}. Fix that module or uninstall its package.",
                              RuntimeWarning, stacklevel=2)
                continue
            for race in found:
                races.setdefault(race.name, race)
        if complete:
            _REGISTRY = races
    return {**races, **{k: v for k, v in _EXTRA.items() if k not in races}}


def skipped_races() -> list[str]:
    """Why each entry point that could not be loaded was skipped (by the last :func:`registered_races`), so that
    "no races are registered" can name the import that failed rather than guess."""
    return list(_SKIPPED)


def add_races(races: Iterable[Race]) -> None:
    """Register races in this process only (``races/`` does this when its package metadata is missing)."""
    for race in races:
        _EXTRA.setdefault(race.name, race)


# --------------------------------------------------------------------------- the mark
def name_of(fn: Any) -> tuple[str, str]:
    """``(module, qualname)`` of a scenario; a classmethod bound to a subclass is named after the subclass."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return owner.__module__, f"{owner.__qualname__}.{fn.__name__}"
    return str(getattr(fn, "__module__", "")), str(getattr(fn, "__qualname__", getattr(fn, "__name__", "")))


def _registered(module: str, qualname: str) -> bool:
    """Whether a registered race's scenario is ``module:qualname`` (loads the installed entry points)."""
    return any(name_of(r.scenario) == (module, qualname) for r in registered_races().values())


def is_marked(obj: Any) -> bool:
    """Whether ``obj`` is a scenario a trace file may name (see the module docstring)."""
    # a RaceMachine subclass inherits the mark from its base class (harness.stateful sets it)
    if (inspect.isfunction(obj) or inspect.ismethod(obj) or isinstance(obj, type)) and getattr(obj, _MARK, False) is True:
        return True
    owner = getattr(obj, "__self__", None) if inspect.ismethod(obj) else None
    if isinstance(owner, type) and getattr(owner, _MARK, False) is True and obj.__name__ == "scenario":
        return True
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    return any(r.scenario is obj or (inspect.ismethod(obj) and r.scenario == obj) for r in registered_races().values())
