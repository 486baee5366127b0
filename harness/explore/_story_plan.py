"""The plan as the run lived it: the records as a reader sees them, and one line per plan entry.

Step 3's first half in :mod:`harness.explore._story`: each hold once, with
how long it actually held, each fault and pick where it acted; a watch
delivery named by its event, object and watch. The report's sentence of why
reads holds and deliveries through the same functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..sim import Fault, Hold, Ident, Note, Pick, Record, identity_label
from ._story_lines import _cut, _said

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

