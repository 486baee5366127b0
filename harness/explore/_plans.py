"""Hand-written plans: read from their JSON form, and the entries a run never applied, said with the closest match."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import UsageError
from ..sim import Entry, Hold, Ident, PlanChooser, canonical_plan, entry_from_json


def read_plan(raw: Any, source: str = "the plan") -> tuple[Entry, ...]:
    """Plan entries from their JSON form: a list of entries, or an object with a ``"plan"`` list (a trace file).

    Each entry is ``{"fault": IDENT}``, ``{"hold": IDENT, "until": IDENT | seconds | null}`` or
    ``{"pick": IDENT, "value": N}``, and an IDENT is ``[actor, label, key, n]`` as a trace's plan
    prints it (guide: "Plans by hand"). Raises :class:`UsageError` saying what is wrong.
    """
    entries = raw.get("plan") if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise UsageError(f"{source} is not a plan: expected a JSON list of entries (or an object with a \"plan\" "
                         "list, as a trace file has), e.g. [{\"fault\": [\"operator/reconcile/worker-1\", "
                         "\"operator crashes before delete StatefulSet default/rmq-server\", "
                         "\"StatefulSet default/rmq-server\", 1]}]")
    out = []
    for i, e in enumerate(entries, 1):
        try:
            out.append(entry_from_json(e))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{source}: entry {i} is not a plan entry ({exc}). An entry is {{\"fault\": IDENT}}, "
                             "{\"hold\": IDENT, \"until\": IDENT or seconds or null} or {\"pick\": IDENT, \"value\": N}, "
                             "an IDENT is [actor, label, key, occurrence]: copy one from a trace's \"plan\" or from "
                             "`python -m harness replay FILE --story`.") from None
    return canonical_plan(out)


def unapplied_entries(plan: Sequence[Entry], chooser: PlanChooser) -> list[str]:
    """"entry 3 'hold informer/Pod: ...' never occurred; the closest identities: ..." for each inert entry.

    The closest identities come from what the run had (actions that ran, fault
    points and data choices it passed), so a typo in a label or an occurrence
    number reads as one.
    """
    import difflib

    seen: dict[str, Ident] = {}
    for ident in [*chooser.ran, *(i for i, _ in chooser.fault_points), *(i for i, _ in chooser.data_points)]:
        seen.setdefault(ident.describe(), ident)
    inert = set(chooser.inert)
    out = []
    for i, e in enumerate(plan, 1):
        if e not in inert:
            continue
        target = e.what if isinstance(e, Hold) else e.at
        close = difflib.get_close_matches(target.describe(), list(seen), n=3, cutoff=0.4)
        why = "never occurred" if target not in seen.values() else "changed nothing (its action ran as it would)"
        hint = f"; the closest identities: {'; '.join(repr(c) for c in close)}" if close and why == "never occurred" else ""
        out.append(f"entry {i} {e.describe()} {why}{hint}")
    return out
