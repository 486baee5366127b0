"""The summary of a counterexample in words: who violated what, which deviations led there, what state matters.

A reviewer should not have to read the timeline to learn the story: the
violated oracle, the actor whose step broke it, each deviation as "step N,
ACTOR did X instead of Y", and the state of the objects the story's slice
read and wrote (:attr:`harness.explore.Story.objects`: the page and the
story are one explanation, never two). Objects deleted before the end of the
run count too, with the step they disappeared at.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..explore import Counterexample
from ..sim import Record
from ._snapshot import APISERVER, StateLog, field_order
from ._text import split_action, without_actor
from ._timeline import is_fault

_RV = re.compile(r"\s*\brv=\d+")
_EMPTY_VIEWS = {"None", "{}", "[]", "()", "''", '""', "set()", "frozenset()"}


@dataclass(frozen=True)
class Deviation:
    """One step off the canonical run, in the words the summary uses."""

    step: int
    kind: str  # "schedule", "choice", "fault", "wait"
    actor: str
    did: str
    instead_actor: str | None = None
    instead: str | None = None
    choice: int = 0
    enabled: int = 1
    time: float = 0.0


@dataclass(frozen=True)
class PlanLine:
    """A plan entry (a named deviation the search chose) and the steps it shows up at."""

    kind: str
    text: str
    steps: tuple[int, ...]


@dataclass(frozen=True)
class ObjectRow:
    ref: str
    cells: list[tuple[str, str]]  # (text, css class) per column
    fields: list[tuple[str, str]]
    fields_from: str


@dataclass
class Relevant:
    """The state the violation and the deviations name; empty when it would say nothing."""

    columns: list[str] = field(default_factory=list)
    rows: list[ObjectRow] = field(default_factory=list)
    agree: bool = False
    views: list[tuple[str, str]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.rows and not self.views


def record_at(records: Sequence[Record], step: int) -> Record | None:
    for r in reversed(records):
        if r.step == step:
            return r
        if r.step < step:
            break
    return None


def violating_actor(cx: Counterexample) -> tuple[str | None, Record | None]:
    """The actor the violation is charged to and the step record it was detected after.

    An oracle checked between steps (an invariant, a bound) has no actor of
    its own: it is charged to the actor whose step it was checked after.
    """
    rec = record_at(list(cx.trace), cx.violation.step)
    actor = cx.violation.actor or (str(rec.actor) if rec is not None else None)
    return actor, rec


def deviations(records: Sequence[Record], actors: Sequence[str]) -> list[Deviation]:
    out = []
    for r in records:
        if not (r.choice or is_fault(r)):
            continue
        actor, label = str(r.actor), without_actor(str(r.label), str(r.actor))
        if is_fault(r):
            out.append(Deviation(r.step, "fault", actor, label, choice=r.choice, enabled=r.enabled, time=r.time))
        elif r.kind == "wait":
            out.append(Deviation(r.step, "wait", actor, label, choice=r.choice, enabled=r.enabled, time=r.time))
        elif r.kind == "choose":
            out.append(Deviation(r.step, "choice", actor, label, choice=r.choice, enabled=r.enabled, time=r.time))
        else:
            ia, il = split_action(str(r.instead), actors) if r.instead else (None, None)
            out.append(Deviation(r.step, "schedule", actor, label, ia, il, r.choice, r.enabled, r.time))
    return out


def _ident_steps(records: Sequence[Record], ident: Any) -> list[int]:
    """Steps of the record an :class:`~harness.sim.Ident`-like value names (``actor, label, key, n``)."""
    actor, label, key, n = (getattr(ident, a, None) for a in ("actor", "label", "key", "n"))
    if actor is None or label is None:
        return []
    seen = 0
    for r in records:
        if r.actor == actor and _RV.sub("", str(r.label)) == label and r.key == key:
            seen += 1
            if seen == (n or 1):
                return [r.step]
    return []


def plan_lines(cx: Counterexample) -> list[PlanLine]:
    """The counterexample's plan, when the search recorded one, each entry with the steps it names."""
    plan = getattr(cx, "plan", None) or ()
    records = list(cx.trace)
    out = []
    for entry in plan:
        steps: list[int] = []
        for attr in ("what", "at", "until"):
            target = getattr(entry, attr, None)
            if target is not None and not isinstance(target, int | float):
                steps += _ident_steps(records, target)
        try:
            text = str(entry.describe())
        except Exception:
            text = repr(entry)
        out.append(PlanLine(str(getattr(entry, "kind", "")), text, tuple(sorted(set(steps)))))
    return out


