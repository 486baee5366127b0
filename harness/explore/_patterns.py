"""Sieve's three patterns as search members, aimed by what the runs themselves did.

Sieve (Sun et al., OSDI 2022) finds the bugs of Kubernetes operators by
perturbing only where a controller's view can go wrong, and names three
patterns of it. Our fault points are generic (every request may crash the
process, every LIST may be served from a lagging cache, every watch event may
be the one before which the watch drops), so a bug that needs two of them at
once is one plan among thousands. Each member here reads a run (its notes: the
writes the apiserver committed with their UIDs, deletion marks and finalizers;
the work-queue hand-outs; and where each fault point fell) and draws only the
plans its pattern points at:

``stale state``
    a restart after a write to an object whose kind has an older revision
    where an object of the same name had another UID, a deletionTimestamp or
    other finalizers; then, from the crash's own run, the stale LIST of that
    kind at one of those revisions (the ``stale_read`` points of the
    restarted informer's LIST). Sieve's "time travel". Once those are
    spent, a restart *before* a write that makes an older revision stale
    (the object is re-created while the controller restarts, and the
    restarted LIST shows the old one: :func:`stale_state_ahead`); then both
    again for an older revision of the same object that asked for another
    desired state (its spec: replicas, a volume's size), which a restarted
    controller acts to undo (:func:`stale_desired`).
``unobserved state``
    a watch drop just before the first of two events of one object (a create
    and its delete, a deletion mark and the delete, or two updates), so the gap
    until the relist covers both; then the drop with the relist held as long as
    its window allows (a wider gap).
``intermediate state``
    a crash between two writes of one reconcile (the same worker, no work-queue
    hand-out between them): the restarted controller meets the first write
    without the second.

The first member to run takes the canonical run with notes (one run, shared).
Candidates are ranked (a new UID before a deletion mark, these before
another spec, and that before other finalizers alone; a create or a deletion mark, then the delete, before two updates),
ties in a seeded random order. A member whose candidates are spent falls back to the small plans for
the rest of its turn (:func:`harness.explore._sampling._search_portfolio`).
No model is special: what a member draws is what the runs showed.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..sim import Fault, Hold, Ident, Note, Option, PlanChooser, RunOutcome

#: the members, in their turn order within a portfolio round
PATTERNS = ("stale state", "unobserved state", "intermediate state")


class Seen(PlanChooser):
    """A plan's chooser that keeps its run (``seen``), where each fault point fell and, if asked, the notes."""

    def __init__(self, plan: tuple[Any, ...] = (), *, notes: bool = False) -> None:
        super().__init__(plan)
        #: the world records the run's notes for this chooser (``harness.sim.run_batch``)
        self.wants_notes = notes
        self.outcome: RunOutcome | None = None
        #: (fault point, kind, position): the point was passed during the step of ``ran[position - 1]``
        self.fault_at: list[tuple[Ident, str, int]] = []

    def fault(self, point: Option) -> bool:
        fired = super().fault(point)
        assert point.ident is not None
        self.fault_at.append((point.ident, point.kind, len(self.ran)))
        return fired

    def seen(self, out: RunOutcome) -> None:
        self.outcome = out


@dataclass(frozen=True)
class Write:
    """One committed write as the apiserver noted it, at a position of the run (an index into ``ran``)."""

    pos: int
    actor: str
    ref: str  # "Kind ns/name"
    event: str  # ADDED, MODIFIED, DELETED
    uid: str
    deleting: bool
    finalizers: tuple[str, ...]
    #: the revision's name as a stale LIST's fault point says it ("MODIFIED default/rmq #2 (deleting)")
    revision: str
    #: a fingerprint of the revision's spec (its desired state), "" for a deletion
    spec: str = ""

    @property
    def kind(self) -> str:
        return self.ref.partition(" ")[0]


