"""Status conditions with apimachinery's semantics (``k8s.io/apimachinery/pkg/api/meta/conditions.go``).

Every model with a ``Ready``-style condition otherwise hand-rolls the one rule that matters for races:
``lastTransitionTime`` moves only when ``status`` changes, so a controller that re-writes an unchanged
condition does not look like a transition, and one that flips it does. A condition is the JSON form of
``metav1.Condition`` kept in ``obj.status["conditions"]``: ``type``, ``status`` ("True", "False",
"Unknown"), ``reason``, ``message``, ``observedGeneration`` and ``lastTransitionTime`` (virtual
seconds: the harness has no wall clock, so the caller passes ``world.now``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["find_status_condition", "is_status_condition_true", "remove_status_condition", "set_status_condition"]

Condition = dict[str, Any]


def find_status_condition(conditions: list[Condition], type_: str) -> Condition | None:
    """The condition of this type, or None (``meta.FindStatusCondition``)."""
    for c in conditions:
        if c.get("type") == type_:
            return c
    return None


def set_status_condition(conditions: list[Condition], new: Condition, now: float) -> bool:
    """Set ``new`` in ``conditions`` in place, as ``meta.SetStatusCondition``; True when anything changed.

    A condition of a new type is appended, its ``lastTransitionTime`` set to ``now`` unless given. An
    existing one takes the new ``status``, ``reason``, ``message`` and ``observedGeneration``; its
    ``lastTransitionTime`` moves (to the given one, else ``now``) only when ``status`` changed.

    "Unless given" means absent or None: upstream tests ``LastTransitionTime.IsZero()``, Go's zero time,
    which no clock reads; here virtual time starts at 0, so an explicit ``lastTransitionTime`` of 0 is
    an instant like any other and is kept.
    """
    existing = find_status_condition(conditions, new["type"])
    given = new.get("lastTransitionTime")
    if existing is None:
        added = {"reason": "", "message": "", "observedGeneration": 0, **new}
        if given is None:
            added["lastTransitionTime"] = now
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = now if given is None else given
        changed = True
    for field in ("reason", "message"):
        if existing.get(field, "") != new.get(field, ""):
            existing[field] = new.get(field, "")
            changed = True
    if existing.get("observedGeneration", 0) != new.get("observedGeneration", 0):
        existing["observedGeneration"] = new.get("observedGeneration", 0)
        changed = True
    return changed


def remove_status_condition(conditions: list[Condition], type_: str) -> bool:
    """Remove the condition of this type in place; True when there was one (``meta.RemoveStatusCondition``)."""
    before = len(conditions)
    conditions[:] = [c for c in conditions if c.get("type") != type_]
    return len(conditions) != before


def is_status_condition_true(conditions: list[Condition], type_: str) -> bool:
    """Whether the condition of this type has status "True" (``meta.IsStatusConditionTrue``)."""
    c = find_status_condition(conditions, type_)
    return c is not None and c.get("status") == "True"
