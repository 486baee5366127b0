"""The story of a counterexample: the reads that decided, in at most fifteen lines.

A trace lists scheduling points; a reader wants the upstream story: which
delivery was late or which watch broke, what the controller's cache showed
when it decided, what it wrote, and when the oracle broke. The story is
derived, never written by the model's author, and it is the one explanation
of a counterexample: the hunt prints it, a pytest failure opens with it,
``replay --story`` prints it and the HTML page's summary is built from it.

1. **Told.** The counterexample is run once more with notes on (the same
   choices, the same trace): each step's footprint (:class:`harness.sim.Access`,
   recorded by :meth:`World.touch`) says what it read and wrote, by key (an
   apiserver object at a revision, an informer cache entry, a work-queue item,
   an expectation) and what it saw ("lister: 1 Pod of default; web-2 absent").
2. **Sliced over reads-from.** From what the violated oracle read (or the
   violating actor's last step), each read leads to the write it read from:
   the last write of that resource before it, or for a watch event the commit
   of its revision; the step that made the write joins the slice, and so do
   the reads of the decision that made it: the earlier steps of the same
   actor it continues (program order, back to where it last waited for work
   or time) that read something. Steps that only happened to touch a name,
   and deliveries nobody read, stay out.
3. **Told in the order it happened.** The plan entries come first, each
   once, in the order they acted, with the hold as it happened ("from #14 for
   2.000 s", "for no time"); then the slice's steps in step order (which
   respects reads-from: a read reads an earlier write), each with the values
   it read and what it wrote; then the violation, whole (a long one wraps), at
   its virtual time. The header counts what the slice kept, what is shown, and
   what was left out and why.

Rejected: a causal order that kept a decision next to the write it made
(#35, #37, #34, #36): a reviewer read it as steps out of order, and step
order already tells every write before the reads of it. A slice by object name
across kinds (it kept 159 of 171 steps of a
SidecarSet model and left out the write that mattered, because a name matches
everything that touched it and nothing that was only read); picking the
page's summary by whole-name match (two explanations of one counterexample
that disagreed).
"""

from __future__ import annotations

import bisect
import re
import textwrap
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..sim import Access, Fault, Hold, Ident, Note, Pick, Record, Trace, Violation, identity_label

if TYPE_CHECKING:
    from ._counterexample import Counterexample

_NUMBER = re.compile(r"\d+(\.\d+)?")
_REF = re.compile(r"^[A-Z][A-Za-z0-9]* [^ ]+$")  # an apiserver object: "Kind ns/name" or "Kind name"

#: at most this many lines, the plan entries and the violation included
MAX_LINES = 15
#: a step's line is cut here (the full text is in the trace); the violation's never is: it wraps
MAX_WIDTH = 300

# note kinds and ops that a step's line keeps first (a fault's loss, a relist, a model's log line)
_TELLING = {"relist": 3, "predicate": 2, "watch": 4, "crash": 4, "gc": 3, "log": 5, "step": 4, "list": 1}
_TELLING_OPS = {"unsatisfied": 3, "expired": 4, "coalesced": 2, "dirty": 1}

#: the oracle's reads are made after the step the violation follows
_ORACLE = 1 << 40


def name_of(ref: str) -> str:
    """The ``namespace/name`` (or bare name) of an object reference ``"Kind ns/name"``, or a queue key as it is."""
    return ref.split(" ", 1)[1] if " " in ref else ref


@dataclass(frozen=True)
class Story:
    """What a counterexample tells: a few lines, plan entries first, the violation last."""

    lines: tuple[str, ...]
    #: the steps the story shows (a report marks them in its timeline)
    steps: frozenset[int]
    #: every step of the slice, shown or not (a step program never folds them)
    causal: frozenset[int]
    #: the violation's line, whole: its instant, and the last step before it when time passed
    verdict: str
    #: whether the notes came from a fresh run (False: the run could not be repeated; steps only)
    told: bool = True
    #: the plan entries as the story tells them, one line each (the page's "how the run got there"), in the
    #: order they happened
    entries: tuple[str, ...] = ()
    #: the apiserver objects the violation and the shown steps read or wrote (the page's state table)
    objects: tuple[str, ...] = ()
    #: for each of ``entries``, the index of its entry in the counterexample's plan (the plan's order is the
    #: search's, the story's is the run's: a page that pairs a line with its plan entry's steps needs both)
    entry_plan: tuple[int, ...] = ()
    #: the harm, in words: the write of a controller that the violated oracle read last, the reads that decided it
    #: and where each read's value came from (None: the oracle read no controller's write the run recorded)
    harm: str | None = None

    def __str__(self) -> str:
        return "\n".join(self.lines)


