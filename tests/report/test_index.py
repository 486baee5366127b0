"""The session index and the terminal summary; the report's templates ship inside the package."""

from __future__ import annotations

import re
from importlib import resources
from io import StringIO
from pathlib import Path

from harness.report import ReportEntry, ensure_report_dir, render_summary, write_index


def _entries(tmp_path: Path) -> list[ReportEntry]:
    return [
        ReportEntry("kruise-imagepulljob", "buggy", "found", "found it", True, 12, 0.5, 1, 30,
                    upstream="openkruise/kruise#1528 (fix PR #1526, fd7e86e8)",
                    json_path=str(tmp_path / "a.json"), html_path=str(tmp_path / "a.html"), seed=7),
        ReportEntry("kueue-second-pass", "fixed", "found", "found <it>", True, 40, 1.5, 2, 50, known_open=True),
        ReportEntry("volcano-gang", "fixed", "proved-clean", "proved clean up to 2", False, 90, 2.0, None, None),
        ReportEntry("volcano-gang", "buggy", "none-found", "no violation (not a proof)", False, 500, 3.25, None, None),
    ]


def _rows(raw: str) -> list[str]:
    body = raw.split("<tbody>")[1].split("</tbody>")[0]
    return re.findall(r'<tr class="([^"]*)">', body)


def test_index_lists_every_entry_with_runs_time_and_relative_links(tmp_path: Path) -> None:
    raw = write_index(_entries(tmp_path), tmp_path).read_text()
    assert len(_rows(raw)) == 4
    assert 'href="a.html"' in raw and 'href="a.json"' in raw
    assert "known open" in raw and "proved clean" in raw and "found &lt;it&gt;" in raw
    assert "3.25 s" in raw and ">500<" in raw
    assert 'href="https://github.com/openkruise/kruise/issues/1528"' in raw
    assert "<script" not in raw  # the filter needs none
    assert str(tmp_path) not in raw


def test_the_verdict_filter_is_anchors_and_css(tmp_path: Path) -> None:
    raw = write_index(_entries(tmp_path), tmp_path).read_text()
    rows = _rows(raw)
    assert rows == ["found", "found known-open", "clean", "clean unexpected"]
    for group in ("all", "found", "unexpected", "known-open", "clean"):
        assert f'<span id="{group}" class="ftarget"></span>' in raw and f'href="#{group}"' in raw
    # each group's rule hides the rows outside it while its anchor is the :target
    for group in ("found", "unexpected", "known-open", "clean"):
        assert f"#{group}:target~table.runs tbody tr:not(.{group})" in raw


def test_both_pages_carry_a_print_stylesheet(tmp_path: Path) -> None:
    raw = write_index(_entries(tmp_path), tmp_path).read_text()
    assert "@media print{" in raw


def test_templates_and_stylesheet_ship_in_the_package() -> None:
    folder = resources.files("harness.report").joinpath("templates")
    names = {p.name for p in folder.iterdir()}
    assert {"report.css", "counterexample.html.j2", "index.html.j2", "_page.html.j2", "_timeline.html.j2"} <= names
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"jinja2>=3.1"' in pyproject


def test_report_dir_ignores_itself_once(tmp_path: Path) -> None:
    d = ensure_report_dir(tmp_path / "reports")
    assert (d / ".gitignore").read_text().strip().endswith("*")
    (d / ".gitignore").write_text("custom\n")
    ensure_report_dir(d)
    assert (d / ".gitignore").read_text() == "custom\n"


def test_summary_is_a_rich_table(tmp_path: Path) -> None:
    from rich.console import Console

    out = StringIO()
    render_summary(_entries(tmp_path), Console(file=out, width=140, color_system=None))
    text = out.getvalue()
    for word in ("race", "variant", "verdict", "runs", "seconds", "deviations", "steps", "kueue-second-pass",
                 "(known open)", "proved clean"):
        assert word in text
