"""Traces: what one run did, step by step, in a form that outlives the code.

A trace is a list of :class:`Record` values. Labels are semantic ("informer/Pod
deliver DELETED ns/p1 rv=12"), never object ids or memory addresses, so a trace
reads the same in another process and a replay can say in words where a changed
scenario diverged. The digest is a SHA-256 over the canonical JSON form; it is the
"same seed, same trace, byte for byte" check.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

#: 2: counterexamples carry a plan (named deviations) beside the positional choices; waits and faults are records;
#: 3: a trace file records the scenario's defaults beside its explicit parameters (a divergence can name one)
#: 4: virtual time on a whole-nanosecond grid (Go's Duration); a positive delay moves time by at least 1 ns;
#: 5: the clock is an integer count of nanoseconds: a jump lands on its instant exactly, where the float clock's
#:    ceil(t * 1e9) could land one nanosecond late (4.155 * 1e9 is 4155000000.0000005: t=4.155000001)
FORMAT_VERSION = 5


@dataclass(frozen=True, slots=True)
class Record:
    """One scheduled action or one non-scheduling choice.

    ``kind`` is ``"run"`` (an actor resumed at a yield point), ``"timer"`` (a
    harness timer fired), ``"choose"`` (a ``world.choose`` data decision),
    ``"fault"`` (a fault point fired) or ``"wait"`` (the strategy let virtual
    time pass while the enabled actions waited inside their windows).
    ``choice`` is the absolute index taken among ``enabled`` options; 0 is the
    canonical one.
    """

    step: int
    time: float
    actor: str
    label: str
    key: str | None = None
    rv: int | None = None
    choice: int = 0
    enabled: int = 1
    kind: str = "run"
    #: for a deviation, the canonical action it displaced ("actor: label")
    instead: str | None = None

    @property
    def deviation(self) -> bool:
        """True when this step left the canonical order (a non-zero choice)."""
        return self.choice != 0

    def describe(self) -> str:
        """One human line: ``#17 t=1.250 worker-1: get ns/j2 (choice 1 of 3)``."""
        where = f" [{self.key}" + (f" rv={self.rv}" if self.rv is not None else "") + "]" if self.key else ""
        pick = f"  <- choice {self.choice} of {self.enabled}" if self.choice else ""
        if self.choice and self.instead:
            pick += f", instead of '{self.instead}'"
        return f"#{self.step:<4} t={self.time:9.3f}  {self.actor}: {self.label}{where}{pick}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "time": round(self.time, 9),
            "actor": self.actor,
            "label": self.label,
            "choice": self.choice,
            "enabled": self.enabled,
            "kind": self.kind,
        }
        if self.key is not None:
            out["key"] = self.key
        if self.rv is not None:
            out["rv"] = self.rv
        if self.instead is not None:
            out["instead"] = self.instead
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Record:
        return cls(
            step=int(raw["step"]),
            time=float(raw["time"]),
            actor=str(raw["actor"]),
            label=str(raw["label"]),
            key=None if raw.get("key") is None else str(raw["key"]),
            rv=None if raw.get("rv") is None else int(raw["rv"]),
            choice=int(raw["choice"]),
            enabled=int(raw["enabled"]),
            kind=str(raw.get("kind", "run")),
            instead=None if raw.get("instead") is None else str(raw["instead"]),
        )

    def same_action(self, other: Record) -> bool:
        """Whether two records name the same action (used to find divergence)."""
        return (self.kind, self.actor, self.label, self.key) == (other.kind, other.actor, other.label, other.key)