# ------------------------------------------------------------------ the slice
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


def tell(cx: Counterexample, trace: Trace | None = None, *, max_lines: int = MAX_LINES) -> Story:
    """The story of ``cx`` from ``trace`` (default: :meth:`Counterexample.told`), in at most ``max_lines`` lines."""
    if trace is None:
        trace = cx.told()
    v = cx.violation
    notes = [n for n in trace.notes if n.step <= v.step]
    records = [r for r in presented(trace, notes, plan=cx.plan is not None) if r.step <= v.step]
    rec_of = {r.step: r for r in records}
    owner = _owners(records)
    by_step: dict[int, list[Note]] = {}
    for n in notes:
        by_step.setdefault(owner.get(n.step, n.step), []).append(n)
    keep: set[int] = set()
    told: set[int] = set()  # steps a plan line tells already (a fault, a pick): no line of their own below
    ordered = _entry_lines(cx.plan, records, notes, keep, told, v.time) if cx.plan is not None else []
    head = [line for line, _ in ordered] if cx.plan is not None else _positional_lines(records, keep, told)

    # --- the slice, from what the oracle read (and the violating actor's last step) back
    seed_steps: list[int] = []
    last_run = next((r for r in reversed(records) if r.kind in ("run", "timer")), None)
    if v.actor is not None:
        mine = next((r for r in reversed(records) if r.actor == v.actor and r.kind in ("run", "timer")), None)
        if mine is not None:
            seed_steps.append(mine.step)
    elif last_run is not None and v.time <= last_run.time + 1e-9 and v.kind == "oracle" and (
            not _checked_later(v) or not trace.oracle_reads):
        # an invariant or a bound that held before this step: it broke it (and an end-of-run check that read
        # nothing the harness records, the model's memory: where the run stood is all there is to go by)
        seed_steps.append(last_run.step)
    oracle = tuple(trace.oracle_reads)
    if not oracle and not seed_steps and last_run is not None and v.kind != "oracle":
        seed_steps.append(last_run.step)  # a runaway or a deadlock: where the run stood
    sl = _slice(trace, records, [(_ORACLE, oracle)], seed_steps, v.step)
    causal = {s for s in sl.depth if s in rec_of}
    # the model's own log lines (World.note) are its author's story: their steps join the slice
    for step, ns in by_step.items():
        if step in rec_of and step not in causal and any(n.kind == "log" for n in ns):
            causal.add(step)
            sl.depth[step] = 2
    fallback = False
    if not causal and trace.noted:
        # the oracle read nothing the harness records (a metric, the model's own memory): the last steps that
        # noted something are where it broke, said as such in the header
        fallback = True
        for r in reversed(records):
            if r.kind in ("run", "timer") and by_step.get(r.step) and len(causal) < MAX_LINES:
                causal.add(r.step)
                sl.depth[r.step] = 1

    # --- the violation, whole, at its instant
    if last_run is not None and v.time > last_run.time + 1e-9:
        when = f"at t={v.time:.3f} (no step ran since #{last_run.step} at t={last_run.time:.3f})"
    else:
        when = f"at t={v.time:.3f}, step #{v.step}"
    verdict = f"=> {when}: {v.describe()}"
    tail = textwrap.wrap(verdict, MAX_WIDTH, subsequent_indent="   ", break_long_words=True,
                         break_on_hyphens=False) or [verdict]
    if len(tail) > max_lines - 2:  # never cut: a story shorter than its violation shows the violation alone
        max_lines = len(tail) + 2

    # --- the steps worth a line, the most telling first when more are kept than fit
    if 1 + len(head) + len(tail) > max_lines:
        cut = max(0, max_lines - 1 - len(tail) - 1)
        head = [*head[:cut], f"... {len(head) - cut} more plan entries (every one is in the trace's plan)"]
    room = max(0, max_lines - 1 - len(head) - len(tail))
    lines_of: dict[int, str] = {}
    scores: dict[int, float] = {}
    for step in causal:
        if step in told:
            continue  # said by its plan line
        r = rec_of[step]
        line = _line(r, sl, by_step.get(step, ()), step in keep)
        if line is None:
            continue
        lines_of[step] = line
        scores[step] = _score(step, sl, by_step.get(step, ()), keep)
    # the operator's start-up (before its first read of a kind the oracle judges: a login, a version probe, the
    # LISTs of other kinds) takes no line the slice does not need
    startup = _startup(sl, rec_of, oracle, keep) & set(lines_of)
    for step in startup:
        del lines_of[step]
    repeats: set[int] = set()
    shapes: dict[str, list[int]] = {}
    for step in sorted(lines_of):
        shapes.setdefault(_NUMBER.sub("N", lines_of[step].split("  ", 1)[1]), []).append(step)
    for same in shapes.values():
        if len(same) > 2:  # a retry loop, a backoff doubling: its first and last occurrence
            repeats.update(same[1:-1])
            lines_of[same[-1]] += f" (the same as #{same[0]}, {len(same) - 2} time(s) between)"
    # the write the violated oracle read last (where an oracle that stops at the first wrong value stopped): always
    # shown, whatever else competes for the room
    last_read = next((w for w, _a in reversed(sl.edges.get(_ORACLE, ())) if w in lines_of), None)
    if last_read is not None and room:
        repeats.discard(last_read)
    # what the harm depends on across actors is never "less telling": the user's writes a controller's deciding read
    # read (a delete and a re-create that make a by-name write wrong), ranked right after the write the oracle read
    # (of what the oracle judges, and past its first write: a delete, a re-create, an update, never the set-up)
    judged = {a.resource for a in oracle if not a.resource.endswith(" *")}
    first_write = {res: log.at[0][0] for res, log in sl.writers.items() if log.at}
    needed = {w for reader, edges in sl.edges.items() if reader == _ORACLE or (
              rec_of.get(reader) is not None and rec_of[reader].actor != "main") for w, a in edges
              if w in lines_of and rec_of[w].actor == "main" and a.resource in judged
              and first_write.get(a.resource) != w}
    # and the harmful actor's own reads of what the oracle judges (the value its write adopted: a stale pairing)
    harm_step = max((w for w, _a in sl.edges.get(_ORACLE, ()) if w in rec_of), default=None)  # the last to change it
    harmer = rec_of[harm_step].actor if harm_step is not None else None
    if harm_step is not None and harm_step in lines_of:
        needed.add(harm_step)
    unread = set(judged)  # its last read of each (the value its write adopted), not every read before it
    for r in reversed(records) if harmer not in (None, "main") else ():
        if not unread:
            break
        if r.step >= (harm_step or 0) or r.actor != harmer or r.step in told:
            continue
        got = {a.resource for a in sl.fps.get(r.step, ()) if not a.write and a.decides} & unread
        if got:
            unread -= got
            line = lines_of.get(r.step) or _line(r, sl, by_step.get(r.step, ()), r.step in keep)
            if line is not None:
                causal.add(r.step)
                lines_of[r.step] = line
                scores.setdefault(r.step, _score(r.step, sl, by_step.get(r.step, ()), keep))
                needed.add(r.step)
    repeats -= needed
    rank = sorted((s for s in lines_of if s not in repeats),
                  key=lambda s: (s != last_read, s not in needed, -scores[s], -s))
    chosen = set(rank[:room])
    body = [_cut(lines_of[s]) for s in sorted(causal) if s in chosen]  # in the order it happened
    startup -= set(lines_of)  # (the harmful actor's last read of what the oracle judges is never start-up noise)
    quiet = len(causal) - len(lines_of) - len(causal & told) - len(startup)  # kept, nothing to say: a response, a wait
    unshown = len(rank) - len(chosen)
    title = _title(cx, trace, causal, len(chosen), len(causal & told), repeats & causal, unshown, quiet, fallback,
                   len(startup))
    objects = _objects(oracle, chosen, sl)
    lines = [title, *head, *body, *tail]
    entries = tuple(h for h in head if not h.startswith("... "))
    harm = _harm(sl, rec_of, harm_step)
    return Story(tuple(lines), frozenset(chosen), frozenset(causal), verdict, trace.noted, entries, objects,
                 tuple(i for _, i in ordered[:len(entries)]), harm)


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


