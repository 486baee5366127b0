"""Object state per step, captured by replaying a counterexample with an observer.

The replay calls the observer at every scheduling point; the observer compares
what each registered :class:`~harness.kube.APIServer` stores and what each
:class:`~harness.kube.Informer` cache holds with the previous call, **by object
identity** (the apiserver never mutates a committed object and caches keep the
object they were delivered), so a step costs one pass over the keys and only
changes are kept. The kube layer registers its apiservers and informers in
``world.state`` (``_kube_apiservers``, ``_kube_informers``); a scenario without
them simply has no object state. This module reads the kube objects by duck
typing, so ``harness.report`` imports nothing from ``harness.kube``.

The same observer reads the model's own memory: every view a scenario exposed
(``world.expose``) is compared by value at each step, and every ``world.bound``
metric and every view that is a number is sampled into a :class:`Series`, so a
report can draw how a backlog grew instead of listing four thousand steps.
"""

from __future__ import annotations

import math
import pprint
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..explore import Counterexample
from ..sim import RUNAWAY_KINDS, Record, World

APISERVER = "apiserver"
#: ``Change.where`` of a change in an exposed view of the model's memory
VIEW = "view"
_MAX_VALUE = 240
_MAX_VIEW_TEXT = 4_000  # characters of a view's final value shown on the page


