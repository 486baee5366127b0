"""The story of a counterexample: what Kubernetes did, in at most fifteen lines.

A trace lists scheduling points; a reader wants the upstream story: which
delivery was late or which watch broke and what it lost, the LIST a relist
made and the events it synthesised, the filter that dropped one, the write
that went wrong, and when the oracle broke. The story is derived, never
written by the model's author:

1. **Told.** The counterexample is run once more with notes on
   (:class:`harness.sim.Note`): the same choices, the same trace, plus what
   the kube layer and the model noted inside each step and which objects each
   step read and wrote.
2. **Sliced.** From the violated oracle back: it starts from the objects the
   oracle read (recorded while it was checked), the objects its message names
   and the violating actor's last step; a step or note is kept when it wrote
   one of the objects wanted, and what it read becomes wanted too. Objects are
   matched by ``namespace/name`` across kinds and work-queue keys, so a
   Workload's queue key and the Workload are one thread. The plan entries and
   the steps they act at are always kept.
3. **Told short.** The plan entries come first, each once with what it
   delayed or lost ("held: X from #2 until #30"); then the kept steps with
   their notes, the most telling ones when there are more than fit (faults,
   relists and their synthesised events, predicate verdicts, errors, deletes,
   crashes and the model's own notes rank first); then the violation at its
   virtual time, "at t=35.000 (no step ran since #25 at t=0.800)" when it broke
   because time passed.

Rejected: picking steps by the names an oracle message happens to contain (a
rule only a docstring told, and a message that names no object lost the delete
that caused it); a fixed window of steps around each deviation (a relist two
seconds later is as much the story as the step next door).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..sim import Fault, Hold, Ident, Note, Pick, Record, Trace, identity_label

if TYPE_CHECKING:
    from ._counterexample import Counterexample

_NUMBER = re.compile(r"\d+(\.\d+)?")

#: at most this many lines, the plan entries and the violation included
MAX_LINES = 15
#: a line is cut here (the full text is in the trace below the story)
MAX_WIDTH = 300

# note kinds and ops that tell the story first (a late delivery's effect, a fault's loss, a model's log line)
_TELLING = {"relist": 3, "predicate": 2, "watch": 4, "crash": 4, "gc": 3, "log": 5, "step": 4, "list": 2}
_TELLING_OPS = {"unsatisfied": 3, "expired": 4, "add_after": 2, "add_rate_limited": 2, "coalesced": 2, "dirty": 1}


def name_of(ref: str) -> str:
    """The ``namespace/name`` (or bare name) of an object reference ``"Kind ns/name"``, or a queue key as it is."""
    return ref.split(" ", 1)[1] if " " in ref else ref


def names_of(refs: Iterable[str], *, written: bool = False) -> set[str]:
    """What a slice matches refs by: each ``namespace/name``; a written ``"Kind ns/name"`` also writes ``"Kind *"``.

    A read of a whole kind (``peek_all``, a LIST) is ``"Kind *"``: it depends
    on every write of that kind, a delete included, which no name would match.
    """
    out: set[str] = set()
    for ref in refs:
        if ref.endswith(" *"):
            out.add(ref)
            continue
        out.add(name_of(ref))
        if written and " " in ref:
            out.add(ref.split(" ", 1)[0] + " *")
    return out


@dataclass(frozen=True)
class Story:
    """What a counterexample tells: a few lines, plan entries first, the violation last."""

    lines: tuple[str, ...]
    #: the steps the story shows (a report marks them in its timeline)
    steps: frozenset[int]
    #: every step of the causal slice, shown or not (a step program never folds them)
    causal: frozenset[int]
    #: the violation's line: its instant, and the last step before it when time passed
    verdict: str
    #: whether the notes came from a fresh run (False: the run could not be repeated; steps only)
    told: bool

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _reads_writes(note: Note) -> tuple[set[str], set[str]]:
    """Which objects (by name) a note read and which it wrote, from its kind and op."""
    names = names_of(note.keys)
    op = note.field("op")
    if note.kind == "handler" or op == "get" or (note.kind == "gc" and len(names) > 1):
        if note.kind == "gc":  # the collector read the owners and writes the dependent
            first = name_of(note.keys[0])
            return names - {first}, {first}
        return names, set()
    if op in ("unsatisfied", "expired", "observe"):
        return names, names
    return set(), names | names_of(note.keys, written=True)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_WIDTH else text[: MAX_WIDTH - 3] + "..."


def _occurrences(records: Sequence[Record]) -> dict[tuple[str, str, str | None, int], Record]:
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


def _said(actor: str, label: str) -> str:
    label = label[len(actor) + 1:] if label.startswith(actor + " ") else label
    return f"{actor}: {label}"


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
                 keep: set[int], told: set[int]) -> list[str]:
    """One line per plan entry: what it did and where, each hold once ("held: X from #a until #b")."""
    by_ident = _occurrences(records)
    out: list[tuple[int, str]] = []  # (the step it acts at, its line): told in the order they happened
    for e in plan:
        if isinstance(e, Hold):
            what = e.what
            ran = by_ident.get(tuple(what))  # type: ignore[arg-type]
            said = _said(what.actor, what.label) + (f" [{what.key}]" if what.key and what.key not in what.label else "")
            pattern = identity_label(f"{what.actor}: {what.label}")
            first = next((r for r in records if r.instead and identity_label(r.instead) == pattern
                          and (ran is None or r.step < ran.step)), None)
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
            if ran is not None:
                keep.add(ran.step)
                since = first.time if first is not None else ran.time
                late = f"; it ran at #{ran.step} (t={ran.time:.3f}" + (
                    f", {ran.time - since:.3f} s late)" if ran.time > since else ")")
            else:
                late = "; it never ran"
            if isinstance(e.until, Ident) and (u := by_ident.get(tuple(e.until))) is not None:  # type: ignore[arg-type]
                keep.add(u.step)
            when = first.step if first is not None else ran.step if ran is not None else 1 << 30
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
    return [line for _, line in sorted(out, key=lambda t: t[0])]


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


def tell(cx: Counterexample, trace: Trace | None = None, *, max_lines: int = MAX_LINES) -> Story:
    """The story of ``cx`` from ``trace`` (default: :meth:`Counterexample.told`), in at most ``max_lines`` lines."""
    if trace is None:
        trace = cx.told()
    notes = [n for n in trace.notes if n.step <= cx.violation.step]
    records = [r for r in presented(trace, notes, plan=cx.plan is not None) if r.step <= cx.violation.step]
    by_step: dict[int, list[Note]] = {}
    for n in notes:
        by_step.setdefault(n.step, []).append(n)
    keep: set[int] = set()
    told: set[int] = set()  # steps a plan line tells already (a fault, a pick): no line of their own below
    head = (_entry_lines(cx.plan, records, notes, keep, told) if cx.plan is not None
            else _positional_lines(records, keep, told))
    fixed = set(keep)

    # --- the causal slice, from the oracle back
    v = cx.violation
    wanted: set[str] = names_of(trace.oracle_reads)
    text = f"{v.message}\n{v.name}"
    every = {name_of(k) for r in records if r.key for k in (r.key,)} | {name_of(k) for n in notes for k in n.keys}
    wanted |= {nm for nm in every if nm and _named(text, nm)}
    if v.actor is not None:
        last = next((r for r in reversed(records) if r.actor == v.actor and r.kind in ("run", "timer")), None)
        if last is not None:
            keep.add(last.step)
            if last.key:
                wanted.add(name_of(last.key))
    kept_notes: dict[int, list[Note]] = {}
    for r in reversed(records):
        if r.kind not in ("run", "timer", "fault"):
            continue
        reads, writes = set(), set()
        fp = trace.footprints.get(r.step)
        if fp is not None:
            reads |= names_of(fp[0])
            writes |= names_of(fp[1], written=True)
        elif r.key and r.kind != "fault":  # a model's own step on a key: it may read and write it
            reads.add(name_of(r.key))
            writes.add(name_of(r.key))
        step_notes = by_step.get(r.step, ())
        mine: list[Note] = []
        memory = _memory_of(r.actor)
        for n in step_notes:
            nr, nw = _reads_writes(n)
            if n.kind == "handler" and memory is not None:
                nw = nw | {memory}  # a handler writes its process's memory (a scheduler cache, a controller's map)
            if nw & wanted or (n.kind == "log" and (nr | nw) & wanted) or (n.kind in ("log", "step") and not n.keys):
                mine.append(n)
                reads |= nr
            elif nr & wanted and n.kind in ("handler", "predicate"):
                mine.append(n)
        hit = bool(writes & wanted) or bool(mine) or r.step in fixed
        if not hit:
            continue
        keep.add(r.step)
        wanted |= reads
        if memory is not None:
            wanted.add(memory)  # what the step did may come from what its process remembered
        if r.key and r.kind != "fault":
            wanted.add(name_of(r.key))
        kept_notes[r.step] = mine

    if not keep - fixed:
        # the oracle read nothing the kube layer saw (a metric, the model's memory): the last steps that
        # noted something are where it broke
        for r in reversed(records):
            if r.kind in ("run", "timer") and by_step.get(r.step) and len(keep) < 2 * MAX_LINES:
                keep.add(r.step)
                kept_notes[r.step] = by_step[r.step]

    # --- the violation line, at its instant
    last_rec = next((r for r in reversed(records) if r.step <= v.step and r.kind in ("run", "timer")), None)
    if last_rec is not None and v.time > last_rec.time + 1e-9:
        when = f"at t={v.time:.3f} (no step ran since #{last_rec.step} at t={last_rec.time:.3f})"
    else:
        when = f"at t={v.time:.3f}, step #{v.step}"
    tail = _cut(f"=> {when}: {v.describe()}")

    # --- the most telling steps that fit
    room = max(1, max_lines - len(head) - 2)
    rec_of = {r.step: r for r in records}
    lines_of: dict[int, str] = {}
    scores: dict[int, int] = {}
    for step in keep:
        ns = kept_notes.get(step, by_step.get(step, []) if step in fixed else [])
        if step in told or (not ns and step not in fixed and rec_of[step].label.startswith("response ")):
            continue  # said by its plan line; a response that noted nothing says nothing new
        score = 10 if step in fixed else 0
        for n in ns:
            if n.kind in ("list", "relist") and not n.field("relist"):
                continue  # the first LIST of an informer is how every run starts
            score = max(score, _TELLING.get(n.kind, 1), _TELLING_OPS.get(str(n.field("op")), 0))
            if n.kind == "write":  # a commit is what the others then see; a delete or an error more so
                score = max(score, 3 if n.field("code") or n.field("event") == "DELETED" else 2)
            if n.kind == "predicate" and n.field("verdict") == "dropped":
                score = max(score, 5)
            if n.kind == "handler" and str(n.field("handler", "")).startswith("OnDelete"):
                score = max(score, 3)
        scores[step] = score
        lines_of[step] = _line(rec_of[step], ns)
    # a step repeated (a retry loop, a backoff doubling) is told by its first and its last occurrence
    shapes: dict[str, list[int]] = {}
    for step in sorted(lines_of):
        shapes.setdefault(_NUMBER.sub("N", lines_of[step].split("  ", 1)[1]), []).append(step)
    for same in shapes.values():
        for step in same[1:-1]:
            scores[step] = -1
        if len(same) > 2:
            lines_of[same[-1]] += f" (the same as #{same[0]}, {len(same) - 2} time(s) between)"
    rank = [(score, step) for step, score in scores.items() if score >= 0]
    # the most telling first; among equals, the later (nearer the violation)
    chosen = {s for _, s in sorted(rank, key=lambda t: (-t[0], -t[1]))[:room]}
    body = [_cut(lines_of[step]) for step in sorted(chosen)]
    skipped = len(rank) - len(chosen)
    title = (f"story: {len(cx.plan) if cx.plan is not None else cx.trace.deviations} deviation(s), "
             f"{len(keep)} causal step(s) of {trace.steps}" + (f" ({skipped} more in the trace)" if skipped else ""))
    if 2 + len(head) > max_lines:  # more entries than lines: the entries, cut, and the violation
        head = [*head[: max_lines - 3], f"... {len(head) - (max_lines - 3)} more plan entries"]
    lines = [title, *head, *body[: max(0, max_lines - 2 - len(head))], tail]
    return Story(tuple(lines), frozenset(chosen), frozenset(keep), tail, trace.noted)


def _line(r: Record, ns: Sequence[Note]) -> str:
    """One step of the story: its words, then what it noted (the least telling notes give way to fit)."""
    words = _said(r.actor, r.label)
    texts = list(dict.fromkeys(n.text for n in ns if n.kind != "step"))
    while len(texts) > 1 and len("; ".join(texts)) + len(words) > MAX_WIDTH - 40:
        # the least telling note goes first (a Forget, a get: the next line shows what they led to)
        texts.remove(min(texts, key=lambda t: _score_text(t, ns)))
    said = "; ".join(texts)
    return f"#{r.step:<4} t={r.time:.3f}  {words}" + (f": {said}" if said else "")


def _memory_of(actor: str) -> str | None:
    """The process memory an actor reads and its handlers write: its name's first segment (not the scenario's)."""
    head = actor.split("/", 1)[0]
    return None if head in ("main", "kubelet", "timer", "informer", "scheduler/informer") else f"mem:{head}"


def _score_text(text: str, notes: Sequence[Note]) -> int:
    for n in notes:
        if n.text == text:
            return max(_TELLING.get(n.kind, 1), _TELLING_OPS.get(str(n.field("op")), 0)) - (
                1 if n.field("op") in ("forget", "get") else 0)
    return 0


def _named(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` as a whole (``test-a`` is not named by ``test-a/wl1``)."""
    return bool(name) and re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w/-]|\.\w)", text) is not None