@dataclass(frozen=True, slots=True)
class Note:
    """What happened inside a step, with no choice attached: an observation, never a scheduling point.

    The kube layer writes one for each thing a controller developer would look
    for in the logs (a LIST and its revision, each event a relist synthesised,
    a predicate's verdict, a key coalesced in a work queue, a write's outcome, a
    crash and what it lost); a model writes its own with :meth:`World.note`
    (the upstream log line a maintainer greps for). ``step`` is the step the
    note was made in (0: before the first), ``keys`` the objects it is about
    ("Kind ns/name"), ``kind`` what made it ("list", "relist", "watch",
    "handler", "predicate", "queue", "expectation", "write", "gc", "crash",
    "log", ...). Notes are kept beside the records, never in them, so they do
    not change a trace's digest or a run's choices.
    """

    step: int
    time: float
    actor: str
    kind: str
    text: str
    keys: tuple[str, ...] = ()
    fields: tuple[tuple[str, Any], ...] = ()

    def field(self, name: str, default: Any = None) -> Any:
        """The structured field ``name`` (``rv``, ``verdict``, ``lost``, ...), or ``default``."""
        for k, v in self.fields:
            if k == name:
                return v
        return default

    def describe(self) -> str:
        """One line, indented under its step: ``      . t=1.250 informer/Pod: LIST rv=7: 3 objects``."""
        return f"      . t={self.time:9.3f}  {self.actor}: {self.text}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step, "time": round(self.time, 9), "actor": self.actor, "kind": self.kind, "text": self.text,
        }
        if self.keys:
            out["keys"] = list(self.keys)
        if self.fields:
            out["fields"] = {k: _plain(v) for k, v in self.fields}
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Note:
        fields = raw.get("fields") or {}
        if not isinstance(fields, dict):
            raise TypeError("a note's fields must be an object")
        return cls(
            step=int(raw["step"]), time=float(raw["time"]), actor=str(raw["actor"]), kind=str(raw["kind"]),
            text=str(raw["text"]), keys=tuple(str(k) for k in raw.get("keys") or ()),
            fields=tuple((str(k), _plain(v)) for k, v in fields.items()),
        )