@dataclass(frozen=True)
class Change:
    """One object changed in one store: ``where`` is ``"apiserver"`` or an informer's name."""

    where: str
    ref: str  # "Kind ns/name", or the view's name when ``where`` is VIEW
    before: dict[str, str] | None  # flattened fields, None = absent
    after: dict[str, str] | None

    @property
    def what(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed"

    def fields(self) -> list[tuple[str, str | None, str | None]]:
        """(path, old, new) for every field that differs; absent = None."""
        old = self.before or {}
        new = self.after or {}
        out = []
        for path in sorted(old.keys() | new.keys(), key=field_order):
            if old.get(path) != new.get(path):
                out.append((path, old.get(path), new.get(path)))
        return out


@dataclass
class Series:
    """A number sampled at every step of the replay: a ``world.bound`` metric or a numeric view.

    ``points`` holds ``(virtual time, step, value)`` only where the value
    changed, plus the last sample, so a flat stretch costs nothing.
    """

    name: str
    kind: str  # "bound" or "view"
    limit: float | None = None
    points: list[tuple[float, int, float]] = field(default_factory=list)

    def add(self, time: float, step: int, value: float) -> None:
        if not self.points or self.points[-1][2] != value:
            self.points.append((time, step, value))

    def close(self, time: float, step: int) -> None:
        """Extend the line to the end of the run."""
        if self.points and self.points[-1][:2] != (time, step):
            self.points.append((time, step, self.points[-1][2]))

    @property
    def peak(self) -> float:
        return max((p[2] for p in self.points), default=math.nan)


@dataclass
class StateLog:
    """What the replay saw: changes per step, the final view of every store, the model's views and metrics."""

    available: bool
    note: str = ""
    changes: dict[int, list[Change]] = field(default_factory=dict)
    #: store name -> {ref: (rv, flattened fields)} at the end of the run
    final: dict[str, dict[str, tuple[str, dict[str, str]]]] = field(default_factory=dict)
    #: store name -> {ref: (step it disappeared at, last flattened fields)} for objects absent at the end
    gone: dict[str, dict[str, tuple[int, dict[str, str]]]] = field(default_factory=dict)
    #: informer name -> kind it caches
    informers: dict[str, str] = field(default_factory=dict)
    #: exposed view name -> its value at the end of the run, pretty-printed
    views: dict[str, str] = field(default_factory=dict)
    #: bound metrics and numeric views over the run, by name
    series: dict[str, Series] = field(default_factory=dict)


def field_order(path: str) -> tuple[int, str]:
    head = path.split(".", 1)[0]
    rank = {"resourceVersion": 0, "uid": 1, "deletionTimestamp": 2, "finalizers": 3, "spec": 5, "status": 6}
    return (rank.get(head, 4), path)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"


def _flatten_into(out: dict[str, str], prefix: str, value: Any) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten_into(out, f"{prefix}.{k}", v)
    else:
        out[prefix] = _short(value)


def flatten(obj: Any) -> dict[str, str]:
    """An object's fields as ``path -> repr`` (metadata, then spec and status leaves)."""
    out: dict[str, str] = {"resourceVersion": str(getattr(obj, "resource_version", "?"))}
    uid = getattr(obj, "uid", "")
    if uid:
        out["uid"] = str(uid)
    for attr, name in (("generation", "generation"), ("deletion_timestamp", "deletionTimestamp")):
        v = getattr(obj, attr, None)
        if v:
            out[name] = _short(v)
    for attr, name in (("labels", "labels"), ("annotations", "annotations")):
        v = getattr(obj, attr, None)
        if v:
            _flatten_into(out, name, v)
    fin = getattr(obj, "finalizers", None)
    if fin:
        out["finalizers"] = _short(list(fin))
    owners = getattr(obj, "owner_references", None)
    if owners:
        out["ownerReferences"] = _short([f"{o.kind}/{o.name} ({o.uid})" for o in owners])
    for part in ("spec", "status"):
        v = getattr(obj, part, None)
        if isinstance(v, dict) and v:
            _flatten_into(out, part, v)
    return out


def _ref(kind: str, key: str) -> str:
    return f"{kind} {key}"


def _apiserver_objects(api: Any) -> Iterator[tuple[str, Any]]:
    store: dict[str, dict[str, Any]] = getattr(api, "_store", {})
    for kind, objs in store.items():
        for key, obj in objs.items():
            yield _ref(kind, key), obj


def _revision(obj: Any) -> int:
    rv = getattr(obj, "resource_version", 0)
    return rv if isinstance(rv, int) else 0


def _informer_objects(inf: Any) -> Iterator[tuple[str, Any]]:
    store: dict[str, Any] = getattr(inf, "_store", {})
    kind = str(getattr(inf, "kind", "?"))
    for key, obj in store.items():
        yield _ref(kind, key), obj


def _call(fn: Callable[[], object]) -> object:
    """A view's value; a view that raises shows what it raised instead of ending the report."""
    try:
        return fn()
    except Exception as exc:
        return _Raised(f"{type(exc).__name__}: {exc}")


class _Raised(str):
    """The text a view raised (not a number, never charted)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<raised {self}>"


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _bounds_of(world: World) -> list[tuple[str, Callable[[], float], float]]:
    """``(name, metric, limit)`` of every ``world.bound``; read defensively (the runtime keeps them private)."""
    raw: Any = getattr(world, "bounds", None)
    if raw is None or callable(raw):
        raw = getattr(world, "_bounds", None) or ()
    out = []
    for b in raw:
        try:
            name, metric, limit = b
        except (TypeError, ValueError):
            continue
        out.append((str(name), metric, limit))
    return out


def pretty(value: object) -> str:
    """A view's value for the page: ``pprint`` at 100 columns, cut at a few thousand characters."""
    text = str(value) if isinstance(value, _Raised) else pprint.pformat(value, width=100, compact=True, sort_dicts=True)
    return text if len(text) <= _MAX_VIEW_TEXT else text[: _MAX_VIEW_TEXT - 1] + "…"


class _Observer:
    def __init__(self) -> None:
        self.log = StateLog(available=True)
        self.last: dict[str, dict[str, Any]] = {}
        self.last_views: dict[str, dict[str, str]] = {}
        self.numeric_views: dict[str, bool] = {}
        self.world: World | None = None
        self.record: Record | None = None

    def stores(self, world: World) -> Iterator[tuple[str, Iterator[tuple[str, Any]], int]]:
        """Each store, its objects, and the revision up to which they are its starting state (an apiserver's own
        namespaces: ``bootstrap_revision``), shown in the final state but never as a change of the run."""
        apis = world.state.get("_kube_apiservers", [])
        for i, api in enumerate(apis):
            given = int(getattr(api, "bootstrap_revision", 0) or 0)
            yield (APISERVER if len(apis) == 1 else f"{APISERVER}-{i + 1}"), _apiserver_objects(api), given
        for inf in world.state.get("_kube_informers", []):
            name = str(getattr(inf, "name", "informer"))
            self.log.informers[name] = str(getattr(inf, "kind", "?"))
            yield name, _informer_objects(inf), 0

    def __call__(self, world: World, record: Record | None) -> None:
        self.world = world
        self.record = record
        step = record.step if record is not None else 0
        for where, objects, given in self.stores(world):
            now = dict(objects)
            # at first sight of a store, what it started with is no change
            before = self.last[where] if where in self.last else {
                ref: o for ref, o in now.items() if _revision(o) <= given}
            changed: list[Change] = []
            gone = self.log.gone.setdefault(where, {})
            for ref, obj in now.items():
                old = before.get(ref)
                if old is not obj:
                    changed.append(Change(where, ref, None if old is None else flatten(old), flatten(obj)))
                    gone.pop(ref, None)
            for ref, old in before.items():
                if ref not in now:
                    fields = flatten(old)
                    changed.append(Change(where, ref, fields, None))
                    gone[ref] = (step, fields)
            if changed:
                self.log.changes.setdefault(step, []).extend(changed)
            self.last[where] = now
        self.sample(world, step)

    def sample(self, world: World, step: int) -> None:
        """Compare every exposed view with its last value; add a point to every metric."""
        now = float(getattr(world, "now", 0.0))
        series = self.log.series
        for name, metric, limit in _bounds_of(world):
            sample = _number(_call(metric))
            if sample is not None:
                if name not in series:
                    series[name] = Series(name, "bound", _number(limit))
                series[name].add(now, step, sample)
        views: dict[str, Callable[[], object]] = getattr(world, "views", None) or {}
        for name, fn in views.items():
            value = _call(fn)
            flat: dict[str, str] = {}
            _flatten_into(flat, name, value)
            old = self.last_views.get(name)
            if old != flat:
                self.log.changes.setdefault(step, []).append(Change(VIEW, name, old, flat))
                self.last_views[name] = flat
            number = _number(value)
            if self.numeric_views.get(name, True) and number is not None:
                self.numeric_views[name] = True
                if name not in series:
                    series[name] = Series(name, "view")
                series[name].add(now, step, number)
            elif value is not None:
                self.numeric_views[name] = False  # a view that is not always a number is not drawn
                series.pop(name, None)

    def finish(self) -> StateLog:
        if self.world is not None:
            self(self.world, self.record)
            step = self.record.step if self.record is not None else 0
            for s in self.log.series.values():
                s.close(float(getattr(self.world, "now", 0.0)), step)
            views: dict[str, Callable[[], object]] = getattr(self.world, "views", None) or {}
            self.log.views = {name: pretty(_call(fn)) for name, fn in views.items()}
            for where, objects, _given in self.stores(self.world):
                self.log.final[where] = {ref: (str(getattr(o, "resource_version", "?")), flatten(o)) for ref, o in objects}
        self.log.gone = {w: g for w, g in self.log.gone.items() if g}
        return self.log


def capture_states(cx: Counterexample) -> StateLog:
    """Replay ``cx`` and record object changes per step; never raises.

    When the scenario cannot be imported or the replay takes another path, the
    log says why (``available=False``) and the report renders without state.
    """
    if cx.violation.kind in RUNAWAY_KINDS:
        return StateLog(available=False, note=f"object state unavailable: a {cx.violation.kind} is not re-run "
                        f"for its page ({cx.steps:,} steps again); `python -m harness replay TRACE` re-runs it")
    if cx.violation.kind == "no-yield":
        return StateLog(available=False, note="object state unavailable: a run the watchdog stopped is not re-run "
                        "for its page (it would run the same loop until the watchdog's bound again)")
    obs = _Observer()
    try:
        out = cx.replay(check=False, observer=obs)
    except Exception as exc:
        return StateLog(
            available=False, note=f"object state unavailable: the replay raised {type(exc).__name__}: {exc}"
        )
    log = obs.finish()
    if out.trace.digest() != cx.trace.digest():
        return StateLog(
            available=False,
            note="object state unavailable: replaying the stored choices took a different path than the trace "
            "(the scenario changed since the trace was saved); the timeline below is the stored trace.",
        )
    if not log.changes and not log.final and not log.series and not log.views:
        log.available = False
        log.note = "no object state: the scenario uses no harness.kube APIServer or Informer and exposes no views."
    return log
