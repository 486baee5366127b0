"""Issue 52, item 6: a counterexample page opens with one plain sentence of why, and lists its plan's steps in
the order they happened."""

from __future__ import annotations

import html
import re
from pathlib import Path

import harness as h
from harness.explore import registered_races
from harness.report import write_counterexample_html
from harness.report._why import plain_action, why_sentence


def _found(name: str) -> h.Counterexample:
    race = registered_races()[name]
    result = h.explore(race.scenario, strategy=race.strategy, budget=race.budget, seed=0, fixed=False,
                       **race.params)
    assert result.counterexample is not None
    return result.counterexample


def test_plain_action_says_a_delivery_in_kubernetes_words() -> None:
    assert plain_action("scheduler/informer/PodGroup", "scheduler/informer/PodGroup deliver ADDED default/pg-1 rv=7") \
        == "the ADDED event of default/pg-1 reaching scheduler's PodGroup informer"
    assert plain_action("informer/Pod", "informer/Pod list") == "the Pod informer's list"
    assert plain_action("worker", "worker reconcile default/a") == "worker's 'reconcile default/a'"


def test_page_opens_with_why_and_lists_plan_steps_in_order(tmp_path: Path) -> None:
    cx = _found("volcano_deleted_jobs_3375_residual")  # three entries: a late list, a pick, a late delivery
    why = why_sentence(cx)
    assert why.startswith("Why it failed: ") and "pod bound within 40s of the scale-up" in why
    assert "the ADDED event of default/podgroup-" in why and "reached scheduler's PodGroup informer" in why and "late" in why
    page = write_counterexample_html(cx, tmp_path / "cx.html", title="residual").read_text()
    assert page.index('<p class="why">Why it failed: ') < page.index('<section id="story">')
    assert 'id="live"' not in page  # a run of the world alone: no line about operator processes
    devs = page[page.index('<ol class="devs">'):]
    devs = devs[:devs.index("</ol>")]
    items = re.findall(r"<li>(.*?)</li>", devs, re.S)
    assert len(items) == len(cx.plan or ()) >= 2
    firsts = []
    for item in items:
        told = [int(n) for n in re.findall(r"#(\d+)", html.unescape(item.split("</span>")[0]))]  # its line's steps
        linked = [int(n) for n in re.findall(r'href="#step-(\d+)"', item)]  # the steps linked beside it
        assert linked, item
        if told:  # a line's own steps are among the steps linked beside it: the pair is the same entry's
            assert set(told) & set(linked), item
        firsts.append(min(told or linked))
    assert firsts == sorted(firsts), firsts  # told in the order they happened


def test_canonical_failure_says_no_interleaving_was_needed() -> None:
    cx = _found("kruise_imagepulljob")
    assert cx.deviations == 0
    assert "in the canonical order, with no reordering, delay or fault" in why_sentence(cx)