def minimality(cx: Counterexample) -> tuple[bool, str]:
    """Whether the page may call the program minimal, and the sentence that says how far the proof went."""
    proof = getattr(cx, "proof", None)
    proved = cx.proved_minimal is True
    if proof:
        return proved and str(proof).startswith("proved minimal"), str(proof)
    if proved:
        return True, "proved minimal: an exhaustive search found no failing run with fewer deviations"
    if cx.proved_minimal is False:
        return False, "not proved minimal: the proof was cut short or found no smaller run"
    return False, "minimality not checked"


# ------------------------------------------------------------------ relevant state
def relevant(cx: Counterexample, state: StateLog, refs: Sequence[str]) -> Relevant:
    out = Relevant()
    out.views = [(name, text) for name, text in state.views.items() if text not in _EMPTY_VIEWS]
    if not refs:
        return out
    apis = [w for w in state.final if w.startswith(APISERVER)] or [w for w in state.gone if w.startswith(APISERVER)]
    kinds = {ref.split(" ", 1)[0] for ref in refs}
    stores = list(dict.fromkeys([*state.final, *state.gone]))
    infs = [w for w in stores if not w.startswith(APISERVER) and state.informers.get(w) in kinds]
    out.columns = [*apis, *(f"cache of {w}" for w in infs)]
    agree = True
    for ref in refs:
        kind = ref.split(" ", 1)[0]
        cells: list[tuple[str, str]] = []
        server = next((state.final[a][ref] for a in apis if ref in state.final.get(a, {})), None)
        server_gone = next((state.gone[a][ref] for a in apis if ref in state.gone.get(a, {})), None)
        for a in apis:
            got = state.final.get(a, {}).get(ref)
            gone = state.gone.get(a, {}).get(ref)
            if got is not None:
                cells.append((f"rv={got[0]}", ""))
            elif gone is not None:
                cells.append((f"deleted at step {gone[0]} (last rv={gone[1].get('resourceVersion', '?')})", "gone"))
            else:
                cells.append(("absent", ""))
        for w in infs:
            if state.informers.get(w) != kind:
                cells.append(("—", ""))
                continue
            got = state.final.get(w, {}).get(ref)
            if got is None:
                if server is None:
                    cells.append(("absent", "fresh"))
                else:
                    cells.append(("absent (not yet delivered)", "stale"))
                    agree = False
            elif server is None:
                when = f" at step {server_gone[0]}" if server_gone is not None else ""
                cells.append((f"rv={got[0]} (deleted on the apiserver{when})", "stale"))
                agree = False
            elif got[0] != server[0]:
                cells.append((f"rv={got[0]} (stale: apiserver has rv={server[0]})", "stale"))
                agree = False
            else:
                cells.append((f"rv={got[0]} (up to date)", "fresh"))
        fields, source = _fields_of(state, ref, apis, infs)
        out.rows.append(ObjectRow(ref, cells, fields, source))
    out.agree = agree and bool(infs)
    return out


def _ordered(fields: dict[str, str]) -> list[tuple[str, str]]:
    return sorted(fields.items(), key=lambda kv: field_order(kv[0]))


def _fields_of(state: StateLog, ref: str, apis: list[str], infs: list[str]) -> tuple[list[tuple[str, str]], str]:
    for a in apis:
        if ref in state.final.get(a, {}):
            return _ordered(state.final[a][ref][1]), "on the apiserver at the end of the run"
    for a in apis:
        if ref in state.gone.get(a, {}):
            step, fields = state.gone[a][ref]
            return _ordered(fields), f"on the apiserver before its delete at step {step}"
    for w in infs:
        if ref in state.final.get(w, {}):
            return _ordered(state.final[w][ref][1]), f"in the cache of {w}"
    return [], ""
