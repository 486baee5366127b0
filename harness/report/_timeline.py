"""What the timeline shows: the steps that matter, their neighbours, and folds for the rest.

A counterexample is a handful of deviations in a long canonical run. Like the
step program, the focused timeline keeps the neighbourhood of every deviation,
fault and the violation (plus the steps that touch an object the violation
names) and folds the canonical stretches between them into one line each; only
the lanes of actors that act in what is shown get a column. The whole run is
one ``<details>`` away, up to :data:`MAX_STEPS` records; beyond that it is left
to the JSON trace, so a 100,000-step run still makes a page a browser opens at
once.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..sim import Record
from ._text import split_action, without_actor

#: runs with more records than this have no "show all" timeline on the page (the JSON trace has every step)
MAX_STEPS = 5_000
#: at most this many points of interest are expanded in the focused timeline
MAX_FOCUS = 120
_BEFORE, _AFTER = 3, 3  # neighbours kept around a deviation or fault
_BEFORE_VIOLATION = 6
_MIN_FOLD = 3  # shorter canonical stretches are shown, not folded


def is_fault(r: Record) -> bool:
    """An injected fault: a ``"fault"`` record, or a taken ``world.choose`` whose label starts with "fault"."""
    return r.kind == "fault" or (r.kind == "choose" and r.choice != 0 and r.label.startswith("fault"))


def is_deviation(r: Record) -> bool:
    """A step off the canonical order: a non-zero choice (a scheduling pick, a data choice, a wait)."""
    return bool(r.choice)


@dataclass(frozen=True)
class Box:
    """One step as a timeline box: the label without the actor's name, and what marks it."""

    record: Record
    text: str
    marks: frozenset[str]  # "dev", "fault", "bad", "wait", "named"
    instead_actor: str | None = None
    instead_label: str | None = None

    @property
    def step(self) -> int:
        return self.record.step

    @property
    def css(self) -> str:
        return " ".join(sorted({self.record.kind if self.record.kind.isidentifier() else "run", *self.marks}))


@dataclass(frozen=True)
class Fold:
    """Canonical steps left out between two shown ones."""

    first: int  # step numbers
    last: int
    count: int


@dataclass
class Timeline:
    """Rows (a :class:`Box` or a :class:`Fold` each) and the lanes they use."""

    rows: list[Box | Fold]
    lanes: list[str]
    note: str = ""

    @property
    def boxes(self) -> list[Box]:
        return [r for r in self.rows if isinstance(r, Box)]


@dataclass
class Counts:
    """Per-actor and per-label-shape step counts: the shape of a long run in two small tables."""

    actors: list[tuple[str, int, int, int, int]] = field(default_factory=list)  # actor, steps, deviations, first, last
    labels: list[tuple[str, str, int]] = field(default_factory=list)  # actor, label shape, steps
    other_labels: int = 0  # label shapes not listed
    kinds: dict[str, int] = field(default_factory=dict)


def lanes_of(records: Iterable[Record]) -> list[str]:
    """Actors in the order they first act: one swimlane each."""
    seen: dict[str, None] = {}
    for r in records:
        seen.setdefault(str(r.actor), None)
    return list(seen)


def box_text(r: Record) -> str:
    """The label without the actor's name; the key and rv when the label does not already say them."""
    actor, label = str(r.actor), str(r.label)
    text = without_actor(label, actor)
    key = None if r.key is None else str(r.key)
    if key and key.split(" ", 1)[-1] not in label:
        rv = "" if r.rv is None or f"rv={r.rv}" in label else f" rv={r.rv}"
        text += f" [{key}{rv}]"
    elif r.rv is not None and f"rv={r.rv}" not in label:
        text += f" rv={r.rv}"
    return text


def make_box(r: Record, actors: Sequence[str], *, violation_step: int, named: frozenset[int] = frozenset()) -> Box:
    marks = set()
    if is_deviation(r):
        marks.add("dev")
    if is_fault(r):
        marks.add("fault")
    if r.kind == "wait":
        marks.add("wait")
    if r.step == violation_step:
        marks.add("bad")
    if r.step in named:
        marks.add("named")
    ia = il = None
    if r.choice and r.instead:
        ia, il = split_action(str(r.instead), actors)
    return Box(r, box_text(r), frozenset(marks), ia, il)


