"""Generated reports in real headless Chromium, at 1400 and 800 px, with JavaScript off and on.

Needs the Debian ``chromium`` package and the ``playwright`` Python package
(playwright's own browser downloads are never used). Without them the tests
are skipped with the reason, never passed silently.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Counterexample, explore
from harness.report import ReportEntry, write_counterexample_html, write_index
from harness.sim import ReplayChooser, run_once
from tests.report.scenarios import HOSTILE, backlog, crowded, hostile

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WIDTHS = [1400, 800]
HEIGHT = 800


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    with sync_api.sync_playwright() as pw:
        # a non-persistent launch: playwright gives the browser a fresh temporary profile
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A report folder as the CLI writes it: a crowded race's page and trace, a hostile page, the index."""
    d = tmp_path_factory.mktemp("reports")
    cx = explore(crowded, budget=400, seed=0).counterexample
    assert cx is not None and any(r.choice for r in cx.trace)
    trace = cx.save(d / "crowded.json")
    page = write_counterexample_html(cx, d / "crowded.html", title="crowded", json_path=trace, index_path=d / "index.html")
    out = run_once(hostile, ReplayChooser([]), params={"note": HOSTILE})
    evil = write_counterexample_html(Counterexample.from_outcome(hostile, {"note": HOSTILE}, out), d / "evil.html",
                                     title=f"evil {HOSTILE}")
    entries = [
        ReportEntry("tests/report/test_browser.py::test_a_long_test_name_that_would_overflow_a_narrow_screen[crowded]",
                    "buggy", "found", cx.violation.describe(), True, 146, 0.57, cx.deviations, cx.steps,
                    upstream="volcano-sh/volcano#3374 (fix PR #3375, 2832dfe1)", json_path=str(trace),
                    html_path=str(page), seed=0),
        ReportEntry("volcano_gang_close", "fixed", "proved-clean", "proved clean up to 2 deviations", False, 90, 2.0,
                    None, None, seed=0),
        ReportEntry("kueue_second_pass_residual", "fixed", "found", "found it", True, 16, 0.1, 0, 84, known_open=True),
    ]
    index = write_index(entries, d)
    return {"page": page, "evil": evil, "index": index}


def _open(browser: Any, path: Path, *, width: int, javascript: bool, fragment: str = "") -> Any:
    context = browser.new_context(viewport={"width": width, "height": HEIGHT}, java_script_enabled=javascript)
    page = context.new_page()
    page.goto(path.as_uri() + fragment)
    return page


def _fully_visible(page: Any, selector: str) -> bool:
    """Inside the viewport, below the sticky bar, and inside every scrolling box around it."""
    return bool(page.evaluate(
        """(sel) => {
            const el = document.querySelector(sel); if (!el) return false;
            const r = el.getBoundingClientRect();
            const bar = document.querySelector('.bar').getBoundingClientRect().bottom;
            if (r.width === 0 || r.top < bar || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) return false;
            for (let p = el.parentElement; p; p = p.parentElement) {
                const s = getComputedStyle(p);
                if (/(auto|scroll|hidden)/.test(s.overflowX + s.overflowY)) {
                    const b = p.getBoundingClientRect();
                    if (r.left < b.left - 1 || r.right > b.right + 1) return false;
                    if (r.top < b.top - 1 || r.bottom > b.bottom + 1) return false;
                }
            }
            return true;
        }""",
        selector,
    ))


@pytest.mark.parametrize("javascript", [False, True], ids=["js-off", "js-on"])
@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
@pytest.mark.parametrize("target", ["deviation", "violation"])
def test_the_summary_link_lands_on_a_visible_box(
    browser: Any, site: dict[str, Path], target: str, width: int, javascript: bool
) -> None:
    page = _open(browser, site["page"], width=width, javascript=javascript)
    link = page.locator("#summary ol.devs a" if target == "deviation" else "#violation a").first
    fragment = link.get_attribute("href")
    assert fragment is not None and fragment.startswith("#step-")
    assert page.locator(f"#focused {fragment}").count() == 1  # the box is in the focused timeline
    assert not _fully_visible(page, fragment)  # out of view before following the link
    link.click()
    page.wait_for_function("h => location.hash === h", arg=fragment)
    page.wait_for_timeout(50)
    assert _fully_visible(page, fragment)
    page.context.close()