def _harm(sl: _Slice, rec_of: dict[int, Record], wrote: int | None, most: int = 3) -> str | None:
    """"app-operator's 'update Tenant default/acme status' at #45 (t=3.100) wrote what the oracle read, on its reads
    of Secret default/acme-credentials (as #12, main's 'create Secret default/acme-credentials', left it)": the
    controller's action that broke the oracle, and the reads its decision rested on, each with the write it saw.

    The harm is an operator's or a controller's write, never the scenario's own (a user's write the oracle reads is
    the premise, not the harm): the last write the oracle read from, else none."""
    if wrote is None or wrote not in rec_of:
        return None
    r = rec_of[wrote]
    if r.actor == "main":
        return None
    # the reads that decided it: its own, and those of the decision it continues (a reconcile's earlier GETs)
    reads: list[tuple[int, Access]] = []
    step: int | None = wrote
    seen: set[int] = set()
    while step is not None and step not in seen:
        seen.add(step)
        reads.extend((w, a) for w, a in sl.edges.get(step, ()) if w != wrote)
        step = sl.decided_by.get(step)
    said: list[str] = []
    for w, a in sorted(reads, key=lambda t: -t[0]):
        src = rec_of.get(w)
        if src is None or a.said == "woken" or a.resource.startswith("wake"):
            continue  # (being woken is how it came to run, not what it decided on)
        what = "its memory" if a.resource.startswith("memory") else a.resource
        if any(s.startswith(what + " ") for s in said):
            continue
        who = "the scenario" if src.actor == "main" else src.actor
        said.append(f"{what} as #{w} ({who}: {_words(src.actor, src.label)}) left it")
        if len(said) == most:
            break
    on = f", on its read{'s' if len(said) > 1 else ''} of " + "; ".join(said) if said else ""
    return f"{r.actor}'s '{_words(r.actor, r.label)}' at #{r.step} (t={r.time:.3f}) wrote what the oracle read{on}"


