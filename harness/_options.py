"""Budgets, strategy specs and fault kinds, checked in one place for the CLI, the pytest plugin and ``explore()``.

Pure Python with no imports beyond the standard library, so the pytest plugin
can check ``--race-budget`` and ``--race-strategy`` at configure time without
loading Trio (``pytest --help`` stays fast).

A budget is ``RUNS`` (a whole number >= 1) or ``SECONDSs`` (a positive number
of seconds). A strategy is a name with an optional integer argument whose
smallest accepted value is in :data:`STRATEGY_ARGS`: ``pct:0`` (no priority
levels) and ``exhaustive:-1`` (fewer than no deviations) are refused rather
than searched, because either would report a verdict after zero runs.
"""

from __future__ import annotations

import math
import re

from ._errors import UsageError

#: the accepted budget forms, as every budget error message states them
BUDGET_FORMS = "RUNS (a whole number of runs >= 1, e.g. 500) or SECONDSs (a positive number of seconds, e.g. 30s)"

#: strategy name -> (name of its argument, smallest accepted argument); None: takes no argument
STRATEGY_ARGS: dict[str, tuple[str, int] | None] = {
    "portfolio": None,
    "random": None,
    "pct": ("DEPTH", 1),
    "hypothesis": None,
    "exhaustive": ("K", 0),
    "canonical": None,
}

#: the accepted strategy forms, as every strategy error message states them
STRATEGY_FORMS = ", ".join(
    name if arg is None else f"{name}[:{arg[0]}>={arg[1]}]" for name, arg in STRATEGY_ARGS.items()
)


def parse_budget(value: str | int) -> tuple[int | None, float | None]:
    """``"500"`` or ``500`` -> ``(500, None)``; ``"30s"`` -> ``(None, 30.0)``; anything else is a UsageError."""
    if isinstance(value, bool):  # bool is an int; True runs is a slip, not a budget
        raise UsageError(f"budget {value!r} is not valid: use {BUDGET_FORMS}")
    if isinstance(value, int):
        if value >= 1:
            return value, None
        raise UsageError(f"budget {value!r} is not valid: use {BUDGET_FORMS}")
    text = str(value).strip()
    if re.fullmatch(r"\d+", text) and int(text) >= 1:
        return int(text), None
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*s", text)
    if m and math.isfinite(seconds := float(m.group(1))) and seconds > 0:
        return None, seconds
    raise UsageError(f"budget {value!r} is not valid: use {BUDGET_FORMS}")


def parse_strategy(spec: str) -> tuple[str, int | None]:
    """``"pct:4"`` -> ``("pct", 4)``; ``"random"`` -> ``("random", None)``; anything else is a UsageError."""
    name, colon, arg = str(spec).strip().partition(":")
    if name not in STRATEGY_ARGS:
        raise UsageError(f"unknown strategy {spec!r}; use one of {STRATEGY_FORMS}")
    form = STRATEGY_ARGS[name]
    if not colon:
        return name, None
    if form is not None and re.fullmatch(r"-?\d+", arg) and int(arg) >= form[1]:
        return name, int(arg)
    raise UsageError(f"strategy {spec!r} is not valid; use one of {STRATEGY_FORMS}")


#: the fault kinds the kube layer places (``world.fault(kind, ...)``); see the guide's
#: "Time, lag and faults are explored, not placed"
FAULT_KINDS = (
    "crash",
    "transient_error",
    "ambiguous_write",
    "stale_read",
    "watch_drop",
    "watch_end",
    "compaction",
    "duplicate",
)

#: what places each kind's fault points in a model, said when a search asked for a kind no run met
#: ("--faults all" on a model without a ControllerProcess has no crash point: it is not clean under crashes)
FAULT_POINTS_COME_FROM = {
    "crash": "no ControllerProcess or Operator",
    "transient_error": "no apiserver request",
    "ambiguous_write": "no write's response from the apiserver",
    "stale_read": "no LIST at resourceVersion 0 (a model's, or a real client's) and no informer's first LIST "
                  "with an older revision (a LIST without a resourceVersion is a consistent read)",
    "watch_drop": "no informer watch delivered an event",
    "watch_end": "no informer watch delivered an event",
    "compaction": "no informer re-watched after a drop",
    "duplicate": "no informer with duplicate deliveries delivered an event",
}

#: the accepted fault forms, as every fault error message states them
FAULT_FORMS = (
    "'default' (each model's own fault flags), 'all', 'none', or a comma-separated list of kinds from "
    + ", ".join(FAULT_KINDS)
)


def parse_fault_spec(value: str | list[str] | tuple[str, ...]) -> frozenset[str] | None:
    """``"default"`` -> None; ``"all"`` -> ``{"*"}``; ``"none"`` -> ``{}``; ``"crash,watch_drop"`` -> those kinds.

    A kind this project does not place is refused (a typo would otherwise turn
    faults silently off). A model with kinds of its own passes them to
    ``explore(faults=frozenset(...))``, which takes any kinds.
    """
    if isinstance(value, str):
        text = value.strip()
        if not text:  # an empty --faults would silently mean "default" and switch off a race's own kinds
            raise UsageError(f"fault kinds {value!r} are empty: use {FAULT_FORMS}")
        if text == "default":
            return None
        if text == "all":
            return frozenset({"*"})
        if text == "none":
            return frozenset()
        items = [t.strip() for t in text.split(",")]
    else:
        items = [str(t).strip() for t in value]
    bad = [t for t in items if t not in FAULT_KINDS]
    if bad or not items:
        raise UsageError(
            f"fault kinds {value!r} are not valid{f' ({bad[0]!r} is not a kind)' if bad and bad[0] else ''}: "
            f"use {FAULT_FORMS}"
        )
    return frozenset(items)
