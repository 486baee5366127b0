"""The one plain sentence a counterexample page opens with: why the run failed.

A reviewer who opens a race report first wants what a maintainer would write in
the issue ("the Pod's DELETED is delivered before the PodGroup's"), before the
story, the step program and the timeline. The sentence is made from the same
facts the story tells first, the plan's entries in the order they acted, each
said in Kubernetes words (an event of an object reaching an informer late, a
fault, a data choice), then the oracle that broke. Nothing is placed by hand:
a page of a canonical-order failure says that no reordering was needed.

Rejected: a sentence per race written by the model's author (it would say what
the author expects, not what this run did; a held-out trial showed them drift).
"""

from __future__ import annotations

import re
from typing import Any

from ..explore._story import delivery_words, held_span, occurrences
from ..sim import VERDICTS, Ident, identity_label

#: "scheduler/informer/PodGroup list": an informer's (re)list
_LIST = re.compile(r"^(?:(?P<who>.+?)/)?informer/(?P<kind>[\w.]+) (?P<what>list|relist|watch)\b")


def plain_action(actor: str, label: str) -> str:
    """An action in Kubernetes words: "the ADDED event of default/pg-1 reaching scheduler's PodGroup informer"."""
    text = identity_label(label)
    if not text.startswith(actor) and "/informer/" not in text and not text.startswith("informer/"):
        text = f"{actor} {text}"
    words = delivery_words(actor, label)
    if words is not None:  # the same words as the story's hold line
        return f"{words[1]} reaching {words[2]}"
    m = _LIST.match(text)
    if m is not None:
        who = f"{m['who']}'s" if m["who"] else "the"
        return f"{who} {m['kind']} informer's {m['what']}"
    said = text[len(actor) + 1:] if text.startswith(actor + " ") else text
    return f"{actor}'s '{said.strip()}'"


def _clause(entry: Any, records: list[Any], by_ident: dict[Any, Any]) -> tuple[int, str]:
    """(the step it acted at, its clause) for one plan entry."""
    far = 1 << 30
    kind = getattr(entry, "kind", "")
    if kind == "hold":
        what: Ident = entry.what
        passed, ran = held_span(what, records, by_ident)
        action = plain_action(what.actor, what.label)
        reached = " reaching " in action  # a delivery: "the ADDED event of ... reached ... late"
        if ran is None:
            return (passed.step if passed is not None else far), (
                action.replace(" reaching ", " never reached ", 1) + " before the failure" if reached
                else f"{action} never came before the failure")
        since = passed.time if passed is not None else ran.time
        when = passed.step if passed is not None else ran.step
        late = f"{ran.time - since:.3f} s late (at t={ran.time:.3f})" if ran.time > since + 1e-9 \
            else "only after other steps"
        return when, action.replace(" reaching ", " reached ", 1) + f" {late}" if reached else f"{action} came {late}"
    if kind == "fault":
        at: Ident = entry.at
        rec = next((r for r in records if r.kind == "fault" and r.actor == at.actor
                    and identity_label(r.label) == identity_label(at.label) and r.key == at.key), None)
        where = f" at t={rec.time:.3f}" if rec is not None else " (never reached)"
        return (rec.step if rec is not None else far), f"a fault hit {plain_action(at.actor, at.label)}{where}"
    at = entry.at
    rec = next((r for r in records if r.kind == "choose" and r.actor == at.actor and r.label == at.label), None)
    return (rec.step if rec is not None else far), f"{at.actor} took option {entry.value} of '{at.label}'"


def why_sentence(cx: Any, story: Any = None) -> str:
    """"Why it failed: the ADDED event of ... came 2.000 s late (at t=41.500), and then 'pod bound ...' broke.

    With the counterexample's ``story`` and a harm it names (an operator's write the violated oracle read), the
    sentence starts from that harm, then says the deviation that made it possible: a reader recognises the
    operator's bug first, the order that exposed it second."""
    v = cx.violation
    if v.kind == "oracle":
        broke = f"'{v.name}' broke"
    elif v.kind == "actor-raised":
        broke = f"{v.actor or 'an actor'} raised ({v.name})"
    elif v.kind == "crashed":
        broke = v.message.split(";", 1)[0]  # "the operator crashed: ReadError at operator.py:98 in watch (...)"
    else:
        broke = f"the run ended in a {VERDICTS.get(v.kind, v.kind)} ({v.name})"
    plan = getattr(cx, "plan", None)
    records = list(cx.trace)
    if plan is None:
        devs = sum(1 for r in records if r.choice)
        if not devs:
            return f"Why it failed: in the canonical order, with no reordering, delay or fault, {broke}."
        return f"Why it failed: after {devs} deviation{'s' if devs != 1 else ''} from the canonical order, {broke}."
    if not plan:
        return (f"Why it failed: in the canonical order, with no reordering, delay or fault, {broke}: a logic or "
                "load bug, not an interleaving.")
    by_ident = occurrences(records)
    clauses = [c for _, c in sorted((_clause(e, records, by_ident) for e in plan), key=lambda t: t[0])]
    said = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + f", and {clauses[-1]}"
    harm = getattr(story, "harm", None) if v.kind == "oracle" else None
    if harm:
        return f"Why it failed: {harm}; {broke} (t={v.time:.3f}). What made it possible: {said}."
    return f"Why it failed: {said}; then {broke} (t={v.time:.3f})."