@dataclass
class View:
    """What one noted run shows a pattern member: its writes, its work-queue hand-outs, its fault points."""

    writes: list[Write] = field(default_factory=list)
    #: (position, actor) of every work-queue Get: a reconcile begins there
    gets: list[tuple[int, str]] = field(default_factory=list)
    faults: list[tuple[Ident, str, int]] = field(default_factory=list)
    ran: set[Ident] = field(default_factory=set)
    #: process -> the kinds its informers LIST (from their notes); a process absent here listed nothing we saw
    lists: dict[str, set[str]] = field(default_factory=dict)

    def lists_kind(self, actor: str, kind: str) -> bool:
        """Whether the process of ``actor`` LISTs ``kind`` through an informer (True when it lists nothing seen:
        a controller's own ``list(..., resource_version="0")`` is a stale read too, and it is not noted)."""
        kinds = self.lists.get(_process(actor))
        return kinds is None or kind in kinds

    @classmethod
    def of(cls, chooser: Seen) -> View:
        out = chooser.outcome
        assert out is not None and out.trace.notes is not None
        steps = [r.step for r in out.trace if r.kind in ("run", "timer")]  # one per action of ``ran``, in order
        view = cls(faults=list(chooser.fault_at), ran=set(chooser.ran))
        for n in out.trace.notes:
            pos = bisect.bisect_right(steps, n.step)  # the action whose step the note was made in, plus one
            if n.kind == "write" and n.field("event") is not None and n.keys:
                view.writes.append(_write(n, pos))
            elif n.kind == "queue" and n.field("op") == "get":
                view.gets.append((pos, n.actor))
            elif n.kind == "list" and n.field("listed") is not None:
                view.lists.setdefault(_process(n.actor), set()).add(str(n.field("listed")))
        return view


def _write(n: Note, pos: int) -> Write:
    """A write note as a :class:`Write`, with its revision's name as the apiserver's note gives it."""
    return Write(pos, n.actor, n.keys[0], str(n.field("event")), str(n.field("uid", "")),
                 bool(n.field("deleting", False)), tuple(n.field("finalizers", ()) or ()),
                 str(n.field("revision", "")), str(n.field("spec", "")))


def _differs(old: Write, now: Write) -> int:
    """How far an older revision of an object is from its state now: another UID 4, deleting 2, finalizers 1."""
    if old.event == "DELETED":
        return 0
    return 4 * (old.uid != now.uid) + 2 * old.deleting + (old.finalizers != now.finalizers)


def _identity(old: Write, now: Write) -> int:
    """:func:`_differs` without the finalizers: another UID 4, deleting 2. A revision from before a controller
    added its finalizer exists for almost every object it manages, so that difference alone ranks last."""
    return _differs(old, now) & ~1


def _finalizers(old: Write, now: Write) -> int:
    """1 when an older revision of the same object had other finalizers (and nothing else of :func:`_identity`)."""
    return 0 if _identity(old, now) else _differs(old, now)


def _desired(old: Write, now: Write) -> int:
    """1 when an older revision of the same object asked for another desired state (its spec: replicas, a volume's
    size) than it does now: a restarted controller that reads it acts to undo what the user asked for since."""
    if old.event == "DELETED" or old.uid != now.uid or not old.spec or not now.spec:
        return 0
    return int(old.spec != now.spec)


Differs = Callable[[Write, Write], int]


def stale_state(
    view: View, differs: Differs = _differs, *, own: bool | None = None
) -> list[tuple[int, Ident, dict[tuple[str, str], int]]]:
    """Restarts to try: (score, crash point, the revisions of its objects' kinds a stale LIST should show).

    For each crash point, the writes before it whose object's kind has an older
    revision where an object of the same name differed (another UID, a
    deletionTimestamp, other finalizers) name the revisions a stale LIST of
    that kind could be served at: the state the restarted controller must not
    act on. Best first: the crash right after the write that changed most.
    ``own``: only differences made by a write of the crashing process itself
    (True), or only by another actor (False); None: every one.
    """
    out: dict[Ident, tuple[int, dict[tuple[str, str], int]]] = {}
    history: dict[str, list[Write]] = {}
    # (kind, revision name) -> the process of each later write it differs from -> how far
    targets: dict[tuple[str, str], dict[str, int]] = {}
    writes = iter(view.writes)
    pending = next(writes, None)
    for point, kind, pos in view.faults:
        while pending is not None and pending.pos <= pos:
            w = pending
            history.setdefault(w.ref, []).append(w)
            if w.event != "DELETED":
                for old in history[w.ref][:-1]:
                    d = differs(old, w)
                    if d:
                        by = targets.setdefault((old.kind, old.revision), {})
                        by[_process(w.actor)] = max(by.get(_process(w.actor), 0), d)
            pending = next(writes, None)
        if kind != "crash" or point in out:
            continue
        mine = _process(point.actor)
        aimed = {at: max(d for proc, d in by.items() if _whose(own, proc, mine))
                 for at, by in targets.items() if any(_whose(own, proc, mine) for proc in by)}
        if aimed:
            out[point] = (max(aimed.values()), aimed)
    return [(score, point, t) for point, (score, t) in out.items()]


