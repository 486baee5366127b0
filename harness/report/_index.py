"""The session's ``index.html`` and the rich terminal summary, from one list of entries."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._files import atomic_write_text


@dataclass(frozen=True)
class ReportEntry:
    """One explored race or race test: what was searched and what came of it.

    ``verdict`` is a :class:`harness.Result` verdict (``found``, ``none-found``,
    ``proved-clean``, ``interrupted``); ``outcome`` its sentence. Paths are where
    the JSON trace and the HTML report were written (None: nothing found).
    """

    name: str
    variant: str
    verdict: str
    outcome: str
    found: bool
    runs: int
    seconds: float
    deviations: int | None
    steps: int | None
    upstream: str = ""
    known_open: bool = False
    json_path: str | None = None
    html_path: str | None = None
    seed: int | None = None

    @property
    def expected(self) -> bool:
        """Whether the verdict is what the variant promises (buggy finds; fixed does not, unless known open)."""
        if self.variant == "buggy" or self.known_open:
            return self.found
        if self.variant == "fixed":
            return not self.found
        return True


_VERDICT_WORDS = {
    "found": "violation found",
    "none-found": "none found (not a proof)",
    "proved-clean": "proved clean",
    "interrupted": "interrupted",
}


def verdict_words(entry: ReportEntry) -> str:
    """The verdict for a person; a known-open case says so."""
    words = _VERDICT_WORDS.get(entry.verdict, entry.verdict)
    if entry.known_open and entry.found:
        words += " — known open upstream"
    return words


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


_CSS = """
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;margin:0}
main{padding:20px 28px}h1{font-size:22px;margin:0 0 6px}.sub{color:#59636e;margin:0 0 16px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #d1d9e0;padding:5px 9px;
 text-align:left;vertical-align:top}
th{background:#f6f8fa;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
.v-found{color:#cf222e;font-weight:600}.v-proved-clean{color:#1a7f37;font-weight:600}.v-none-found{color:#1a7f37}
.v-interrupted{color:#9a6700;font-weight:600}.open{background:#fff8c5}.tag{font-size:11px;font-weight:700;
 border-radius:9px;
padding:0 6px;background:#9a6700;color:#fff;margin-left:6px}.unexpected{background:#ffebe9}
.outcome{color:#59636e;font-size:12.5px}code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
"""


def _link(path: str | None, directory: Path, text: str) -> str:
    if not path:
        return "—"
    p = Path(path)
    try:
        href = p.resolve().relative_to(directory.resolve()).as_posix()
    except ValueError:
        href = p.resolve().as_uri()
    return f'<a href="{_e(href)}">{_e(text)}</a>'


def render_index(entries: list[ReportEntry], directory: Path, *, title: str = "race-harness session") -> str:
    found = sum(1 for e in entries if e.found)
    unexpected = sum(1 for e in entries if not e.expected)
    rows = []
    for e in entries:
        cls = "open" if e.known_open else "unexpected" if not e.expected else ""
        tag = '<span class="tag">known open</span>' if e.known_open else ""
        up = f'<div class="outcome">{_e(e.upstream)}</div>' if e.upstream else ""
        rows.append(
            f'<tr class="{cls}"><td><b>{_e(e.name)}</b>{tag}{up}</td><td>{_e(e.variant)}</td>'
            f'<td><span class="v-{_e(e.verdict)}">{_e(verdict_words(e))}</span>'
            f'<div class="outcome">{_e(e.outcome)}</div></td>'
            f'<td class="num">{e.runs:,}</td><td class="num">{e.seconds:.2f}</td>'
            f'<td class="num">{"—" if e.deviations is None else e.deviations}</td>'
            f'<td class="num">{"—" if e.steps is None else e.steps}</td>'
            f'<td class="num">{"—" if e.seed is None else _e(e.seed)}</td>'
            f"<td>{_link(e.html_path, directory, 'report')}</td><td>{_link(e.json_path, directory, 'trace')}</td></tr>"
        )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head><body><main>'
        f'<h1>{_e(title)}</h1><p class="sub">{len(entries)} searched · {found} with a violation · '
        f"{unexpected} not as the variant promises · known-open cases are marked</p>"
        "<table><thead><tr><th>race / test</th><th>variant</th><th>verdict</th><th>runs</th><th>seconds</th>"
        "<th>deviations</th><th>steps</th><th>seed</th><th>HTML</th><th>JSON</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></main></body></html>\n"
    )


def write_index(
    entries: list[ReportEntry], directory: str | os.PathLike[str], *, title: str = "race-harness session"
) -> Path:
    """Write ``directory/index.html`` listing ``entries`` (atomically); links are relative."""
    d = Path(directory)
    return atomic_write_text(d / "index.html", render_index(list(entries), d, title=title))


def render_summary(entries: list[ReportEntry], console: Any, *, title: str | None = None) -> None:
    """Print a rich table of ``entries`` on ``console`` (a ``rich.console.Console``).

    rich is imported here, not at module import, so the pytest plugin stays cheap.
    """
    from rich.table import Table

    table = Table(title=title, title_justify="left", padding=(0, 1))
    table.add_column("race", no_wrap=True)
    table.add_column("variant", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for col in ("runs", "seconds", "deviations", "steps"):
        table.add_column(col, justify="right", no_wrap=True)
    for e in entries:
        style = "bold red" if e.found and not e.known_open else "yellow" if e.known_open else "green"
        if not e.expected:
            style += " reverse"
        table.add_row(
            e.name,
            e.variant,
            f"[{style}]{_rich_escape(_short_verdict(e))}[/]",
            f"{e.runs:,}",
            f"{e.seconds:.2f}",
            "—" if e.deviations is None else str(e.deviations),
            "—" if e.steps is None else str(e.steps),
        )
    console.print(table)


def _short_verdict(e: ReportEntry) -> str:
    """A terminal-width verdict: the index and the outcome sentence carry the long form."""
    words = {"found": "found", "none-found": "clean (sampled)", "proved-clean": "proved clean"}
    text = words.get(e.verdict, e.verdict)
    if e.known_open and e.found:
        text += " (known open)"
    return text if e.expected else f"{text} UNEXPECTED"


def _rich_escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)
