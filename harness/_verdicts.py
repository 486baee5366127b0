"""Which failures are the race, and which are a broken model.

A search counts any violation as "found", and an expected violation makes a
buggy variant's hunt pass. Two kinds of failure must not: an exception raised
by the scenario's own actor (``main``, the code that builds the cluster; a
``--param delete_at=abc`` that makes its setup raise TypeError) says the model
never ran, and an exception a controller actor raises in *both* variants under
the same plan is not what the fix changes. Both are reported as model errors
(exit 1), never as the race found. An exception in a controller actor of the
buggy variant alone stays a finding: a panic is a bug, and it is labelled as an
exception, apart from an oracle violation.
"""

from __future__ import annotations

import re
from typing import Any

#: the actor that runs the scenario function itself (``harness.sim``'s ``MAIN_ACTOR``)
MAIN_ACTOR = "main"

_RAISED = re.compile(r"raised (?P<exc>[\w.]+): (?P<msg>.*) \(at (?P<at>[^()]*)\)", re.S)


def raised(violation: Any) -> tuple[str, str, str] | None:
    """``(exception type, location, message)`` of an "actor raised" violation, else None."""
    if violation is None or violation.kind != "actor-raised":
        return None
    m = _RAISED.search(violation.message)
    if m is None:
        return violation.name.split(" in ")[0], "unknown location", violation.message
    return m["exc"], m["at"], m["msg"]


def runaway_line(runaway: str) -> str:
    """"runaway: ..." said once: a runaway's own words already begin with "runaway" or "livelock"."""
    return runaway if runaway.startswith(("runaway", "livelock")) else f"runaway: {runaway}"


def model_error(violation: Any) -> str | None:
    """"the scenario raised TypeError at model.py:57 in scenario: ..." when the failure is the model's own
    (see :func:`harness.explore._runner.model_error_of`: ``main`` raised or waited forever, an actor blocked
    outside the harness)."""
    from .explore._runner import model_error_of

    return model_error_of(violation)


def same_exception(a: Any, b: Any) -> bool:
    """Whether two violations are the same exception: same type, same actor, same place in the code."""
    ra, rb = raised(a), raised(b)
    return ra is not None and rb is not None and ra[:2] == rb[:2] and a.actor == b.actor


_WAITS = re.compile(r"waits for '(?P<label>.*?)'(?: at (?P<at>.+?))? at t=", re.S)


def waiting(violation: Any) -> tuple[str, str] | None:
    """``(wait label, where)`` of a deadlock, else None."""
    if violation is None or violation.kind != "deadlock":
        return None
    m = _WAITS.search(violation.message)
    return (m["label"], m["at"] or "") if m is not None else (violation.message, "")


def same_hang(a: Any, b: Any) -> bool:
    """Whether two violations are the same deadlock: the same actor waiting for the same thing at the same place."""
    wa, wb = waiting(a), waiting(b)
    return wa is not None and wa == wb and a.actor == b.actor


def both_variants_raise(cx: Any, params: dict[str, Any]) -> str | None:
    """Run ``cx``'s plan once with ``fixed`` flipped; "model error: both variants raise ..." when it raises
    (or deadlocks) alike.

    Only for an exception in a controller actor of a scenario that takes ``fixed``:
    the plan names actions by identity, so it means the same in the other variant.
    """
    from .explore._counterexample import resolve_scenario
    from .sim import PlanChooser, ReplayChooser, run_once

    what = raised(cx.violation)
    hang = waiting(cx.violation)
    if (what is None and hang is None) or "fixed" not in params or not isinstance(params["fixed"], bool):
        return None
    other = {**params, "fixed": not params["fixed"]}
    chooser: Any = PlanChooser(cx.plan) if cx.plan is not None else ReplayChooser(list(cx.choices))
    try:
        out = run_once(resolve_scenario(cx.scenario), chooser, params=other, limits=cx.limits, faults=cx.faults)
    except Exception:  # the other variant cannot even be run: nothing to compare
        return None
    if hang is not None:
        if not same_hang(cx.violation, out.violation):
            return None
        label, where = hang
        return (f"model error: both variants deadlock the same way under the same plan: actor "
                f"'{cx.violation.actor}' waits for '{label}'{f' at {where}' if where else ''} (the fix does not "
                "change it): a wait with no producer is the model's; fix the model, or state the property as an "
                "eventually oracle")
    if what is None or not same_exception(cx.violation, out.violation):
        return None
    exc, at, _ = what
    return (f"model error: both variants raise {exc} at {at} in actor '{cx.violation.actor}' under the same plan "
            "(the fix does not change it): fix the model")