def _crashes(view: View) -> Iterator[tuple[Ident, int]]:
    """Each crash point of the run with its position (a point's identity is unique: its occurrence is counted)."""
    for point, kind, pos in view.faults:
        if kind == "crash":
            yield point, pos


def _whose(own: bool | None, writer: str, crashed: str) -> bool:
    """Whether a change by process ``writer`` is one a tier for ``own`` aims at, the ``crashed`` process restarting
    (None: every change; True: its own; False: another's)."""
    return own is None or (writer == crashed) == own


def _process(actor: str) -> str:
    """The process an actor's name puts it in (its first segment: ``operator`` of ``operator/reconcile/worker-1``)."""
    return actor.partition("/")[0]


def stale_desired(view: View, *, own: bool | None = None) -> list[tuple[int, Ident, dict[tuple[str, str], int]]]:
    """Restarts to try after a write that changed an object's desired state: (score, crash point, revisions).

    The revisions a stale LIST should show are the older ones of the same
    object whose spec differs from the one it has at the crash (the user
    scaled back up; the revision that asked for fewer replicas is what a
    restarted controller must not act on: zookeeper-operator#314). Best
    first: the crash farthest after the write that set the spec it has now
    (by then the controller has acted on it, and a stale view makes it undo
    that; a restart halfway through meets a live state that still agrees
    with the old spec, rabbitmq/cluster-operator#653). A crash too late for
    the apiserver's lag costs one run: its LIST offers no such revision.
    ``own`` as in :func:`stale_state`, of that write.
    """
    out: list[tuple[int, Ident, dict[tuple[str, str], int]]] = []
    for point, pos in _crashes(view):
        targets: dict[tuple[str, str], int] = {}
        since = len(view.ran) + 1
        for ws in _by_ref(view.writes).values():
            before = [w for w in ws if w.pos <= pos]
            alive = [w for w in before if w.event != "DELETED"]
            if not alive or before[-1].event == "DELETED":
                continue
            now = alive[-1]
            stale = [old for old in alive[:-1] if _desired(old, now)]
            if not stale:
                continue
            # the write that set the spec the object has now: the first of the writes after the last stale one
            setter = next(w for w in alive if w.pos > stale[-1].pos)
            if not _whose(own, _process(setter.actor), _process(point.actor)):
                continue
            for old in stale:
                targets[(old.kind, old.revision)] = 1
            since = min(since, pos - setter.pos)
        if targets:
            out.append((since, point, targets))
    return out


