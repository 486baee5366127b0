"""The HTML race report and the session index: escaping, anchors, swimlanes, cap, atomic writes."""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from io import StringIO
from pathlib import Path

import pytest

from harness import Counterexample, explore
from harness.report import (
    MAX_STEPS,
    ReportEntry,
    atomic_write_text,
    ensure_report_dir,
    render_summary,
    write_counterexample_html,
    write_index,
)
from harness.report._html import lanes_of
from tests.report.scenarios import EVIL, evil_name, long_run
from tests.toys import lost_update


@pytest.fixture(scope="module")
def evil_cx() -> Counterexample:
    result = explore(evil_name, budget=200, seed=3)
    assert result.counterexample is not None
    return result.counterexample


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self.lanes: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        self._in = "lane" if tag == "th" and "lanehead" in (a.get("class") or "") else tag

    def handle_data(self, data: str) -> None:
        if self._in == "script":
            self.scripts.append(data)
        elif self._in == "lane":
            self.lanes.append(data)
        self.text.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._in = None


def _parse(path: Path) -> _Collect:
    p = _Collect()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_markup_in_model_strings_is_escaped(evil_cx: Counterexample, tmp_path: Path) -> None:
    out = write_counterexample_html(evil_cx, tmp_path / "r.html", title=f"title {EVIL}", upstream=EVIL, seed=3)
    raw = out.read_text(encoding="utf-8")
    assert "<script>alert" not in raw and "<b>bold?</b>" not in raw
    page = _parse(out)
    assert len(page.scripts) == 1  # ours, which holds no model data
    assert "alert(1)" not in page.scripts[0]
    assert EVIL in "".join(page.text)  # shown as text


def test_every_step_has_a_stable_anchor_and_every_actor_a_lane(evil_cx: Counterexample, tmp_path: Path) -> None:
    page = _parse(write_counterexample_html(evil_cx, tmp_path / "r.html", title="t"))
    for r in evil_cx.trace:
        assert f"step-{r.step}" in page.ids
    assert page.lanes == lanes_of(evil_cx.trace)
    assert {"deleter", "reader", "cleaner/informer/ConfigMap"} <= set(page.lanes)


def test_violation_deviation_state_and_reproduction_are_shown(evil_cx: Counterexample, tmp_path: Path) -> None:
    raw = write_counterexample_html(evil_cx, tmp_path / "r.html", title="t", seed=99, replay_command="REPLAY-CMD").read_text()
    v = evil_cx.violation
    assert f'href="#step-{v.step}"' in raw and "cache agrees" in raw
    dev = next(r for r in evil_cx.trace if r.choice)
    row = re.search(rf'<tr id="step-{dev.step}" class="([^"]*)"', raw)
    assert row is not None and "dev" in row.group(1)
    assert "instead of" in raw
    assert "REPLAY-CMD" in raw and "<code>99</code>" in raw
    assert "minimal step program" in raw
    # the replay observer saw the apiserver and the cache disagree about the object
    assert "deleted on the apiserver" in raw
    assert "status" in raw or "spec.note" in raw


def test_faults_are_highlighted(tmp_path: Path) -> None:
    from harness.kube._examples import stale_status_writers  # noqa: F401 - ensures kube examples import

    cx = explore(lost_update, budget=50, seed=1).counterexample
    assert cx is not None
    from harness.sim import Record, Trace

    extra = Record(cx.trace[-1].step + 1, 0.0, "inc-0", "fault: update x fails", None, None, 1, 2, "choose")
    faulty = Counterexample(cx.scenario, cx.params, cx.choices, Trace([*cx.trace, extra]), cx.violation)
    raw = write_counterexample_html(faulty, tmp_path / "f.html", title="t").read_text()
    assert re.search(rf'<tr id="step-{extra.step}" class="[^"]*fault', raw)
    assert "different path" in raw  # the doctored trace no longer replays: the report says so, and renders


def test_long_timelines_are_capped_with_a_visible_notice(tmp_path: Path) -> None:
    result = explore(long_run, budget=1, seed=0, prove_minimal=False)
    cx = result.counterexample
    assert cx is not None and len(cx.trace) > MAX_STEPS
    raw = write_counterexample_html(cx, tmp_path / "long.html", title="long").read_text()
    assert 'id="cap-notice"' in raw and f"{MAX_STEPS:,}" in raw
    assert raw.count('<tr id="step-') == MAX_STEPS
    assert f'id="step-{cx.trace[-1].step}"' in raw and 'id="step-1"' not in raw


def test_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "x.html"
    atomic_write_text(target, "old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.html"]  # no temp file left behind


def test_report_dir_ignores_itself_once(tmp_path: Path) -> None:
    d = ensure_report_dir(tmp_path / "reports")
    assert (d / ".gitignore").read_text().strip().endswith("*")
    (d / ".gitignore").write_text("custom\n")
    ensure_report_dir(d)
    assert (d / ".gitignore").read_text() == "custom\n"


def _entries(tmp_path: Path) -> list[ReportEntry]:
    return [
        ReportEntry("kruise-imagepulljob", "buggy", "found", "found it", True, 12, 0.5, 1, 30, upstream="kruise#1",
                    json_path=str(tmp_path / "a.json"), html_path=str(tmp_path / "a.html"), seed=7),
        ReportEntry("kueue-second-pass", "fixed", "found", "found <it>", True, 40, 1.5, 2, 50, known_open=True),
        ReportEntry("volcano-gang", "fixed", "proved-clean", "proved clean up to 2", False, 90, 2.0, None, None),
    ]


def test_index_lists_every_entry_with_links_and_known_open(tmp_path: Path) -> None:
    raw = write_index(_entries(tmp_path), tmp_path).read_text()
    assert raw.count("<tr class=") == 3
    assert 'href="a.html"' in raw and 'href="a.json"' in raw
    assert "known open" in raw and "proved clean" in raw and "found &lt;it&gt;" in raw


def test_summary_is_a_rich_table(tmp_path: Path) -> None:
    from rich.console import Console

    out = StringIO()
    render_summary(_entries(tmp_path), Console(file=out, width=140, color_system=None))
    text = out.getvalue()
    for word in ("race", "variant", "verdict", "runs", "seconds", "deviations", "steps", "kueue-second-pass",
                 "(known open)", "proved clean"):
        assert word in text
