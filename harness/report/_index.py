"""The session's ``index.html`` and the rich terminal summary, from one list of entries.

The index filters by verdict without JavaScript: empty elements with the ids
``all``, ``found``, ``unexpected``, ``known-open`` and ``clean`` precede the
table, and the stylesheet hides the rows outside the group whose id is the
page's ``:target`` (a plain link such as ``index.html#found``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

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


@dataclass(frozen=True)
class _Row:
    e: ReportEntry
    words: str
    classes: str
    upstream: Markup | str
    html: str | None
    json: str | None


def _group(e: ReportEntry) -> list[str]:
    """The verdict filters a row belongs to (the index's ``#found``, ``#clean``, ... sections)."""
    out = ["found" if e.found else "clean" if e.verdict in ("none-found", "proved-clean") else e.verdict]
    if not e.expected:
        out.append("unexpected")
    if e.known_open:
        out.append("known-open")
    return out


def render_index(
    entries: list[ReportEntry],
    directory: Path,
    *,
    title: str = "race-harness session",
    command_line: str | None = None,
) -> str:
    """The index page as a string; links are relative to ``directory``."""
    from ._html import environment, href, stylesheet
    from ._provenance import provenance
    from ._text import linkify, upstream_repo

    rows = []
    groups = {"found": 0, "clean": 0, "unexpected": 0, "known-open": 0, "interrupted": 0}
    for e in entries:
        classes = _group(e)
        for c in classes:
            groups[c] = groups.get(c, 0) + 1
        rows.append(
            _Row(
                e,
                verdict_words(e),
                " ".join(classes),
                linkify(e.upstream, upstream_repo(e.upstream), commits=True) if e.upstream else "",
                href(e.html_path, directory) if e.html_path else None,
                href(e.json_path, directory) if e.json_path else None,
            )
        )
    context = {
        "css": stylesheet(),
        "prov": provenance(command_line),
        "title": title,
        "rows": rows,
        "groups": groups,
        "unexpected": groups["unexpected"],
        "total_runs": sum(e.runs for e in entries),
        "total_seconds": sum(e.seconds for e in entries),
    }
    return str(environment().get_template("index.html.j2").render(context))


def write_index(
    entries: list[ReportEntry],
    directory: str | os.PathLike[str],
    *,
    title: str = "race-harness session",
    command_line: str | None = None,
) -> Path:
    """Write ``directory/index.html`` listing ``entries`` (atomically); links are relative."""
    d = Path(directory)
    return atomic_write_text(d / "index.html", render_index(list(entries), d, title=title, command_line=command_line))


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
