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
    # the harmful write: the last step before the violation, the operator's worker deleting the new App's Secret
    harmful = max(steps)
    assert "app-operator/worker: delete Secret default/db-credentials: wrote Secret default/db-credentials deleted" \
        in steps[harmful]
    # the reconcile that did it was woken (a memory stream's send) by the App watch loop's read of a delivery:
    # the wake, the read and the delivery are all kept, each naming the step it read from
    woke = max(s for s in steps if s < harmful)
    assert "app-operator/worker: wake at lightkube_operator.py:" in steps[woke], steps[woke]
    reader = int(re.search(r"read woken \(#(\d+)\)", steps[woke])[1])  # type: ignore[index]
    assert "app-operator reads watch App: read app-operator/watch/App stream: MODIFIED App default/db" \
        in steps[reader] and "wakes app-operator/worker" in steps[reader], steps[reader]
    delivery = int(re.search(r"MODIFIED App default/db rv=\d+ \(#(\d+)\)", steps[reader])[1])  # type: ignore[index]
    assert "app-operator/watch/App: deliver MODIFIED default/db" in steps[delivery]


def test_why_names_the_operators_harmful_write() -> None:
    """The page's and the story's headline starts from the harm (the operator's delete of the new App's Secret, the
    write the oracle read, with what its decision rested on), then says the deviation that made it possible; a
    model whose oracle reads only the scenario's own writes keeps the deviation-first sentence."""
    from harness.report._why import why_sentence

    found = h.explore(scenario, seed=0, budget=100, fixed=False, prove_minimal=False)
    cx = found.counterexample
    assert cx is not None
    story = cx.story()
    assert story.harm is not None and story.harm.startswith(
        "app-operator/worker's 'delete Secret default/db-credentials' at #"), story.harm
    assert "wrote what the oracle read, on its read of its memory as #" in story.harm, story.harm
    why = why_sentence(cx, story)
    assert why.startswith("Why it failed: app-operator/worker's 'delete Secret default/db-credentials' at #"), why
    assert why.index("broke") < why.index("What made it possible: the DELETED event of default/db-credentials"), why
    assert why_sentence(cx).startswith("Why it failed: the DELETED event"), why_sentence(cx)  # no story: as before
