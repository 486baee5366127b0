"""A generated report in real headless Chromium, with JavaScript off and on.

Needs the Debian ``chromium`` package and the ``playwright`` Python package
(playwright's own browser downloads are never used). Without them the test
is skipped with the reason, never passed silently.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import explore
from harness.report import write_counterexample_html
from harness.report._html import lanes_of
from tests.report.scenarios import EVIL, evil_name

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the Python package only)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    with sync_api.sync_playwright() as pw:
        # a non-persistent launch: playwright gives the browser a fresh temporary profile
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.mark.parametrize("javascript", [False, True], ids=["js-off", "js-on"])
def test_report_renders_in_chromium(browser, tmp_path: Path, javascript: bool) -> None:  # type: ignore[no-untyped-def]
    cx = explore(evil_name, budget=200, seed=3).counterexample
    assert cx is not None
    path = write_counterexample_html(cx, tmp_path / "report.html", title=f"evil {EVIL}")
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    lanes = page.locator("th.lanehead").all_inner_texts()
    assert lanes == lanes_of(cx.trace)
    for r in cx.trace:
        assert page.locator(f"#step-{r.step}").is_visible()
    body = page.inner_text("body")
    assert "cache agrees" in body and cx.violation.message in body
    assert EVIL in body and dialogs == []  # the hostile name is text, not a script
    assert page.locator("#filters").count() == (1 if javascript else 0)
    # a step's details open on click, with or without JavaScript
    dev = next(r for r in cx.trace if r.choice)
    page.locator(f"#step-{dev.step} summary").click()
    assert page.locator(f"#step-{dev.step} details[open]").count() == 1
    if javascript:
        page.check("#f-dev")
        visible = page.locator("#timeline tbody tr[data-actor]:not(.hidden)").count()
        assert 1 <= visible < len(cx.trace)
    context.close()