def focus(
    records: Sequence[Record],
    *,
    violation_step: int,
    extra: Iterable[int] = (),
    named: Iterable[int] = (),
) -> Timeline:
    """The focused timeline: neighbourhoods of deviations, faults, ``extra`` steps and the violation.

    ``extra`` are steps a plan names; ``named`` are steps that touch an object
    the violation or a deviation names (shown, with no neighbours).
    """
    index = {r.step: i for i, r in enumerate(records)}
    actors = lanes_of(records)
    keep: set[int] = set()
    hot = [i for i, r in enumerate(records) if is_deviation(r) or is_fault(r) or r.kind == "wait"]
    hot += [index[s] for s in extra if s in index]
    hot = sorted(set(hot))
    note = ""
    if len(hot) > MAX_FOCUS:
        note = (
            f"{len(hot):,} deviations and faults: the first {MAX_FOCUS} are expanded here; "
            "every one is highlighted in the full timeline and listed in the JSON trace."
        )
        hot = hot[:MAX_FOCUS]
    for i in hot:
        keep.update(range(max(0, i - _BEFORE), min(len(records), i + _AFTER + 1)))
    named_steps = frozenset(s for s in named if s in index)
    keep.update(index[s] for s in named_steps)
    v = index.get(violation_step, len(records) - 1)
    if records:
        keep.update(range(max(0, v - _BEFORE_VIOLATION), v + 1))
    # a short canonical stretch reads better shown than folded
    shown = sorted(keep)
    for a, b in itertools.pairwise(shown):
        if 1 < b - a <= _MIN_FOLD:
            keep.update(range(a + 1, b))
    if shown and 0 < shown[0] <= _MIN_FOLD:
        keep.update(range(shown[0]))
    rows: list[Box | Fold] = []
    last = -1
    for i in sorted(keep):
        if i > last + 1:
            rows.append(Fold(records[last + 1].step, records[i - 1].step, i - last - 1))
        rows.append(make_box(records[i], actors, violation_step=violation_step, named=named_steps))
        last = i
    if records and last < len(records) - 1:
        rows.append(Fold(records[last + 1].step, records[-1].step, len(records) - 1 - last))
    used = {b.record.actor for b in rows if isinstance(b, Box)}
    return Timeline(rows, [a for a in actors if a in used], note)


def full(records: Sequence[Record], *, violation_step: int) -> Timeline:
    """Every step, every lane (the "show all" timeline)."""
    actors = lanes_of(records)
    return Timeline([make_box(r, actors, violation_step=violation_step) for r in records], actors)


_NUMBERS = re.compile(r"\d+")


def counts(records: Sequence[Record], *, top: int = 20) -> Counts:
    """Steps per actor and per label shape (numbers replaced by ``N``, so ``pg-9-6`` and ``pg-3-1`` group)."""
    out = Counts()
    per_actor: dict[str, list[int]] = {}
    shapes: Counter[tuple[str, str]] = Counter()
    kinds: Counter[str] = Counter()
    for r in records:
        actor = str(r.actor)
        row = per_actor.get(actor)
        if row is None:
            row = per_actor[actor] = [0, 0, r.step, r.step]
        row[0] += 1
        row[1] += 1 if r.choice else 0
        row[3] = r.step
        shapes[(actor, _NUMBERS.sub("N", without_actor(str(r.label), actor)))] += 1
        kinds[str(r.kind)] += 1
    out.actors = sorted(((a, *v) for a, v in per_actor.items()), key=lambda t: (-t[1], t[0]))  # type: ignore[misc]
    common = shapes.most_common()
    out.labels = [(a, shape, n) for (a, shape), n in common[:top]]
    out.other_labels = max(0, len(common) - top)
    out.kinds = dict(kinds)
    return out
