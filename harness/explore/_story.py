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

The slice lives in :mod:`harness.explore._slice`, a step's line, its score
and the harm in :mod:`harness.explore._story_lines`, the plan entries' lines
in :mod:`harness.explore._story_plan`; this module tells the story from them.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..sim import Note, Trace, Violation
from ._slice import _ORACLE, _owners, _slice, _startup
from ._story_lines import MAX_WIDTH as MAX_WIDTH
from ._story_lines import _cut, _harm, _line, _objects, _score, _title
from ._story_plan import _entry_lines, _positional_lines
from ._story_plan import delivery_words as delivery_words
from ._story_plan import held_span as held_span
from ._story_plan import occurrences as occurrences
from ._story_plan import presented as presented

if TYPE_CHECKING:
    from ._counterexample import Counterexample

_NUMBER = re.compile(r"\d+(\.\d+)?")

#: at most this many lines, the plan entries and the violation included
MAX_LINES = 15


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


def _checked_later(v: Violation) -> bool:
    """Whether the violation is an end-of-run check or a deadline (not an invariant the last step broke)."""
    return v.message.startswith("at the end of the run") or "did not happen within" in v.message \
        or "never happened" in v.message