def _words(actor: str, label: str) -> str:
    """A step's label without its actor's name in front."""
    return label[len(actor) + 1:].strip() if label.startswith(actor + " ") or label.startswith(actor + ":") \
        else label


def _checked_later(v: Violation) -> bool:
    """Whether the violation is an end-of-run check or a deadline (not an invariant the last step broke)."""
    return v.message.startswith("at the end of the run") or "did not happen within" in v.message \
        or "never happened" in v.message


def _title(cx: Counterexample, trace: Trace, causal: set[int], shown: int, by_plan: int, repeats: set[int],
           unshown: int, quiet: int, fallback: bool, startup: int = 0) -> str:
    """The header: deviations, the slice against the run, and every kept step accounted for."""
    n = len(cx.plan) if cx.plan is not None else cx.trace.deviations
    parts = [f"story: {n} deviation(s); the slice keeps {len(causal)} of {trace.steps} step(s)"]
    said = [f"{shown} shown"]
    if by_plan:
        said.append(f"{by_plan} told by the plan")
    if repeats:
        said.append(f"{len(repeats)} repeat(s) folded")
    if unshown:
        said.append(f"{unshown} less telling left out (in the trace)")
    if quiet:
        said.append(f"{quiet} with nothing to say left out")
    if startup:
        said.append(f"{startup} startup step(s) left out")
    head = parts[0] + ": " + ", ".join(said)
    if fallback:
        head += " (the oracle read nothing the harness records: the last steps that noted something)"
    if not trace.noted:
        head += " (the run could not be told again: steps only)"
    return head