def _plain(value: Any) -> Any:
    """A note field as JSON keeps it: numbers, strings, booleans and None as they are, lists of them, else text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _said(what: Any) -> str:
    """'actor: label' of an action kept by reference (an ``Option``), or the string itself."""
    return what if isinstance(what, str) else f"{what.actor}: {what.label}"


def _record(raw: tuple[Any, ...]) -> Record:
    """The :class:`Record` of one raw tuple as :class:`harness.sim.World` appends them.

    The tuple has :class:`Record`'s fields in order, except that the words of a
    deviation are not formatted yet: ``instead`` may be the displaced action (any
    object with ``actor`` and ``label``, in practice its ``Option``, which never
    changes once made), and a ``"wait"`` record's label may be ``(held, more)``,
    the first three waiting actions and whether there were more.
    """
    step, time, actor, label, key, rv, choice, enabled, kind, instead = raw
    if label.__class__ is not str:
        held, more = label
        label = f"let time pass while {', '.join(_said(o) for o in held)}{' ...' if more else ''} wait"
    if instead is not None and instead.__class__ is not str:
        instead = _said(instead)
    return Record(step, time, actor, label, key, rv, choice, enabled, kind, instead)


class Access(NamedTuple):
    """One read or write of shared state inside a step: one entry of the step's footprint (:meth:`World.touch`).

    One record serves both readers of a footprint. The exhaustive referee's
    reduction sees ``(resource, write)`` of every access without a
    ``version``; the story of a counterexample follows each deciding read
    back to the write it read from (the last write of ``resource`` before it,
    or, with a ``version``, the write of that version) and shows ``said``.
    """

    #: what was read or written ("Pod default/web", "informer/Pod cache: default/web", "revision", ...)
    resource: str
    write: bool = False
    #: what the access saw or did, as a story shows it ("rv=5", "absent", "status.phase: Running", "409 Conflict")
    said: str = ""
    #: a read of an immutable revision (a watch event): it reads from the write of that version and commutes
    #: with every later write, so the reduction never counts it
    version: int | None = None
    #: False: it orders actions (a FIFO's order, a request's own name) but decides nothing a story follows
    decides: bool = True


class Trace(Sequence[Record]):
    """An immutable sequence of records with a stable digest and JSON form.

    A run's trace is lazy: the world hands over its raw tuples (:func:`_record`)
    and the :class:`Record` values, with their "instead of ..." words, are built
    the first time someone reads a record. Random and PCT searches read only the
    step and deviation counts of most runs, and building every record of every
    run was a fifth of a hand-off's cost (issue 13). Rejected: building records
    in the world as it goes (the same cost, paid during the run).
    """

    __slots__ = ("_built", "_raw", "continues", "footprints", "noted", "notes", "oracle_reads")

    def __init__(self, records: Iterable[Record] = (), notes: Iterable[Note] = (), *, noted: bool = False) -> None:
        self._built: tuple[Record, ...] | None = tuple(records)
        self._raw: Sequence[tuple[Any, ...]] = ()
        #: what the kube layer and the model noted (see :class:`Note`), in the order made; not in the digest
        self.notes: tuple[Note, ...] = tuple(notes)
        #: whether the run recorded notes (a search's runs do not: a counterexample is re-run to tell its story)
        self.noted = noted or bool(self.notes)
        #: step -> what it read and wrote (:class:`Access`, in the order made), for a run that recorded notes
        self.footprints: dict[int, tuple[Access, ...]] = {}
        #: what the violated oracle read, when the run recorded notes
        self.oracle_reads: tuple[Access, ...] = ()
        #: step -> the earlier step of the same actor it continues (its program order: the values that step
        #: read are still in its variables); a step that resumed from a wait for work or a sleep continues none
        self.continues: dict[int, int] = {}

    @classmethod
    def _lazy(cls, raw: Sequence[tuple[Any, ...]]) -> Trace:
        """A trace over raw record tuples (see :func:`_record`); records are built on first read."""
        trace = cls.__new__(cls)
        trace._built = None
        trace._raw = raw
        trace.notes = ()
        trace.noted = False
        trace.footprints = {}
        trace.oracle_reads = ()
        trace.continues = {}
        return trace

    @property
    def _records(self) -> tuple[Record, ...]:
        built = self._built
        if built is None:
            built = self._built = tuple(map(_record, self._raw))
            self._raw = ()
        return built

    def __len__(self) -> int:
        return len(self._built) if self._built is not None else len(self._raw)

    def __getitem__(self, index: int) -> Record:  # type: ignore[override]
        return self._records[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Trace) and self._records == other._records

    def __hash__(self) -> int:
        return hash(self._records)

    def __repr__(self) -> str:
        return f"<Trace {len(self)} records digest={self.digest()[:12]}>"

    @property
    def deviations(self) -> int:
        """Records that left the canonical run (positional count; a plan counts its entries)."""
        if self._built is None:
            return sum(1 for r in self._raw if r[6])
        return sum(1 for r in self._built if r.choice)

    @property
    def steps(self) -> int:
        """Actions taken (actor steps and timers), not counting decisions, faults and waits."""
        if self._built is None:
            return sum(1 for r in self._raw if r[8] == "run" or r[8] == "timer")
        return sum(1 for r in self._built if r.kind == "run" or r.kind == "timer")

    def to_json(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self._records]

    @classmethod
    def from_json(cls, raw: list[dict[str, Any]]) -> Trace:
        return cls(Record.from_json(r) for r in raw)

    def digest(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def notes_json(self) -> list[dict[str, Any]]:
        return [n.to_json() for n in self.notes]

    def notes_of(self, step: int) -> list[Note]:
        """The notes made during step ``step``."""
        return [n for n in self.notes if n.step == step]

    def render(self, *, limit: int | None = None, notes: bool = False) -> str:
        """The trace as text, one step a line; deviations are marked; ``notes`` puts each step's notes under it."""
        rows = self._records if limit is None else self._records[-limit:]
        if not notes or not self.notes:
            return "\n".join(r.describe() for r in rows)
        by_step: dict[int, list[Note]] = {}
        for n in self.notes:
            by_step.setdefault(n.step, []).append(n)
        out = [n.describe() for n in by_step.get(0, ())] if limit is None else []
        for r in rows:
            out.append(r.describe())
            out.extend(n.describe() for n in by_step.get(r.step, ()))
        return "\n".join(out)
