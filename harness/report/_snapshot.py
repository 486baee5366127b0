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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..explore import Counterexample, resolve_scenario
from ..sim import Record, ReplayChooser, World, run_once

APISERVER = "apiserver"
_MAX_VALUE = 240


@dataclass(frozen=True)
class Change:
    """One object changed in one store: ``where`` is ``"apiserver"`` or an informer's name."""

    where: str
    ref: str  # "Kind ns/name"
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
        for path in sorted(old.keys() | new.keys(), key=_field_order):
            if old.get(path) != new.get(path):
                out.append((path, old.get(path), new.get(path)))
        return out


@dataclass
class StateLog:
    """What the replay saw: changes per step and the final view of every store."""

    available: bool
    note: str = ""
    changes: dict[int, list[Change]] = field(default_factory=dict)
    #: store name -> {ref: (rv, flattened fields)} at the end of the run
    final: dict[str, dict[str, tuple[int, dict[str, str]]]] = field(default_factory=dict)
    #: informer name -> kind it caches
    informers: dict[str, str] = field(default_factory=dict)


def _field_order(path: str) -> tuple[int, str]:
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


def _informer_objects(inf: Any) -> Iterator[tuple[str, Any]]:
    store: dict[str, Any] = getattr(inf, "_store", {})
    kind = str(getattr(inf, "kind", "?"))
    for key, obj in store.items():
        yield _ref(kind, key), obj


class _Observer:
    def __init__(self) -> None:
        self.log = StateLog(available=True)
        self.last: dict[str, dict[str, Any]] = {}
        self.world: World | None = None
        self.record: Record | None = None

    def stores(self, world: World) -> Iterator[tuple[str, Iterator[tuple[str, Any]]]]:
        apis = world.state.get("_kube_apiservers", [])
        for i, api in enumerate(apis):
            yield (APISERVER if len(apis) == 1 else f"{APISERVER}-{i + 1}"), _apiserver_objects(api)
        for inf in world.state.get("_kube_informers", []):
            name = str(getattr(inf, "name", "informer"))
            self.log.informers[name] = str(getattr(inf, "kind", "?"))
            yield name, _informer_objects(inf)

    def __call__(self, world: World, record: Record | None) -> None:
        self.world = world
        self.record = record
        step = record.step if record is not None else 0
        for where, objects in self.stores(world):
            now = dict(objects)
            before = self.last.get(where, {})
            changed: list[Change] = []
            for ref, obj in now.items():
                old = before.get(ref)
                if old is not obj:
                    changed.append(Change(where, ref, None if old is None else flatten(old), flatten(obj)))
            for ref, old in before.items():
                if ref not in now:
                    changed.append(Change(where, ref, flatten(old), None))
            if changed:
                self.log.changes.setdefault(step, []).extend(changed)
            self.last[where] = now

    def finish(self) -> StateLog:
        if self.world is not None:
            self(self.world, self.record)
            for where, objects in self.stores(self.world):
                self.log.final[where] = {
                    ref: (int(getattr(o, "resource_version", 0)), flatten(o)) for ref, o in objects
                }
        return self.log


def capture_states(cx: Counterexample) -> StateLog:
    """Replay ``cx`` and record object changes per step; never raises.

    When the scenario cannot be imported or the replay takes another path, the
    log says why (``available=False``) and the report renders without state.
    """
    try:
        fn = resolve_scenario(cx.scenario)
    except Exception as exc:
        return StateLog(available=False, note=f"object state unavailable: {exc}")
    obs = _Observer()
    try:
        out = run_once(fn, ReplayChooser(list(cx.choices)), params=cx.params, limits=cx.limits, observer=obs)
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
    if not log.changes and not log.final:
        log.available = False
        log.note = "no object state: the scenario uses no harness.kube APIServer or Informer."
    return log
