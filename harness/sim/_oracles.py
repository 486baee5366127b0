"""Oracle evaluation shared by both clocks of :class:`World` (the harness's scheduler and Trio's own).

An oracle function holds when it returns anything but ``False`` or a string,
and does not raise ``AssertionError``; a string or an assertion message is the
explanation of why it does not hold.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence


def holds(name: str, fn: Callable[[], object], *, broken: str | None = None) -> str | None:
    """None if ``fn`` holds, else the message why not (``broken`` replaces the bare default)."""
    try:
        ok = fn()
    except AssertionError as exc:
        return str(exc) or f"'{name}' does not hold"
    if ok is False:
        return broken or f"'{name}' does not hold"
    if isinstance(ok, str):
        return ok
    return None


def first_broken_invariant(invariants: Sequence[tuple[str, Callable[[], object]]]) -> tuple[str, str] | None:
    """``(name, message)`` of the first invariant that does not hold, in registration order."""
    for name, fn in invariants:  # holds() inlined: this runs after every step, the words only on failure
        try:
            ok = fn()
        except AssertionError as exc:
            return name, str(exc) or f"'{name}' does not hold"
        if ok is False:
            return name, f"invariant '{name}' broken"
        if isinstance(ok, str):
            return name, ok
    return None


def first_exceeded_bound(
    bounds: Sequence[tuple[str, Callable[[], float], float]], peaks: dict[str, float]
) -> tuple[str, str] | None:
    """Update every bound's peak; ``(name, message)`` of the first one over its limit."""
    for name, metric, limit in bounds:
        value = float(metric())
        if value > peaks[name]:
            peaks[name] = value
        if value > limit:
            return name, f"bound '{name}' exceeded: {value:g} > {limit:g}"
    return None


def where(exc: BaseException) -> str:
    """``dir/file.py:line in function`` of the innermost frame outside the runtime."""
    tb = traceback.extract_tb(exc.__traceback__)
    frames = [f for f in tb if "/harness/sim/" not in f.filename.replace("\\", "/")] or list(tb)
    if not frames:
        return "unknown location"
    f = frames[-1]
    short = f.filename.replace("\\", "/").rsplit("/", 2)
    return f"{'/'.join(short[-2:])}:{f.lineno} in {f.name}"