def stale_state_ahead(
    view: View, differs: Differs = _differs, *, own: bool | None = None
) -> list[tuple[int, Ident, dict[tuple[str, str], int]]]:
    """Restarts to try after :func:`stale_state`'s: a crash *before* the write that makes an older revision stale.

    The restarted controller lists while the run goes on, so the object of the
    same name may be re-created (or unmarked) between the crash and the
    controller's first reconcile: its stale LIST then shows the old revision
    as the present (instaclustr/cassandra-operator#407: a crash before the
    scale-up, the re-created pod's PVC deleted on the old pod's deletion mark).
    A crash point qualifies when a revision written before it differs from a
    write of the same object made after it; best first: the revision that
    differs most, then the crash closest before that later write (the LIST
    after the restart must still reach back to the old revision). ``own`` as in
    :func:`stale_state`, of the later write.
    """
    by_ref = _by_ref(view.writes)
    out: list[tuple[int, Ident, dict[tuple[str, str], int]]] = []
    for point, pos in _crashes(view):
        targets: dict[tuple[str, str], int] = {}
        nearest = len(view.ran) + 1
        for ws in by_ref.values():
            later = [w for w in ws if w.pos > pos and w.event != "DELETED"
                     and _whose(own, _process(w.actor), _process(point.actor))]
            for old in (w for w in ws if w.pos <= pos):
                for w in later:
                    d = differs(old, w)
                    if d:
                        at = (old.kind, old.revision)
                        targets[at] = max(targets.get(at, 0), d)
                        nearest = min(nearest, w.pos - pos)
        if targets:
            # the score orders by the difference first, then by how close the crash is to the later write
            out.append((max(targets.values()) * 100_000 - min(nearest, 99_999), point, targets))
    return out


def unobserved_state(view: View) -> list[tuple[int, Ident]]:
    """Watch drops to try: (score, drop point) before the first of two events of one object.

    A drop before the first event ends the watch; the reflector relists after
    its backoff, and what came and went meanwhile (a create and its delete, a
    deletionTimestamp and the delete, an update overwritten by the next) is
    never seen as events. Score: a create or a deletion mark followed by the
    delete 2 (Sieve's most common unobserved state: a controller that acts on
    what it finds terminating never finds it), two updates 1. The drop aimed at
    is the one before that very event: the n-th point of its label is the n-th
    such event of the object (an object updated twice before it is marked for
    deletion gets the drop before its third update, not its first).
    """
    aimed: dict[tuple[str, str, int], int] = {}  # (ref, event label, its occurrence) -> score
    for ref, ws in _by_ref(view.writes).items():
        nth: dict[str, int] = {}
        occurrence = []
        for w in ws:
            nth[w.event] = nth.get(w.event, 0) + 1
            occurrence.append(nth[w.event])
        for i, (a, b) in enumerate(itertools.pairwise(ws)):
            gone = b.event == "DELETED" and (a.event == "ADDED" or a.deleting)
            score = 2 if gone else 1 if b.event == "MODIFIED" else 0
            if score:
                aimed[(ref, f"before {a.event} {ref.partition(' ')[2]} ", occurrence[i])] = score
    out: list[tuple[int, Ident]] = []
    seen: set[Ident] = set()
    for point, kind, _pos in view.faults:
        if kind != "watch_drop" or point in seen:
            continue
        for (ref, label, n), score in aimed.items():
            if point.key == ref and point.n == n and label in point.label:
                seen.add(point)
                out.append((score, point))
                break
    return out


def _by_ref(writes: list[Write]) -> dict[str, list[Write]]:
    """The writes of each object, in run order."""
    by_ref: dict[str, list[Write]] = {}
    for w in writes:
        by_ref.setdefault(w.ref, []).append(w)
    return by_ref


def intermediate_state(view: View) -> list[tuple[int, Ident]]:
    """Crashes to try: (score, crash point) between two writes of one reconcile, by the actor that made them.

    A reconcile is what a worker does between two work-queue hand-outs; a
    crash point of that worker after its first write and before its next one
    leaves the first done and the second never. Score: 1 for each (one pattern).
    """
    gets: dict[str, list[int]] = {}
    for pos, actor in view.gets:
        gets.setdefault(actor, []).append(pos)
    mine: dict[str, list[Write]] = {}
    for w in view.writes:
        mine.setdefault(w.actor, []).append(w)
    spans: list[tuple[str, int, int]] = []  # (actor, after the first write, up to the second)
    for actor, ws in mine.items():
        for a, b in itertools.pairwise(ws):
            starts = gets.get(actor, [])
            i = bisect.bisect_right(starts, a.pos)
            if i < len(starts) and starts[i] <= b.pos:
                continue  # another reconcile began between them
            spans.append((actor, a.pos, b.pos))
    out: list[tuple[int, Ident]] = []
    for point, kind, pos in view.faults:
        if kind == "crash" and any(point.actor == actor and lo <= pos <= hi for actor, lo, hi in spans):
            out.append((1, point))
    return out