def _score(step: int, sl: _Slice, notes: Sequence[Note], keep: set[int]) -> float:
    """How telling a kept step is: near the violation, a commit or an error, a decision on what it read, a stale
    read, a fault's or a relist's note, a plan's step; plumbing (a work queue's Get alone) least."""
    depth = sl.depth.get(step, 9)
    score = 10.0 / depth
    if step in keep:
        score += 6
    fp = sl.fps.get(step, ())
    used = sl.used.get(step, set())
    if any(a.write and a.resource in used and _REF.match(a.resource) for a in fp):
        score += 4  # a commit somebody read
    decided = [a for _w, a in sl.edges.get(step, ()) if a.said]
    if any(" queue: " not in a.said for a in decided):
        score += 3  # a decision on values it read (a lister, an expectation, a GET)
    elif decided:
        score -= 4  # a Get off a work queue and nothing else
    if any(a.version is not None and "not yet in the cache" in a.said for a in fp):
        score += 3  # it decided on a cache that had not seen a write: the crux of most of these races
    for n in notes:
        if not _telling(n):
            continue
        if n.kind == "log" and n.field("level") in ("ERROR", "CRITICAL", "WARNING"):
            score += 8 if n.field("level") != "WARNING" else 5  # the operator said what went wrong, in its words
        score += 0.5 * max(_TELLING.get(n.kind, 1), _TELLING_OPS.get(str(n.field("op")), 0))
        if n.kind == "write" and n.field("code"):
            score += 3
        if n.kind == "predicate":
            score += 3
    return score


def _line(r: Record, sl: _Slice, notes: Sequence[Note], planned: bool) -> str | None:
    """One step of the story: its words, what it read that decided, what it wrote that was read, its notes."""
    words = _said(r.actor, r.label)
    fp = sl.fps.get(r.step, ())
    reads: list[str] = []
    shown: set[str] = set()
    for w, a in sl.edges.get(r.step, ()):
        if a.said.startswith("rv="):
            continue  # one entry of a LIST it read: the LIST's own line says how many and which
        shown.add(a.said)
        if a.said and not _echo(a.said, words):
            reads.append(f"{a.said} (#{w})")
        elif not a.said and a.resource.startswith("memory"):  # what the last handler call did to its memory
            last = next((b.said for b in sl.fps.get(w, ()) if b.write and b.resource == a.resource), "")
            whose = f"the memory of {a.resource[len('memory: '):]}" if ": " in a.resource else "memory"
            reads.append(f"{whose}, last changed by {last} (#{w})")
    for a in fp:  # what it read of a write it did not see, and the checks it made
        if not a.write and a.decides and a.said and (a.version is None or "not yet" in a.said) \
                and a.said not in shown and not a.said.startswith(("rv=", "GET ")) and not _echo(a.said, words):
            shown.add(a.said)
            reads.append(a.said)
    used = sl.used.get(r.step, set())
    writes = [a.said for a in fp if a.write and a.decides and a.said and a.resource in used
              and not _echo(a.said, words)]
    parts: list[str] = []
    reads = sorted(dict.fromkeys(reads), key=_plumbing)  # what decided first; a queue's Get, a memory last
    while len(reads) > 1 and len("; ".join(reads)) + len(words) > MAX_WIDTH - 30 and _plumbing(reads[-1]):
        reads.pop()
    if reads:
        parts.append("read " + "; ".join(reads))
    if writes:
        parts.append("wrote " + "; ".join(dict.fromkeys(writes)))
    for t in dict.fromkeys(n.text for n in notes if _telling(n)):
        code = re.search(r" -> (\d{3} \w+)", t)
        if not any(t in p or (code is not None and code.group(1) in p) for p in parts):
            parts.append(t)
    if not parts and not planned and not any(a.write and a.resource in used for a in fp):
        return None  # it read and wrote nothing worth a word (a response, a wake-up): counted, not shown
    said = " | ".join(parts)
    while len(said) + len(words) > MAX_WIDTH - 20 and len(parts) > 1:
        parts.pop()  # the notes go first, then the writes: the reads that decided stay
        said = " | ".join(parts)
    return f"#{r.step:<4} t={r.time:.3f}  {words}" + (f": {said}" if said else "")


