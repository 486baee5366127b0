"""The lightkube example's counterexample told in its client's own events: the delivery that woke the harmful
reconcile, and the held delivery named by its event, object and watch."""

from __future__ import annotations

import re

import harness as h
from examples.lightkube_operator import scenario


def test_story_shows_the_delivery_that_woke_the_reconcile() -> None:
    found = h.explore(scenario, seed=0, budget=100, fixed=False, prove_minimal=False)  # (the story needs no proof)
    cx = found.counterexample
    assert cx is not None
    lines = cx.story().lines
    steps = {int(m[1]): x for x in lines if (m := re.match(r"#(\d+)\s", x))}
    # the held delivery, named by its event, object and watch (not by the actor that would send it)
    (held,) = [x for x in lines if x.startswith("held: ")]
    assert held.startswith("held: the DELETED event of default/db-credentials never reaches app-operator's Secret "
                           "watch: held from #"), held
    assert "the violation came first" in held
    # the harmful write: the last step before the violation, the operator deleting the new App's Secret
    harmful = max(steps)
    assert "app-operator/apps: delete Secret default/db-credentials: wrote Secret default/db-credentials deleted" \
        in steps[harmful]
    # the reconcile that did it was woken by the operator's read of its App watch, which read a delivery: both kept
    woke = max(s for s in steps if s < harmful)
    assert "app-operator reads watch App: read app-operator/watch/App stream: MODIFIED App default/db" \
        in steps[woke], steps[woke]
    delivery = int(re.search(r"MODIFIED App default/db rv=\d+ \(#(\d+)\)", steps[woke])[1])  # type: ignore[index]
    assert "app-operator/watch/App: deliver MODIFIED default/db" in steps[delivery]
    # and the earlier wake-ups of the same loop: the DELETED and ADDED events of the App, each with its delivery
    for event in ("DELETED App default/db", "ADDED App default/db"):
        (read,) = [s for s, x in steps.items() if f"reads watch App: read app-operator/watch/App stream: {event}" in x]
        sent = int(re.search(rf"{event} rv=\d+ \(#(\d+)\)", steps[read])[1])  # type: ignore[index]
        assert sent in steps and "deliver" in steps[sent]