@pytest.mark.parametrize("javascript", [False, True], ids=["js-off", "js-on"])
def test_a_folded_stretch_opens_the_full_timeline_at_its_first_step(
    browser: Any, site: dict[str, Path], javascript: bool
) -> None:
    page = _open(browser, site["page"], width=1400, javascript=javascript)
    fold = page.locator("#focused tr.fold a").first
    fragment = fold.get_attribute("href")
    assert page.locator("#all-steps[open]").count() == 0
    fold.click()
    page.wait_for_function("h => location.hash === h", arg=fragment)
    assert page.locator("#all-steps[open]").count() == 1  # Chromium opens the <details> holding the target
    assert _fully_visible(page, fragment)
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def test_the_page_reads_without_javascript(browser: Any, site: dict[str, Path], width: int) -> None:
    page = _open(browser, site["page"], width=width, javascript=False)
    body = page.inner_text("body")
    for words in ("What went wrong", "How the run got there", "Reproduce", "python -m harness replay crowded.json",
                  "Timeline", "Counts", "race-harness"):
        assert words in body
    assert page.locator("#filters").count() == 0
    # the objects column folds away with its checkbox, no script involved
    assert page.locator("#focused td.obj").first.is_visible()
    page.uncheck("#objcol")
    assert not page.locator("#focused td.obj").first.is_visible()
    # the program is never cut off: it wraps instead of scrolling
    assert page.evaluate("(() => { const p = document.querySelector('pre.program'); return p.scrollWidth <= p.clientWidth })()")
    page.context.close()


def test_javascript_adds_a_text_filter(browser: Any, site: dict[str, Path]) -> None:
    page = _open(browser, site["page"], width=1400, javascript=True)
    rows = page.locator("#focused tbody tr:not([hidden])")
    before = rows.count()
    page.fill("#f-text", "write x")
    page.wait_for_timeout(400)
    after = rows.count()
    assert 1 <= after < before
    page.context.close()


def test_no_model_string_runs_as_script(browser: Any, site: dict[str, Path]) -> None:
    page = _open(browser, site["evil"], width=1400, javascript=False)
    page.context.close()
    context = browser.new_context(viewport={"width": 1400, "height": HEIGHT}, java_script_enabled=True)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(site["evil"].as_uri())
    page.wait_for_timeout(200)
    assert dialogs == []
    assert page.locator("img").count() == 0
    assert HOSTILE in page.inner_text("#summary")
    context.close()


@pytest.mark.parametrize("javascript", [False, True], ids=["js-off", "js-on"])
def test_the_index_fits_800px_and_filters_without_javascript(
    browser: Any, site: dict[str, Path], javascript: bool
) -> None:
    page = _open(browser, site["index"], width=800, javascript=javascript)
    assert page.evaluate("document.documentElement.scrollWidth") <= 800
    assert page.locator("table.runs tbody tr:visible").count() == 3
    page.click('.filter a[href="#found"]')
    assert page.locator("table.runs tbody tr:visible").count() == 2
    page.click('.filter a[href="#clean"]')
    assert page.locator("table.runs tbody tr:visible").count() == 1
    page.click('.filter a[href="#all"]')
    assert page.locator("table.runs tbody tr:visible").count() == 3
    page.locator("table.runs a", has_text="report").first.click()
    page.wait_for_load_state()
    assert page.url.endswith("/crowded.html")
    page.locator(".bar nav a", has_text="JSON").wait_for(state="attached")
    page.context.close()


def test_print_hides_navigation_and_keeps_the_summary(browser: Any, site: dict[str, Path]) -> None:
    page = _open(browser, site["page"], width=800, javascript=False)
    page.emulate_media(media="print")
    assert not page.locator(".bar nav").is_visible()
    assert page.locator("#summary").is_visible() and page.locator("pre.program").is_visible()
    assert page.evaluate("getComputedStyle(document.querySelector('.bar')).position") == "static"
    page.context.close()


@pytest.mark.slow
def test_a_4000_step_page_paints_within_a_second(browser: Any, tmp_path: Path) -> None:
    out = run_once(backlog, ReplayChooser([]), params={"steps": 3_100, "limit": 2_050})
    cx = Counterexample.from_outcome(backlog, {"steps": 3_100, "limit": 2_050}, out)
    assert len(cx.trace) >= 4_000
    path = write_counterexample_html(cx, tmp_path / "long.html", title="backlog")
    assert path.stat().st_size <= 1_000_000
    page = _open(browser, path, width=1400, javascript=True)
    paint = page.evaluate(
        "new Promise(ok => { const f = () => { const e = performance.getEntriesByName('first-contentful-paint')[0];"
        " e ? ok(e.startTime) : requestAnimationFrame(f) }; f() })"
    )
    assert 0 < paint <= 1_000, f"first contentful paint after {paint:.0f} ms"
    assert page.locator("figure.chart svg path.line").count() >= 1
    page.context.close()
