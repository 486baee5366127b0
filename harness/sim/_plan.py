"""Plans: a run written as the canonical run plus a few named deviations.

Why
---
A positional encoding (``choices = [0, 0, 1, ...]``, an index into each enabled
set) gives a deviation a meaning only relative to every decision before it:
delete one and the later ones shift, so a shrinker cannot take out what does
not matter, and one late delivery costs one deviation per step at which it was
passed over. A *plan* names actions by **identity** instead, the way an
upstream bug report tells a race ("the ReplicaSet informer delivers its first
event after the Pod informer's"):

``Hold(what, until)``
    action ``what`` is not taken until action ``until`` has run (``until`` an
    :class:`Ident`), until virtual time ``until`` (a float), or for as long as
    its window allows (``None``). A hold never stalls the run: when nothing
    else can run at this instant and ``what``'s window has closed, it runs.
``Fault(at)``
    the fault point ``at`` fires (a crash before a named call, a watch drop, an
    ambiguous write, a stale list, ...). No entry, no fault.
``Pick(at, value)``
    the data choice ``at`` (a user operation, a RaceMachine rule) takes
    ``value`` instead of 0.

An :class:`Ident` is ``(actor, label, key, n)``: the label without its
resourceVersion (:func:`identity_label`), and ``n`` the occurrence of that
triple in the run (1 = the first time it runs). No step number and no
revision, so an entry keeps its meaning when another entry is removed. The
empty plan is the canonical run. Sieve's test plans (OSDI'22) and
delay-bounded scheduling (Emmi, Qadeer, Rakamaric, POPL'11) have the same
shape: few, named delays reach most bugs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

_RV = re.compile(r"\s*\brv=\d+")


def identity_label(label: str) -> str:
    """``label`` without ``rv=N``: revisions shift when an earlier entry is removed."""
    return _RV.sub("", label) if "rv=" in label else label


class Ident(NamedTuple):
    """One action (or fault point, or data choice) of a run, by what it is, not where.

    A named tuple rather than a dataclass: idents are made on every step of a
    plan's run and are dictionary keys there (holds, what ran, what was held),
    and a tuple is built, hashed and compared in C.
    """

    actor: str
    label: str
    key: str | None
    n: int

    def describe(self) -> str:
        where = f" [{self.key}]" if self.key and self.key not in self.label else ""
        nth = f" (#{self.n})" if self.n > 1 else ""
        return f"{self.actor}: {self.label}{where}{nth}"

    def to_json(self) -> list[Any]:
        return [self.actor, self.label, self.key, self.n]

    @classmethod
    def from_json(cls, raw: Any) -> Ident:
        if not isinstance(raw, list) or len(raw) != 4:
            raise ValueError(f"an identity is [actor, label, key, n], not {raw!r}")
        actor, label, key, n = raw
        if not isinstance(actor, str) or not isinstance(label, str) or not (key is None or isinstance(key, str)):
            raise ValueError(f"malformed identity {raw!r}")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"an identity's occurrence must be a positive integer, not {n!r}")
        return cls(actor, label, key, n)


@dataclass(frozen=True, slots=True)
class Hold:
    """Postpone ``what`` until ``until`` ran (Ident), until a virtual time (float), or its window's end (None)."""

    what: Ident
    until: Ident | float | None = None

    kind = "hold"

    def describe(self) -> str:
        if self.until is None:
            return f"hold '{self.what.describe()}' as long as its window allows"
        if isinstance(self.until, float):
            return f"hold '{self.what.describe()}' until t={self.until:.3f}"
        return f"hold '{self.what.describe()}' until '{self.until.describe()}' has run"

    def sort_key(self) -> tuple[Any, ...]:
        u = self.until
        return (1, self.what, 0 if u is None else 1 if isinstance(u, float) else 2, u if isinstance(u, float) else 0.0,
                u if isinstance(u, Ident) else self.what)

    def to_json(self) -> dict[str, Any]:
        u = self.until
        return {"hold": self.what.to_json(), "until": u.to_json() if isinstance(u, Ident) else u}


@dataclass(frozen=True, slots=True)
class Fault:
    """Fire the fault point ``at``."""

    at: Ident

    kind = "fault"

    def describe(self) -> str:
        return f"fault '{self.at.describe()}'"

    def sort_key(self) -> tuple[Any, ...]:
        return (0, self.at)

    def to_json(self) -> dict[str, Any]:
        return {"fault": self.at.to_json()}


@dataclass(frozen=True, slots=True)
class Pick:
    """Data choice ``at`` takes ``value``."""

    at: Ident
    value: int

    kind = "pick"

    def describe(self) -> str:
        return f"'{self.at.describe()}' -> {self.value}"

    def sort_key(self) -> tuple[Any, ...]:
        return (2, self.at, self.value)

    def to_json(self) -> dict[str, Any]:
        return {"pick": self.at.to_json(), "value": self.value}


Entry = Hold | Fault | Pick


def canonical_plan(entries: Any) -> tuple[Entry, ...]:
    """Entries in their stable order (faults, then holds, then picks, each by identity)."""
    return tuple(sorted(entries, key=lambda e: e.sort_key()))


def entry_from_json(raw: Any) -> Entry:
    """One plan entry from its JSON form; raises ValueError on anything else."""
    if not isinstance(raw, dict):
        raise ValueError(f"a plan entry is an object, not {raw!r}")
    if "hold" in raw:
        u = raw.get("until")
        until: Ident | float | None
        if u is None:
            until = None
        elif isinstance(u, (int, float)) and not isinstance(u, bool):
            until = float(u)
        else:
            until = Ident.from_json(u)
        return Hold(Ident.from_json(raw["hold"]), until)
    if "fault" in raw:
        return Fault(Ident.from_json(raw["fault"]))
    if "pick" in raw:
        v = raw.get("value")
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"a pick's value must be a non-negative integer, not {v!r}")
        return Pick(Ident.from_json(raw["pick"]), v)
    raise ValueError(f"unknown plan entry {raw!r}")
