"""The lines of a story: one per kept step, how telling each is, the header, and the harm in words.

Step 3 of :mod:`harness.explore._story`: a step of the slice is told with
the values it read that decided (and the step each came from), what it wrote
that somebody read, and the notes that say more than its reads and writes; a
score ranks the steps when more are kept than fit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..sim import Access, Note, Record, Trace
from ._slice import _REF, _Slice

if TYPE_CHECKING:
    from ._counterexample import Counterexample

#: a step's line is cut here (the full text is in the trace); the violation's never is: it wraps
MAX_WIDTH = 300

# note kinds and ops that a step's line keeps first (a fault's loss, a relist, a model's log line)
_TELLING = {"relist": 3, "predicate": 2, "watch": 4, "crash": 4, "gc": 3, "log": 5, "step": 4, "list": 1}
_TELLING_OPS = {"unsatisfied": 3, "expired": 4, "coalesced": 2, "dirty": 1}


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