def _plumbing(said: str) -> int:
    """How little a read says about a decision: 0 a stale or absent read, an expired or pending expectation;
    1 any other value read; 2 a work queue's Get or a whole memory (the story gives way to the others)."""
    if " queue: Get " in said or said.startswith("memory") or said.startswith("the memory of"):
        return 2
    if any(w in said for w in ("absent", "not yet", "expired", "unsatisfied", "stale", " -> 4", "waits for")):
        return 0
    return 1


def _telling(n: Note) -> bool:
    """Whether a note says something a step's reads and writes do not (an error, a loss, a filter, a log line)."""
    if n.kind in ("step", "handler", "expectation") or (n.kind == "write" and not n.field("code")):
        return False
    if n.kind in ("list", "relist") and not n.field("relist"):
        return False  # the first LIST of an informer is how every run starts
    if n.kind == "predicate":
        return bool(n.field("verdict") == "dropped")
    if n.kind == "queue":
        return n.field("op") in ("coalesced", "dirty", "add_rate_limited")
    return True


def _echo(said: str, words: str) -> bool:
    """Whether ``said`` only repeats the step's own label (a delivery reading the event it delivers)."""
    head = said.split(" rv=", 1)[0]
    if head in words:
        return True
    m = re.search(r"(\S+) rv=(\d+)", said)
    return m is not None and f"{m.group(1)} rv={m.group(2)}" in words and "cache: " in said


def _objects(oracle: Sequence[Access], chosen: set[int], sl: _Slice) -> tuple[str, ...]:
    """The apiserver objects ("Kind ns/name") the oracle read and the shown steps read or wrote, in that order."""
    out: dict[str, None] = {}
    for a in oracle:
        if _REF.match(a.resource) and not a.resource.endswith(" *"):
            out[a.resource] = None
    for step in sorted(chosen):
        for a in sl.fps.get(step, ()):
            if a.decides and _REF.match(a.resource) and not a.resource.endswith(" *"):
                out[a.resource] = None
    return tuple(out)


def _cut(text: str) -> str:
    """One line of at most :data:`MAX_WIDTH` characters (a value read or written may hold a newline: a kopf
    annotation's JSON ends with one, and a story line must stay one line)."""
    text = text.replace("\r", "").replace("\n", " ").rstrip()
    return text if len(text) <= MAX_WIDTH else text[: MAX_WIDTH - 3] + "..."


def _said(actor: str, label: str) -> str:
    label = label[len(actor) + 1:] if label.startswith(actor + " ") else label
    return f"{actor}: {label}"


#: a watch delivery's label: an informer's ("ctrl/informer/Pod deliver ADDED ns/a rv=3") or a real client's
#: watch connection's ("app-operator/watch/Secret deliver DELETED default/db-credentials rv=9")
_DELIVERY = re.compile(r"^(?:(?P<who>.+?)/)?(?P<via>informer|watch)/(?P<kind>[\w.]+) deliver "
                       r"(?P<ev>ADDED|MODIFIED|DELETED|BOOKMARK)\s+(?P<key>[^\s\[]+)")


def delivery_words(actor: str, label: str) -> tuple[str, str, str] | None:
    """A watch delivery as a reader names it: (its event, "TYPE event of ns/name", "who's Kind watch"), or None.

    "the DELETED event of default/db-credentials" and "app-operator's Secret
    watch" (a real client's watch connection) or "scheduler's Pod informer":
    the story's hold line and the page's sentence of why both name a held
    delivery by its event, object and watch, not by the actor that sends it.
    """
    text = identity_label(label)
    if not text.startswith(actor) and not any(f"{v}/" in text for v in ("informer", "watch")):
        text = f"{actor} {text}"
    m = _DELIVERY.match(text)
    if m is None:
        return None
    who = f"{m['who']}'s" if m["who"] else "the"
    via = "informer" if m["via"] == "informer" else "watch"
    return m["ev"], f"the {m['ev']} event of {m['key']}", f"{who} {m['kind']} {via}"


