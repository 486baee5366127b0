"""The session index and the terminal summary; the report's templates ship inside the package."""

from __future__ import annotations

import json
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
        ReportEntry("volcano-gang", "buggy", "none-found", "clean (not a proof)", False, 500, 3.25, None, None),
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


def test_index_keeps_earlier_hunts(tmp_path: Path) -> None:
    """Issue 29 item 3: a second hunt into a folder lists the first one's pages below its own, with command and
    time, newest first; a page a later hunt rewrote is listed once, under that hunt; stray pages are listed too."""

    def found(name: str) -> ReportEntry:
        (tmp_path / f"{name}.html").write_text("<p>page</p>")
        (tmp_path / f"{name}.json").write_text("{}")
        return ReportEntry(name, "buggy", "found", f"found {name}", True, 5, 0.1, 1, 9,
                           json_path=str(tmp_path / f"{name}.json"), html_path=str(tmp_path / f"{name}.html"))

    clean = ReportEntry("calm", "fixed", "none-found", "no violation", False, 50, 0.2, None, None)
    write_index([found("first-a"), found("shared"), clean], tmp_path, command_line="python -m harness hunt first")
    write_index([found("second-b")], tmp_path, command_line="python -m harness hunt second")
    raw = write_index([found("shared")], tmp_path, command_line="python -m harness hunt third").read_text()
    earlier = raw.split('id="earlier"')[1]
    # newest first: the second hunt, then the first; each with its command and when it was written
    assert earlier.index("hunt second") < earlier.index("hunt first")
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · <code>python -m harness hunt second</code>", earlier)
    assert 'href="second-b.html"' in earlier and 'href="first-a.html"' in earlier
    assert raw.count('href="shared.html"') == 1 and 'href="shared.html"' not in earlier  # now the third hunt's
    assert "calm" not in earlier  # earlier hunts list their counterexample pages
    # a page no hunt recorded (an older harness, a copied file) is linked too; a deleted page is dropped
    (tmp_path / "stray.html").write_text('<meta name="generator" content="race-harness 0.1.0"><p>old</p>')
    (tmp_path / "users-own.html").write_text("<p>the user's own page, not a counterexample</p>")
    (tmp_path / "first-a.html").unlink()
    raw = write_index([], tmp_path, command_line="python -m harness hunt fourth").read_text()
    assert 'href="stray.html"' in raw and "Other counterexample pages in this folder" in raw
    assert "users-own.html" not in raw  # issue 37: only the harness's own pages are listed
    assert 'href="first-a.html"' not in raw and 'href="second-b.html"' in raw and 'href="shared.html"' in raw
    # the history is data, not trust: a forged entry pointing outside the folder is ignored
    history = tmp_path / ".race-harness-index"
    doc = json.loads(history.read_text())
    doc["hunts"][0]["entries"].append({**doc["hunts"][1]["entries"][0], "html_path": "../../etc/passwd"})
    history.write_text(json.dumps(doc))
    assert "passwd" not in write_index([], tmp_path).read_text()


def test_known_open_promises_a_violation_of_the_fixed_variant_only() -> None:
    """A known-open model hunted without ``--variant`` promised nothing: a clean run of it is not "UNEXPECTED"
    (a docs-only trial read "clean (one run) UNEXPECTED" for a canonical run of its own known-open model)."""
    def entry(variant: str, found: bool) -> ReportEntry:
        return ReportEntry("model.py:scenario", variant, "found" if found else "none-found", "", found, 1, 0.0,
                           None, None, known_open=True)

    assert entry("", False).expected and entry("", True).expected
    assert entry("fixed", True).expected and not entry("fixed", False).expected
    assert entry("buggy", True).expected and not entry("buggy", False).expected
