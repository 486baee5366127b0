"""The HTML race report: summary first, focused timeline, relevant state, charts, long runs, links, escaping."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness import Counterexample, explore
from harness.report import MAX_STEPS, render_counterexample_html, write_counterexample_html
from harness.report._html import PAGE_BUDGET
from harness.report._timeline import lanes_of
from harness.sim import Record, ReplayChooser, Trace, Violation, run_once
from tests.report.scenarios import EVIL, HOSTILE, backlog, crowded, evil_name, hostile, long_run


def canonical(scenario: Any, **params: Any) -> Counterexample:
    """The canonical run of ``scenario`` as a counterexample (no search: fast and independent of strategies)."""
    out = run_once(scenario, ReplayChooser([]), params=params)
    assert out.violation is not None, "the canonical run of this test scenario must fail"
    return Counterexample.from_outcome(scenario, params, out)


@pytest.fixture(scope="module")
def evil_cx() -> Counterexample:
    cx = explore(evil_name, budget=200, seed=3).counterexample
    assert cx is not None
    return cx


@pytest.fixture(scope="module")
def crowded_cx() -> Counterexample:
    cx = explore(crowded, budget=400, seed=0).counterexample
    assert cx is not None
    return cx


class Page(HTMLParser):
    """What a browser would build from the page: tags, attributes, ids, text per section."""

    def __init__(self, raw: str) -> None:
        super().__init__(convert_charrefs=True)
        self.raw = raw
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ids: list[str] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in = ""
        self.feed(raw)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if a.get("id"):
            self.ids.append(str(a["id"]))
        self._in = tag

    def handle_endtag(self, tag: str) -> None:
        self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in != "style":
            self.text.append(data)

    @property
    def body(self) -> str:
        """The text as read: pieces joined as they stand, runs of whitespace as one space."""
        return " ".join("".join(self.text).split())

    def hrefs(self) -> list[str]:
        return [str(a["href"]) for t, a in self.tags if t == "a" and a.get("href")]


def page_of(cx: Counterexample, tmp_path: Path, name: str = "r.html", **kw: Any) -> Page:
    kw.setdefault("title", "t")
    return Page(write_counterexample_html(cx, tmp_path / name, **kw).read_text(encoding="utf-8"))


# ------------------------------------------------------------------ escaping
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "nav", "main", "section", "footer", "h1", "h2", "h3",
    "p", "div", "span", "a", "b", "i", "code", "pre", "dl", "dt", "dd", "ol", "ul", "li", "table", "caption",
    "colgroup", "col", "thead", "tbody", "tr", "th", "td", "details", "summary", "input", "label", "figure",
    "figcaption", "svg", "line", "text", "path", "wbr", "script",
}


def test_a_hostile_string_in_every_model_field_stays_text(tmp_path: Path) -> None:
    cx = canonical(hostile, note=HOSTILE)  # actor, label, key, rv (a string), oracle name and message, views, a bound, params
    assert any(isinstance(r.rv, str) for r in cx.trace)
    page = page_of(cx, tmp_path, title=f"title {HOSTILE}", upstream=f"upstream {HOSTILE}")
    tags = {t for t, _ in page.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    assert [t for t, _ in page.tags].count("script") == 1  # ours, which holds no model data
    assert "alert" not in page.scripts[0]
    assert not [(t, k) for t, a in page.tags for k in a if k.startswith("on")]  # no event handler attribute
    assert "<img" not in page.raw and "<script>alert" not in page.raw and "</textarea>" not in page.raw
    assert "{{7*7}}" in page.body  # Jinja never evaluates model text
    body = page.body
    for shown in (f"actor {HOSTILE}", f"oracle {HOSTILE}", f"message {HOSTILE}", f"view {HOSTILE}",
                  f"bound {HOSTILE}", f"title {HOSTILE}", f"rv={HOSTILE}", f"note={HOSTILE!r}"):
        assert shown in body, shown


def test_the_markup_of_an_object_name_is_escaped_in_state_and_timeline(evil_cx: Counterexample, tmp_path: Path) -> None:
    page = page_of(evil_cx, tmp_path, title=f"title {EVIL}", upstream=EVIL)
    assert "<script>alert" not in page.raw and "<b>bold?</b>" not in page.raw
    assert f"ConfigMap default/{EVIL}" in page.body


# ------------------------------------------------------------------ summary first
def test_the_summary_names_the_deviation_the_violating_actor_and_links_both(
    crowded_cx: Counterexample, tmp_path: Path
) -> None:
    page = page_of(crowded_cx, tmp_path)
    summary = page.raw[page.raw.index('id="summary"') : page.raw.index('id="reproduce"')]
    text = Page(summary).body
    # under a plan, "how the run got there" is the story's plan lines, each linked to the steps it names
    story = crowded_cx.story()
    assert crowded_cx.plan and story.entries
    for entry in story.entries:
        assert entry in text, entry
    from harness.report._story import plan_lines

    for line in plan_lines(crowded_cx):
        assert all(f'href="#step-{s}"' in summary for s in line.steps)
    last = crowded_cx.trace[-1]
    assert f'href="#step-{last.step}"' in summary and f"a step of {last.actor}" in text
    # every link in the page that points into the page lands on an element that exists
    for h in page.hrefs():
        if h.startswith("#"):
            assert h[1:] in page.ids, h
    assert len(page.ids) == len(set(page.ids))


def test_the_summary_says_when_no_deviation_was_needed(tmp_path: Path) -> None:
    page = page_of(canonical(long_run, steps=30), tmp_path)
    assert "No deviation: the canonical order fails on its own" in page.body


def test_the_program_is_called_minimal_only_when_proved(evil_cx: Counterexample, tmp_path: Path) -> None:
    assert evil_cx.proved_minimal is True
    assert "The minimal step program" in page_of(evil_cx, tmp_path).body
    cut = Counterexample(
        evil_cx.scenario, evil_cx.params, evil_cx.choices, evil_cx.trace, evil_cx.violation,
        proved_minimal=False, plan=getattr(evil_cx, "plan", None),
    )
    cut.proof = "no smaller run among the 5,000 checked (cut short)"  # what a cut proof says
    body = page_of(cut, tmp_path, "cut.html").body
    assert "minimal step program" not in body and "The step program" in body
    assert "no smaller run among the 5,000 checked" in body


# ------------------------------------------------------------------ focused timeline
def test_the_focused_timeline_folds_canonical_stretches_and_hides_idle_lanes(
    crowded_cx: Counterexample, tmp_path: Path
) -> None:
    page = page_of(crowded_cx, tmp_path)
    focused = page.raw[page.raw.index('id="focused"') : page.raw.index('id="all-steps"')]
    all_steps = page.raw[page.raw.index('id="all-steps"') :]
    assert "canonical steps (" in focused
    shown_lanes = re.findall(r'<th class="lanehead">([^<]*)', focused)
    every_lane = re.findall(r'<th class="lanehead">([^<]*)', all_steps.split("</thead>")[0])
    assert len(shown_lanes) < len(every_lane) == len(lanes_of(crowded_cx.trace))
    # every step has exactly one anchor: in the focused timeline if shown there, else in "show all"
    for r in crowded_cx.trace:
        assert page.ids.count(f"step-{r.step}") == 1
    assert focused.count('id="step-') < len(crowded_cx.trace)


def test_boxes_do_not_repeat_the_actor_name(tmp_path: Path) -> None:
    from harness.report._timeline import box_text

    r = Record(5, 0.0, "sched/informer/Pod", "sched/informer/Pod deliver DELETED ns/p rv=7", key="Pod ns/p", rv=7)
    assert box_text(r) == "deliver DELETED ns/p rv=7"
    assert box_text(Record(6, 0.0, "a", "write", key="ConfigMap ns/x", rv=3)) == "write [ConfigMap ns/x rv=3]"


def test_the_objects_column_folds_without_javascript(evil_cx: Counterexample, tmp_path: Path) -> None:
    page = page_of(evil_cx, tmp_path)
    assert ("input", {"type": "checkbox", "id": "objcol", "checked": None}) in page.tags
    assert "#objcol:not(:checked)~* .obj{display:none}" in page.raw


def test_fault_and_wait_records_are_marked(evil_cx: Counterexample, tmp_path: Path) -> None:
    last = evil_cx.trace[-1]
    extra = [
        Record(last.step + 1, last.time, "reader", "fault: drop the watch", None, None, 1, 2, "fault"),
        Record(last.step + 2, last.time + 1, "reader", "wait 1s while 2 actions are held", None, None, 1, 2, "wait"),
    ]
    doctored = Counterexample(
        evil_cx.scenario, evil_cx.params, evil_cx.choices, Trace([*evil_cx.trace, *extra]), evil_cx.violation
    )
    page = page_of(doctored, tmp_path)
    assert re.search(rf'class="act [^"]*fault[^"]*" id="step-{last.step + 1}"', page.raw)
    assert re.search(rf'class="act [^"]*wait[^"]*" id="step-{last.step + 2}"', page.raw)
    assert f"step {last.step + 1}, a fault fired in reader" in page.body
    assert "different path" in page.body  # the doctored trace no longer replays: the page says so, and renders


# ------------------------------------------------------------------ relevant state
def test_deleted_objects_the_violation_names_are_shown(evil_cx: Counterexample, tmp_path: Path) -> None:
    page = page_of(evil_cx, tmp_path)
    state = page.raw[page.raw.index('id="state"') : page.raw.index('id="timeline"')]
    body = Page(state).body
    assert f"ConfigMap default/{EVIL}" in body
    assert re.search(r"deleted at step \d+", body)  # gone from the apiserver, with when
    assert "deleted on the apiserver at step" in body  # and the cache still holds it
    assert "spec.note" in body  # its last fields, from before the delete


def test_state_that_says_nothing_is_left_out(tmp_path: Path) -> None:
    page = page_of(canonical(long_run, steps=30), tmp_path)
    assert 'id="state"' not in page.raw and "no object state" not in page.body


def test_exposed_views_are_shown_and_their_changes_are_in_the_steps(tmp_path: Path) -> None:
    cx = canonical(backlog, steps=60, limit=12)
    page = page_of(cx, tmp_path)
    state = Page(page.raw[page.raw.index('id="state"') : page.raw.index('id="timeline"')]).body
    assert "head of the queue" in state and "queue length" in state
    assert "head of the queue changed (exposed view)" in page.body


# ------------------------------------------------------------------ long runs and charts
def test_bounds_and_numeric_views_are_charted(tmp_path: Path) -> None:
    cx = canonical(backlog, steps=200, limit=40)
    page = page_of(cx, tmp_path)
    charts = re.findall(r"<figure class=\"chart\">.*?</figure>", page.raw, re.S)
    assert len(charts) == 2  # the bound and the numeric view; the list view is not drawn
    bound = next(c for c in charts if "world.bound metric" in c)
    assert "queued items" in bound and "limit 40" in bound and 'class="limit"' in bound
    assert re.search(r"limit 40 first exceeded at t=\d", bound)
    path = re.search(r'<path class="line" d="([^"]+)"', bound)
    assert path is not None and path.group(1).startswith("M")


def test_a_chart_stays_small_and_keeps_a_one_step_spike() -> None:
    from harness.report._chart import draw
    from harness.report._snapshot import Series

    s = Series("x", "bound", 10.0)
    for i in range(100_000):
        s.add(i * 0.001, i, 50.0 if i == 61_234 else float(i % 7))
    c = draw(s, end_time=100.0, end_step=100_000)
    assert c is not None and len(c.path) < 40_000
    spike_y = min(float(v) for v in re.findall(r"V([\d.]+)", c.path))
    assert c.limit_y is not None and spike_y < c.limit_y  # the one-step spike above the limit is drawn


def test_a_4000_step_page_keeps_its_full_timeline_under_a_megabyte(tmp_path: Path) -> None:
    cx = canonical(backlog, steps=3_100, limit=2_050)
    assert len(cx.trace) >= 4_000
    out = write_counterexample_html(cx, tmp_path / "b.html", title="backlog")
    assert out.stat().st_size <= PAGE_BUDGET <= 1_000_000
    raw = out.read_text(encoding="utf-8")
    assert 'id="all-steps"' in raw and 'id="cap-notice"' not in raw
    assert 'class="chart"' in raw


@pytest.mark.slow
def test_a_100k_step_page_is_bounded_and_points_to_the_json(tmp_path: Path) -> None:
    cx = canonical(long_run, steps=100_000)
    assert len(cx.trace) > MAX_STEPS
    saved = cx.save(tmp_path / "long.json")
    out = write_counterexample_html(cx, tmp_path / "long.html", title="long", json_path=saved)
    assert out.stat().st_size < 100_000
    page = Page(out.read_text(encoding="utf-8"))
    assert "cap-notice" in page.ids and "100,002 steps" in page.body and "long.json" in page.hrefs()
    assert f"step-{cx.trace[-1].step}" in page.ids  # the violation is still shown, with its neighbours
    assert "walker" in page.body and "100,001" in page.body  # the counts


# ------------------------------------------------------------------ portable and dated
def test_links_and_the_replay_command_are_relative_to_the_report_folder(evil_cx: Counterexample, tmp_path: Path) -> None:
    saved = evil_cx.save(tmp_path / "traces" / "evil.json")
    page = page_of(evil_cx, tmp_path, "pages/evil.html", json_path=saved, index_path=tmp_path / "pages" / "index.html")
    assert "../traces/evil.json" in page.hrefs() and "index.html" in page.hrefs()
    assert "python -m harness replay ../traces/evil.json" in page.body
    assert str(tmp_path) not in page.raw  # nothing of this machine's layout


def test_upstream_references_link_to_github(evil_cx: Counterexample, tmp_path: Path) -> None:
    page = page_of(evil_cx, tmp_path, upstream="volcano-sh/volcano#3374 (fix PR #3375, 2832dfe1)")
    hrefs = page.hrefs()
    assert "https://github.com/volcano-sh/volcano/issues/3374" in hrefs
    assert "https://github.com/volcano-sh/volcano/pull/3375" in hrefs
    assert "https://github.com/volcano-sh/volcano/commit/2832dfe1" in hrefs


def test_the_footer_dates_the_report(evil_cx: Counterexample, tmp_path: Path) -> None:
    import hypothesis
    import trio

    import harness

    footer = Page(page_of(evil_cx, tmp_path, command_line="python -m harness hunt x").raw.split("<footer")[1]).body
    assert re.search(r"written \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", footer)
    assert f"race-harness {harness.__version__}" in footer
    assert f"Trio {trio.__version__}" in footer and f"Hypothesis {hypothesis.__version__}" in footer
    assert "command python -m harness hunt x" in footer


def test_the_command_line_shows_no_interpreter_path() -> None:
    from harness.report._provenance import command_line

    assert command_line(["/opt/venv/bin/python", "-m", "harness", "hunt", "a b"]) == "python -m harness hunt 'a b'"


def test_render_needs_no_file() -> None:
    raw = render_counterexample_html(canonical(long_run, steps=5), title="t")
    assert raw.startswith("<!DOCTYPE html>") and "Counterexample.save" in raw


def test_the_json_names_its_page(tmp_path: Path) -> None:
    from harness.cli import main

    assert main(["hunt", "kruise_imagepulljob", "--variant", "buggy", "--json", "--report-dir", str(tmp_path)]) == 0
    raw = json.loads((tmp_path / "kruise_imagepulljob-buggy.json").read_text())
    assert raw["meta"]["report"] == "kruise_imagepulljob-buggy.html"
    page = Page((tmp_path / "kruise_imagepulljob-buggy.html").read_text())
    assert {"kruise_imagepulljob-buggy.json", "index.html"} <= set(page.hrefs())
    assert "python -m harness replay kruise_imagepulljob-buggy.json" in page.body
    assert "https://github.com/openkruise/kruise/issues/1528" in page.hrefs()


def test_violation_without_a_record_still_renders(tmp_path: Path) -> None:
    v = Violation("deadlock", "deadlock", "every actor waits", 99, 1.0, None)
    cx = Counterexample("tests.report.scenarios:long_run", {}, [], Trace([Record(1, 0.0, "a", "start a")]), v)
    assert "Detected at step 99" in page_of(cx, tmp_path).body


def test_a_runaway_page_is_not_replayed_for_object_state(tmp_path: Path) -> None:
    """A runaway's page does not re-run its steps to snapshot objects (a third run of 200,000 steps, for a page
    that shows its first turns), and says so."""
    import harness as h
    from harness.kube import APIServer, KubeObject
    from harness.report import capture_states
    from harness.sim import Limits

    @h.scenario
    async def spins(world: h.World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("ConfigMap", "ns", "a"))
        while api.peek("ConfigMap", "ns", "b") is None:
            await world.sleep(0.1, "user waits until b exists")

    result = explore(spins, strategy="canonical", limits=Limits(max_steps=2_000))
    assert result.verdict == "runaway"
    cx = result.counterexample
    assert cx is not None and cx.violation.kind == "runaway"
    log = capture_states(cx)
    assert not log.available and "not re-run" in log.note and "runaway" in log.note
    page = render_counterexample_html(cx, title="spins")
    assert "a runaway is not re-run for its page" in page


def test_the_clusters_own_namespaces_are_no_change_of_the_run() -> None:
    """Every apiserver starts with its cluster's namespaces (``bootstrap_revision``): the object state shows the
    run's changes (the ReplicaSet, its Pods), never four Namespaces "added" at the step that built the apiserver."""
    from examples.replicaset_recreate import scenario
    from harness.report import capture_states

    result = explore(scenario, strategy="random", budget=200, seed=0, fixed=False)
    assert result.counterexample is not None, result.outcome
    log = capture_states(result.counterexample)
    changed = [c.ref for changes in log.changes.values() for c in changes]
    assert log.available and any(ref.startswith("ReplicaSet ") for ref in changed)
    assert not any(ref.startswith("Namespace ") for ref in changed), changed
