"""What the race tests share: key events in order, and a search on both sides of a race."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import harness


def assert_in_order(labels: Sequence[str], events: Sequence[str]) -> None:
    i = 0
    for event in events:
        while i < len(labels) and event not in labels[i]:
            i += 1
        assert i < len(labels), f"key event {event!r} missing (in order) from the counterexample"
        i += 1


def assert_found_then_clean(
    scenario: Callable[..., Any], *, budget: int, violation: str, clean_budget: int = 200,
    clean: dict[str, Any] | None = None, **params: Any,
) -> None:
    """The buggy variant fails ``violation`` within ``budget`` random runs; the fixed one stays clean.

    ``params`` go to both variants (the value a test varies); ``clean`` only to the
    fixed one (e.g. a shorter run where a full one is too slow for its budget).
    """
    found = harness.explore(scenario, strategy="random", budget=budget, seed=0, fixed=False, **params)
    assert found.verdict == "found" and found.counterexample is not None
    assert found.counterexample.violation.name == violation
    fixed = harness.explore(scenario, strategy="random", budget=clean_budget, seed=0, fixed=True,
                            **params, **(clean or {}))
    assert fixed.verdict == "none-found"