def held_span(what: Ident, records: Sequence[Record],
              by_ident: dict[tuple[str, str, str | None, int], Record]) -> tuple[Record | None, Record | None]:
    """A held action's span: the step that first passed it over (None: never), and the step it ran at (None:
    never). ``by_ident`` is :func:`occurrences` of ``records``. The story's hold line and the page's sentence of
    why both read a hold this way."""
    ran = by_ident.get(tuple(what))  # type: ignore[arg-type]
    pattern = identity_label(f"{what.actor}: {what.label}")
    first = next((r for r in records if r.instead and identity_label(r.instead) == pattern
                  and (ran is None or r.step < ran.step)), None)
    return first, ran


def occurrences(records: Sequence[Record]) -> dict[tuple[str, str, str | None, int], Record]:
    """Each run/timer record by its identity (actor, label without rv, key, occurrence)."""
    seen: dict[tuple[str, str, str | None], int] = {}
    out: dict[tuple[str, str, str | None, int], Record] = {}
    for r in records:
        if r.kind not in ("run", "timer"):
            continue
        t = (r.actor, identity_label(r.label), r.key)
        n = seen[t] = seen.get(t, 0) + 1
        out[(*t, n)] = r
    return out


def presented(records: Iterable[Record], notes: Sequence[Note], *, plan: bool) -> list[Record]:
    """The records as a reader should see them (never for a replay: records keep the labels they ran with).

    * A step in which a watch broke before its event was sent delivered
      nothing: it reads as the break and what it lost, not as "deliver ...",
      so the report's counts count it as what it was.
    * Under a plan, a hold is one entry: the first step it displaced keeps its
      "instead of"; the steps after it, displaced by the same hold, read as
      canonical steps (a 28-step hold was 28 deviations on the page).
    """
    records = list(records)
    # a note made after a fault fired in a step carries the fault's step number: it belongs to the step before
    owner: dict[int, int] = {}
    last = 0
    for r in records:
        if r.kind in ("run", "timer"):
            last = r.step
        owner[r.step] = last if r.kind == "fault" else r.step
    broke: dict[int, str] = {}
    for n in notes:
        if n.kind == "watch" and n.field("lost") is not None:
            broke.setdefault(owner.get(n.step, n.step), n.text)
    nothing = {owner.get(n.step, n.step) for n in notes if n.kind == "step" and n.field("nothing_delivered")}
    seen: set[str] = set()
    out: list[Record] = []
    for r in records:
        if r.step in nothing:
            informer = r.label.split(" deliver ", 1)[0]
            said = broke.get(r.step, "the watch broke before this event was sent")
            r = replace(r, label=f"{informer} {said} (nothing delivered)", rv=None)
        if plan and r.choice and r.kind in ("run", "timer", "wait"):
            held = identity_label(r.instead or "")
            if held in seen:
                r = replace(r, choice=0, instead=None)
            else:
                seen.add(held)
        out.append(r)
    return out


