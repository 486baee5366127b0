"""The slice of a told run: which write each deciding read read from, and what the story keeps.

Step 2 of :mod:`harness.explore._story`. Each step's footprint
(:class:`harness.sim.Access`) says what it read and wrote, by key; a read
leads to the write it read from (the last write of that resource before it,
or for a watch event the commit of its revision), the step that made the
write joins the slice, and so do the reads of the decision that made it (the
earlier steps of the same actor it continues). :func:`_startup` says which of
an operator's start-up steps the slice needs (the others take no line).
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..sim import Access, Record, Trace

_REF = re.compile(r"^[A-Z][A-Za-z0-9]* [^ ]+$")  # an apiserver object: "Kind ns/name" or "Kind name"

#: the oracle's reads are made after the step the violation follows
_ORACLE = 1 << 40


@dataclass
class _Slice:
    """Reads-from over one told run: which step each deciding read read from, and what the slice kept."""

    #: step -> its accesses (faults' and picks' folded into the step they happened in)
    fps: dict[int, tuple[Access, ...]]
    continues: dict[int, int]
    #: resource -> its deciding writes, in order
    writers: dict[str, _WriteLog]
    #: the steps kept, each with how far from the violation (1: it wrote what the oracle read)
    depth: dict[int, int]
    #: reader step -> [(writer step, the read)] of the edges the slice followed
    edges: dict[int, list[tuple[int, Access]]]
    #: writer step -> the resources of its writes somebody in the slice read
    used: dict[int, set[str]]
    #: steps that joined as the decision a later step continues
    decisions: set[int]
    #: step -> the decision (an earlier step of its actor) it continues
    decided_by: dict[int, int]


class _WriteLog:
    """One resource's deciding writes in run order, indexed so that "which write did this read see" is a
    binary search, not a walk over every write before it (a runaway's 200,000 steps made the walk minutes)."""

    __slots__ = ("at", "by_version")

    def __init__(self) -> None:
        #: (step, index in the step) of each write, ascending
        self.at: list[tuple[int, int]] = []
        #: version -> the positions in ``at`` of the writes that made it, ascending
        self.by_version: dict[int, list[int]] = {}

    def add(self, step: int, index: int, version: int | None) -> None:
        if version is not None:
            self.by_version.setdefault(version, []).append(len(self.at))
        self.at.append((step, index))


def _writers(fps: dict[int, tuple[Access, ...]]) -> dict[str, _WriteLog]:
    out: dict[str, _WriteLog] = {}
    for step in sorted(fps):
        for i, a in enumerate(fps[step]):
            if a.write and a.decides:
                log = out.get(a.resource)
                if log is None:
                    log = out[a.resource] = _WriteLog()
                log.add(step, i, a.version)
    return out


def _read_from(writers: dict[str, _WriteLog], a: Access, step: int, index: int) -> int | None:
    """The step whose write ``a`` (read at ``step``, access ``index``) read from; None: its own, or no write.

    The last write of the version it read, before it; a version it did not see written: the last write before it.
    """
    log = writers.get(a.resource)
    if log is None:
        return None
    before = bisect.bisect_left(log.at, (step, index))  # the writes at positions < before came first
    if before == 0:
        return None
    best = before - 1
    if a.version is not None:
        made = log.by_version.get(a.version)
        if made:
            j = bisect.bisect_left(made, before)
            if j:
                best = made[j - 1]
    wrote = log.at[best][0]
    return None if wrote == step else wrote


def _owners(records: Sequence[Record]) -> dict[int, int]:
    """Each step -> the step of the action (a run or a timer) it belongs to: notes inside an action are its own."""
    owner: dict[int, int] = {}
    cur = 0
    for r in records:
        if r.kind in ("run", "timer"):
            cur = r.step
        owner[r.step] = cur
    return owner


def _slice(trace: Trace, records: Sequence[Record], seeds: Sequence[tuple[int, Sequence[Access]]],
           seed_steps: Iterable[int], last: int) -> _Slice:
    """Walk back from the seeds' reads over reads-from and program order (see the module docstring)."""
    owner = _owners(records)
    fps: dict[int, tuple[Access, ...]] = {}
    for step, acc in trace.footprints.items():
        if step > last:
            continue
        at = owner.get(step, step)
        fps[at] = fps.get(at, ()) + tuple(acc)
    # A model's own step on a key (world.step(label, key=K)) that records nothing else reads and writes K: the model
    # said what the step is about
    for r in records:
        if r.kind == "run" and r.key and not r.label.startswith("response ") and not any(
                not a.resource.startswith("memory") for a in fps.get(r.step, ())):
            res = f"step key {r.key}"
            fps[r.step] = (*fps.get(r.step, ()), Access(res), Access(res, True))
    # A step reads its process's memory (World.memory_of) only where its stretch of program starts, after a wait
    # for work or time: the steps that continue it act on what that one read. The scenario's own actor is its
    # script: it reads no memory.
    actor_at = {r.step: r.actor for r in records}
    for step, acc in list(fps.items()):
        if step in trace.continues or actor_at.get(step) == "main":
            kept = tuple(a for a in acc if a.write or a.said or not a.resource.startswith("memory"))
            if len(kept) != len(acc):
                fps[step] = kept
    writers = _writers(fps)
    sl = _Slice(fps, dict(trace.continues), writers, {}, {}, {}, set(), {})
    todo: deque[int] = deque()  # breadth first: a step's depth is its distance from the violation

    actor_of = {r.step: r.actor for r in records}
    via_memory: set[int] = set()  # steps that joined only as the last change of a memory the harness cannot see

    def reach(reader: int, readings: Sequence[Access], depth: int) -> None:
        for i, a in enumerate(readings):
            if a.write or not a.decides:
                continue
            memory = a.resource.startswith("memory")
            if memory and reader in via_memory:
                continue  # one hop only: what a whole memory last saw, not every change before it
            w = _read_from(writers, a, reader, i)
            if w is None or w > last:
                continue
            sl.edges.setdefault(reader, []).append((w, a))
            sl.used.setdefault(w, set()).add(a.resource)
            if w not in sl.depth:
                sl.depth[w] = depth
                todo.append(w)
                if memory:
                    via_memory.add(w)

    for at, reads in seeds:
        reach(at, reads, 1)
        # the last step that read what the oracle read, from the same write: a decision made on the value the
        # oracle found wrong (a sync that skipped; what did nothing is never a write)
        for i, a in enumerate(reads):
            if a.write or not a.decides:
                continue
            w = _read_from(writers, a, at, i)
            for step in sorted(fps, reverse=True):
                if step > last or (w is not None and step <= w):
                    break
                if step in sl.depth:
                    continue
                if any(b.resource == a.resource and not b.write and b.decides and b.said
                       and _read_from(writers, b, step, j) == w for j, b in enumerate(fps[step])):
                    sl.depth[step] = 1
                    todo.append(step)
                    break
    for step in seed_steps:
        if step <= last and step not in sl.depth:
            sl.depth[step] = 1
            todo.append(step)
    while todo:
        step = todo.popleft()
        d = sl.depth[step]
        reach(step, fps.get(step, ()), d + 1)
        # the decision: the earlier steps of the same actor this one continues, back to the first that read
        # (not the scenario's own actor: a test's steps are its script, not decisions on what it read)
        prev = sl.continues.get(step) if actor_of.get(step) != "main" else None
        while prev is not None:
            if any(not a.write and a.decides and (a.said or _read_from(writers, a, prev, i) is not None)
                   for i, a in enumerate(fps.get(prev, ()))):  # it read a value (not a memory nothing wrote)
                sl.decisions.add(prev)
                sl.decided_by.setdefault(step, prev)
                if prev not in sl.depth:
                    sl.depth[prev] = d
                    todo.append(prev)
                break
            prev = sl.continues.get(prev)
    return sl


def _startup(sl: _Slice, rec_of: dict[int, Record], oracle: Sequence[Access], keep: set[int]) -> set[int]:
    """The operator's start-up steps of the slice that the slice does not need.

    Start-up is what a process's actors (an operator's: the first segment of
    their names) did before the process first read a kind the violated oracle
    read, or an object the scenario wrote, from the apiserver or an informer's
    cache (a kopf operator's login, its version probe, its LISTs of CRDs and
    Namespaces); a process that never reads one has none. Such a step joins
    the slice by program order, by a wake-up or by a log line, and says how
    every run starts. It is needed when a step after start-up (or the oracle)
    read from a write of it, directly or through other start-up steps: then
    it keeps its chance of a line. The scenario's own steps are never
    start-up (its set-up writes are the premise the operator read), and
    neither are a plan's.

    Rejected: dropping every step before the boundary (a default the
    operator wrote at start-up and a later reconcile read is a cause);
    counting memory and wake-up edges as needs (every kopf step reads the
    memory its start-up wrote, and every task was woken by the one that
    spawned it); counting program order as a need (the first LIST of a kind
    continues the LIST of CRDs before it, which decided nothing of it); ending
    start-up at the first read of a judged kind alone (a ReplicaSet
    controller whose oracle judges Pods reads its ReplicaSet first: that read
    is its decision, not its start-up).
    """
    kinds = {a.resource.split(" ", 1)[0] for a in oracle if _REF.match(a.resource)}
    if not kinds:
        return set()
    boundary: dict[str, int] = {}  # process (an actor's first name segment) -> where its start-up ended
    for step in sorted(sl.fps):
        r = rec_of.get(step)
        if r is None or r.actor == "main" or (proc := r.actor.split("/", 1)[0]) in boundary:
            continue
        for i, a in enumerate(sl.fps[step]):
            if a.write or not a.decides or (kind := _kind_of(a.resource)) is None:
                continue
            w = _read_from(sl.writers, a, step, i)
            if kind in kinds or (w is not None and w in rec_of and rec_of[w].actor == "main"):
                boundary[proc] = step
                break
    early = {s for s in sl.depth if s in rec_of and s < boundary.get(rec_of[s].actor.split("/", 1)[0], 0)} - keep
    if not early:
        return set()
    needed: set[int] = set()
    todo = [r for r in sl.edges if r not in early]
    while todo:
        reader = todo.pop()
        for w, a in sl.edges.get(reader, ()):
            if w in early and w not in needed and not _incidental(a):
                needed.add(w)
                todo.append(w)
    return early - needed


#: an informer's cache entry or list: "informer/Pod cache: default/web-0", "ctrl/informer/Pod cache: *"
_CACHE = re.compile(r"^(?:.+/)?informer/(?P<kind>[\w.]+) cache: ")


def _kind_of(resource: str) -> str | None:
    """The kind of an apiserver object, list or informer cache entry a footprint names; None for anything else."""
    if _REF.match(resource):
        return resource.split(" ", 1)[0]
    m = _CACHE.match(resource)
    return m["kind"] if m is not None else None


def _incidental(a: Access) -> bool:
    """A read that says how a step came to run or what its process held, not what it decided on: a wake-up, a
    whole unrecorded memory."""
    return a.said == "woken" or a.resource.startswith(("wake ", "memory"))