def _ranked(rng: random.Random, scored: Sequence[tuple[Any, ...]]) -> list[Any]:
    """Best score first, ties in a seeded random order."""
    keyed = [(-s, rng.random(), i) for i, (s, *_rest) in enumerate(scored)]
    return [scored[i] for _s, _r, i in sorted(keyed)]


class Aim:
    """The run the pattern members read first (the canonical run with notes), shared by the three."""

    def __init__(self) -> None:
        self.view: View | None = None

    def analyse(self) -> Iterator[PlanChooser]:
        """Yield the noted canonical run if no member has yet (then ``view`` is set)."""
        if self.view is None:
            chooser = Seen((), notes=True)
            yield chooser
            if self.view is None and chooser.outcome is not None:
                self.view = View.of(chooser)


def pattern_choosers(member: str, aim: Aim, seed: int) -> Iterator[PlanChooser]:
    """The plans of one pattern member, best first; the iterator ends when its candidates are spent."""
    rng = random.Random(seed * 0x2545F491 + PATTERNS.index(member) + 1)
    yield from aim.analyse()
    view = aim.view
    if view is None:
        return
    if member == "stale state":
        restarted: dict[Ident, Seen] = {}
        tried: set[tuple[Ident, Ident]] = set()
        # the restarts after a write first (Sieve's time travel), then the ones before a later write; first for
        # another identity or a deletion mark, then for another desired state (a spec), then for other finalizers
        # alone (a revision from before the controller added its own exists for nearly every object); all of
        # these first for what another actor changed, then for what the crashing process changed itself (a
        # controller that re-creates its own StatefulSet). Each tier has its own draw of ties: a tier's order does
        # not depend on whether the ones after it have candidates
        tiers = [tier for own in (False, True) for tier in (
            stale_state(view, _identity, own=own), stale_state_ahead(view, _identity, own=own),
            stale_desired(view, own=own), stale_state_ahead(view, _desired, own=own),
            stale_state(view, _finalizers, own=own), stale_state_ahead(view, _finalizers, own=own))]
        for i, tier in enumerate(tiers):
            draw = rng if i == 0 else random.Random(seed * 0x2545F491 + len(PATTERNS) + i)
            # a restart whose process lists none of the kinds it aims at cannot be served a stale revision of them
            listed = [(score, crash, {at: d for at, d in targets.items() if view.lists_kind(crash.actor, at[0])})
                      for score, crash, targets in tier]
            for _score, crash, targets in _ranked(draw, [c for c in listed if c[2]]):
                first = restarted.get(crash)
                if first is None:
                    first = restarted[crash] = Seen((Fault(crash),))
                    yield first
                if first.inert:
                    continue
                # the stale LISTs the crash brought about (the restarted informers' first LIST), at a revision
                # it aims at
                pairs = [(targets[(point.key or "", _revision(point) or "")], point)
                         for point, kind, _pos in first.fault_at
                         if kind == "stale_read" and (point.key, _revision(point)) in targets
                         and (crash, point) not in tried]
                for _s, point in _ranked(draw, pairs):
                    tried.add((crash, point))
                    yield PlanChooser((Fault(crash), Fault(point)))
    elif member == "unobserved state":
        for _score, drop in _ranked(rng, unobserved_state(view)):
            first = Seen((Fault(drop),))
            yield first
            if first.inert:
                continue
            relists = [x for x in first.ran if x.actor == drop.actor and x.label == f"{drop.actor} list"
                       and x not in view.ran]
            for x in relists[:1]:  # the relist after the drop, held: the gap widens to its window's end
                yield PlanChooser((Fault(drop), Hold(x, None)))
    else:
        for _score, crash in _ranked(rng, intermediate_state(view)):
            yield PlanChooser((Fault(crash),))


def _revision(point: Ident) -> str | None:
    """The revision a ``stale_read`` point serves, by its event's name ("MODIFIED default/rmq #2 (deleting)")."""
    _, sep, name = point.label.rpartition(" at the revision of ")
    return name if sep else None