def _entry_lines(plan: Sequence[Hold | Fault | Pick], records: Sequence[Record], notes: Sequence[Note],
                 keep: set[int], told: set[int], end: float) -> list[tuple[str, int]]:
    """One line per plan entry, with its index in the plan: what it did and where, each hold once and as it
    happened, in the order the entries acted in the run.

    A hold "as long as its window allows" says how long it actually held:
    the seconds from the step that first passed it over to the step it ran
    at, "for no time" when its window had no width (it ran at the same
    instant, only after other steps), and when it never ran, that the run
    ended first.
    """
    by_ident = occurrences(records)
    out: list[tuple[int, str]] = []  # (the step it acts at, its line): told in the order they happened
    for e in plan:
        if isinstance(e, Hold):
            what = e.what
            first, ran = held_span(what, records, by_ident)
            said = _said(what.actor, what.label) + (f" [{what.key}]" if what.key and what.key not in what.label else "")
            if isinstance(e.until, Ident):
                until_rec = by_ident.get(tuple(e.until))  # type: ignore[arg-type]
                until = (f"until #{until_rec.step} '{_said(until_rec.actor, until_rec.label)}' ran" if until_rec
                         else f"until '{e.until.describe()}' (which never ran)")
            elif isinstance(e.until, float):
                until = f"until t={e.until:.3f}"
            else:
                until = "as long as its window allows"
            start = f"from #{first.step} " if first is not None else ""
            late = ""
            since = first.time if first is not None else None
            if ran is not None:
                keep.add(ran.step)
                since = ran.time if since is None else since
                if ran.time > since:
                    late = f"; it ran at #{ran.step} (t={ran.time:.3f}, {ran.time - since:.3f} s late)"
                elif e.until is None:
                    until = "as long as its window allows, which is no time (its window has no width)"
                    others = ran.step - first.step if first is not None else 0
                    late = f": it ran at #{ran.step} at the same instant t={ran.time:.3f}" + (
                        f", after {others} other step(s)" if others else "")
                else:
                    late = f"; it ran at #{ran.step} (t={ran.time:.3f}, the same instant)"
            else:
                late = f"; it never ran: the violation came first, at t={end:.3f}" + (
                    f", {end - since:.3f} s after it was first passed over" if since is not None and end > since else "")
            if isinstance(e.until, Ident) and (u := by_ident.get(tuple(e.until))) is not None:  # type: ignore[arg-type]
                keep.add(u.step)
            when = first.step if first is not None else ran.step if ran is not None else 1 << 30
            words = delivery_words(what.actor, what.label)
            if words is not None:  # a delivery: named by its event, object and watch
                _ev, event, watch = words
                if ran is None:
                    out.append((when, _cut(f"held: {event} never reaches {watch}: held {start}{until}; "
                                           f"{late[len('; it never ran: '):]}")))
                    continue
                late = late.replace("it ran at", "it arrived at", 1)
                if first is not None and ran.step - 1 > first.step:
                    until = f"until after #{ran.step - 1} ({'a hold ' if until.startswith('until ') else ''}{until})"
                out.append((when, _cut(f"held: {event} reaches {watch} late: held {start}{until}{late}")))
                continue
            out.append((when, _cut(f"held: {said} {start}{until}{late}")))
        elif isinstance(e, Fault):
            at = e.at
            rec = next((r for r in records if r.kind == "fault" and r.actor == at.actor
                        and identity_label(r.label) == identity_label(at.label) and r.key == at.key), None)
            if rec is None:
                out.append((1 << 30, _cut(f"fault: {at.describe()} (never reached)")))
                continue
            keep.add(rec.step)
            told.add(rec.step)
            lost = [n.text for n in notes if n.step == rec.step and n.kind in ("watch", "crash")]
            tail = f": {'; '.join(dict.fromkeys(lost))}" if lost else ""
            out.append((rec.step, _cut(f"fault at #{rec.step} (t={rec.time:.3f}): "
                                       f"{_said(rec.actor, identity_label(rec.label))}{tail}")))
        else:
            rec = next((r for r in records if r.kind == "choose" and r.actor == e.at.actor
                        and r.label == e.at.label), None)
            where = f" at #{rec.step}" if rec is not None else ""
            if rec is not None:
                keep.add(rec.step)
                told.add(rec.step)
            out.append((rec.step if rec is not None else 1 << 30,
                        _cut(f"picked{where}: {e.at.actor}: {e.at.label} -> option {e.value}")))
    order = sorted(range(len(out)), key=lambda i: out[i][0])  # stable: entries acting at one step keep plan order
    return [(out[i][1], i) for i in order]


def _positional_lines(records: Sequence[Record], keep: set[int], told: set[int]) -> list[str]:
    """Without a plan: one line per stretch of deviations of one displaced action (a hold, shown once)."""
    out: list[str] = []
    spans: dict[str, list[Record]] = {}
    for r in records:
        if r.choice and r.kind in ("run", "timer", "wait"):
            spans.setdefault(identity_label(r.instead or ""), []).append(r)
        elif r.kind in ("fault", "choose") and r.choice:
            keep.add(r.step)
            told.add(r.step)
            out.append(_cut(f"{r.kind} at #{r.step} (t={r.time:.3f}): {r.actor}: {identity_label(r.label)}"))
    for held, rs in spans.items():
        keep.add(rs[0].step)
        span = f"#{rs[0].step}" if len(rs) == 1 else f"#{rs[0].step} to #{rs[-1].step}"
        out.append(_cut(f"held: {held or 'the canonical action'} while {len(rs)} other step(s) ran ({span})"))
    return out
