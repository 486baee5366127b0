"""The session's ``index.html`` and the rich terminal summary, from one list of entries.

The index filters by verdict without JavaScript: empty elements with the ids
``all``, ``found``, ``unexpected``, ``known-open`` and ``clean`` precede the
table, and the stylesheet hides the rows outside the group whose id is the
page's ``:target`` (a plain link such as ``index.html#found``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ._files import atomic_write_text, is_ours, write_owned


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
    #: what the search promised: "violation", "clean", or None (the variant's promise, or none without one)
    expect: str | None = None
    #: the parameters given on the command line (``--param``), shown beside the name
    params: dict[str, Any] = field(default_factory=dict)
    #: the kind of the counterexample's violation ("oracle", "actor-raised", ...)
    violation_kind: str | None = None
    #: time to find, apart from the shrink and the proof: the run that first failed, seconds until then
    found_at_run: int | None = None
    found_after_s: float | None = None
    shrink_runs: int | None = None
    proof_runs: int | None = None
    #: a broken model rather than the race ("the scenario raised TypeError at model.py:57 ..."): never as promised
    model_error: str | None = None
    #: plan entries that never applied ("entry 3 'hold ...' never occurred; the closest identities: ..."):
    #: a plan that did not apply is no result, never as promised
    unapplied: list[str] = field(default_factory=list)
    #: fault kinds searched that had no fault point in the model ("crash: no ControllerProcess")
    faults_without_points: list[str] = field(default_factory=list)
    #: real seconds the runs waited for operator processes outside the world (ExternalOperator); 0: none ran
    live_seconds: float = 0.0

    @property
    def expected(self) -> bool:
        """Whether the verdict is what was promised (``expect``, else the variant's: buggy finds, fixed does not,
        unless known open). A model error never is."""
        if self.model_error is not None or self.unapplied:
            return False
        if self.expect == "violation":
            return self.found
        if self.expect == "clean":
            return not self.found
        if self.variant == "buggy" or (self.known_open and self.variant == "fixed"):
            return self.found
        if self.variant == "fixed":
            return not self.found
        return True


_VERDICT_WORDS = {
    "found": "violation found",
    "none-found": "clean (sampled)",  # one word for it everywhere: the terminal, the index, its filter
    "proved-clean": "proved clean",
    "interrupted": "interrupted",
    "model-error": "model error (not the race)",
    "runaway": "runaway (a run that never ends; not the race)",
}


def verdict_words(entry: ReportEntry) -> str:
    """The verdict for a person; a known-open case says so."""
    words = _VERDICT_WORDS.get(entry.verdict, entry.verdict)
    if entry.found and entry.violation_kind == "actor-raised":
        words = "exception found (an actor raised)"  # a panic in a controller, apart from an oracle violation
    elif entry.found and entry.violation_kind == "crashed":
        words = "found: the operator crashed"  # an operator as written ended on an unhandled exception
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

    @property
    def params(self) -> str:
        """The ``--param`` values of the search, as typed (``warm=2, name=web``)."""
        return ", ".join(f"{k}={_param_text(v)}" for k, v in self.e.params.items())


def _group(e: ReportEntry) -> list[str]:
    """The verdict filters a row belongs to (the index's ``#found``, ``#clean``, ... sections)."""
    out = ["found" if e.found else "clean" if e.verdict in ("none-found", "proved-clean") else e.verdict]
    if not e.expected:
        out.append("unexpected")
    if e.known_open:
        out.append("known-open")
    return out


#: the index's memory of earlier hunts into its folder (beside index.html; rewritten with it)
HISTORY_FILE = ".race-harness-index"  # JSON, but no .json suffix: a glob for traces must not pick it up
_HISTORY_FORMAT = "race-harness-index"


@dataclass(frozen=True)
class EarlierHunt:
    """A hunt written into the same folder before: its command, when, and the counterexample pages it left."""

    command: str
    written: str
    entries: tuple[ReportEntry, ...]


def _entry_json(e: ReportEntry, directory: Path) -> dict[str, Any]:
    from dataclasses import asdict

    raw = asdict(e)
    for key in ("json_path", "html_path"):  # stored by file name: the folder may be copied elsewhere
        raw[key] = None if raw[key] is None else os.path.relpath(Path(raw[key]).resolve(), directory.resolve())
    return raw


def _entry_from_json(raw: Any, directory: Path) -> ReportEntry | None:
    """An entry of the history file, or None when it is malformed or its page is gone or outside the folder."""
    import dataclasses

    if not isinstance(raw, dict):
        return None
    names = {f.name for f in dataclasses.fields(ReportEntry)}
    try:
        e = ReportEntry(**{k: v for k, v in raw.items() if k in names})
    except TypeError:
        return None
    for p in (e.html_path, e.json_path):
        if p is not None and (not isinstance(p, str) or Path(p).name != p or not (directory / p).is_file()):
            return None  # only a page beside the index, still there (the file is data, not trust)
    if e.html_path is None or not isinstance(e.name, str) or not isinstance(e.runs, int):
        return None
    return dataclasses.replace(
        e, html_path=str(directory / e.html_path), json_path=None if e.json_path is None else str(directory / e.json_path)
    )


def _read_history(directory: Path) -> list[EarlierHunt]:
    import json

    try:
        raw = json.loads((directory / HISTORY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(raw, dict) or raw.get("format") != _HISTORY_FORMAT or not isinstance(raw.get("hunts"), list):
        return []
    out = []
    for h in raw["hunts"]:
        if not isinstance(h, dict):
            continue
        entries = [e for e in (_entry_from_json(x, directory) for x in h.get("entries") or []) if e is not None]
        out.append(EarlierHunt(str(h.get("command", "")), str(h.get("written", "")), tuple(entries)))
    return out


def _pages(e: ReportEntry) -> set[str]:
    return {Path(p).name for p in (e.html_path, e.json_path) if p}


def earlier_hunts(entries: list[ReportEntry], directory: Path) -> list[EarlierHunt]:
    """The earlier hunts of ``directory``'s history, newest first, each with the pages this hunt did not rewrite.

    Pages no history names (written by an older harness, or copied in) are listed
    as one last group, so no counterexample page in the folder goes unlinked.
    """
    import datetime as dt

    taken = set().union(*(_pages(e) for e in entries)) if entries else set()
    out = []
    for h in _read_history(directory):
        kept = tuple(e for e in h.entries if not (_pages(e) & taken))
        taken |= set().union(*(_pages(e) for e in kept)) if kept else set()
        if kept:
            out.append(EarlierHunt(h.command, h.written, kept))
    stray = []
    for page in sorted(directory.glob("*.html")):
        # only the harness's own pages: a user's page in the folder is not a counterexample of a hunt
        if not re.fullmatch(r"index(-\d+)?\.html", page.name) and page.name not in taken and is_ours(page):
            trace = page.with_suffix(".json")
            when = dt.datetime.fromtimestamp(page.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            stray.append(ReportEntry(page.stem, "", "found", f"written {when}", True, 0, 0.0, None, None,
                                     json_path=str(trace) if trace.is_file() else None, html_path=str(page)))
    if stray:
        out.append(EarlierHunt("", "", tuple(stray)))
    return out


def _write_history(entries: list[ReportEntry], earlier: list[EarlierHunt], directory: Path, command: str,
                   written: str) -> None:
    import json

    hunts = [{"command": command, "written": written, "entries": [_entry_json(e, directory) for e in entries
                                                                    if e.html_path]}]
    hunts += [{"command": h.command, "written": h.written, "entries": [_entry_json(e, directory) for e in h.entries]}
              for h in earlier if h.command or h.written]
    doc = {"format": _HISTORY_FORMAT, "version": 1, "hunts": hunts}
    atomic_write_text(directory / HISTORY_FILE, json.dumps(doc, indent=1, default=str) + "\n")


def render_index(
    entries: list[ReportEntry],
    directory: Path,
    *,
    title: str = "race-harness session",
    command_line: str | None = None,
    earlier: list[EarlierHunt] | None = None,
    planned: int | None = None,
    interrupted: bool = False,
) -> str:
    """The index page as a string; links are relative to ``directory``.

    ``interrupted``: the session was cut (Ctrl-C, SIGTERM) after ``len(entries)``
    of ``planned`` searches; its badge says so and never "all as promised",
    since the searches that never ran promised nothing.

    ``earlier``: the hunts written into the same folder before (newest first),
    listed below this one with their command and time, so a second hunt never
    unlinks the first one's pages.
    """
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
    earlier_rows = [
        (h, [_Row(e, verdict_words(e), " ".join(_group(e)), "", href(e.html_path, directory) if e.html_path else None,
                  href(e.json_path, directory) if e.json_path else None) for e in h.entries])
        for h in earlier or []
    ]
    context = {
        "earlier": earlier_rows,
        "css": stylesheet(),
        "prov": provenance(command_line),
        "title": title,
        "rows": rows,
        "groups": groups,
        "unexpected": groups["unexpected"],
        "cut": interrupted_words(len(entries), planned) if interrupted else None,
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
    planned: int | None = None,
    interrupted: bool = False,
) -> Path:
    """Write ``directory/index.html`` listing ``entries`` (atomically), then every earlier hunt's pages; links
    are relative.

    The folder keeps a small history (:data:`HISTORY_FILE`) of the hunts written
    into it, newest first, each with its command and time; a page a later hunt
    rewrote belongs to that later hunt.
    """
    from ._provenance import provenance

    d = Path(directory)
    entries = list(entries)
    earlier = earlier_hunts(entries, d)
    prov = provenance(command_line)
    page = write_owned(  # a user's own index.html is kept; this one goes beside it (index-2.html)
        d / "index.html", render_index(entries, d, title=title, command_line=command_line, earlier=earlier,
                                         planned=planned, interrupted=interrupted)
    )
    _write_history(entries, earlier, d, prov.command, prov.written)
    return page


def interrupted_words(searches: int, planned: int | None) -> str:
    """"interrupted after 2 of 16 searches": what a cut session's index, JSON and terminal say of it."""
    total = searches if planned is None else planned
    of = f" of {planned:,}" if planned is not None else ""
    return f"interrupted after {searches:,}{of} {'search' if total == 1 else 'searches'}"


def render_summary(entries: list[ReportEntry], console: Any, *, title: str | None = None) -> None:
    """Print a rich table of ``entries`` on ``console`` (a ``rich.console.Console``).

    rich is imported here, not at module import, so the pytest plugin stays cheap.
    """
    from rich.table import Table

    table = Table(title=title, title_justify="left", padding=(0, 1))
    names = [_summary_name(e) for e in entries]
    table.add_column("race", overflow="fold", min_width=min(40, max((len(n) for n in names), default=10)))
    table.add_column("variant", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    # time to find apart from the shrink and the proof (found_at_run, found_after_s, shrink_runs and proof_runs
    # in --json and the bench); runs and seconds are the totals
    table.add_column("found at run", justify="right", no_wrap=True)
    table.add_column("shrink + proof", justify="right", no_wrap=True)
    for col in ("runs", "seconds", "deviations", "steps"):
        table.add_column(col, justify="right", no_wrap=True)
    for e in entries:
        style = "bold red" if e.found and not e.known_open else "yellow" if e.known_open else "green"
        if not e.expected:
            style += " reverse"
        name = _summary_name(e)
        found_at = "—" if e.found_at_run is None else f"{e.found_at_run:,}"
        if e.found_after_s is not None:
            found_at += f" ({e.found_after_s:.2f} s)"
        after = "—" if e.shrink_runs is None else f"{e.shrink_runs:,} + {_count(e.proof_runs)}"
        table.add_row(
            _rich_escape(name),
            _rich_escape(e.variant),
            f"[{style}]{_rich_escape(_short_verdict(e))}[/]",
            found_at,
            after,
            f"{e.runs:,}",
            f"{e.seconds:.2f}",
            _count(e.deviations),
            _count(e.steps),
        )
    console.print(table)


def _short_verdict(e: ReportEntry) -> str:
    """A terminal-width verdict: the index and the outcome sentence carry the long form."""
    words = {"found": "found", "none-found": "clean (sampled)", "proved-clean": "proved clean",
             "model-error": "model error", "runaway": "runaway"}
    text = words.get(e.verdict, e.verdict)
    if e.verdict == "none-found" and e.runs == 1:
        text = "clean (one run)"  # a hand-written plan (--plan) or a replay: one run, not a sample of a search
    if e.found and e.violation_kind in ("actor-raised", "crashed"):
        text += " (exception)" if e.violation_kind == "actor-raised" else " (crash)"  # apart from an oracle
    if e.known_open and e.found:
        text += " (known open)"
    return text if e.expected else f"{text} UNEXPECTED"


def _summary_name(e: ReportEntry) -> str:
    """The race or test, with the ``--param`` values it was searched with: ``model.py:fn [drops=false]``."""
    return f"{e.name} [{', '.join(f'{k}={_param_text(v)}' for k, v in e.params.items())}]" if e.params else e.name


def _count(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _param_text(value: Any) -> str:
    """A parameter as typed on the command line: ``drops=false``, ``name=web``."""
    import json

    return value if isinstance(value, str) else json.dumps(value, default=repr)


def _rich_escape(text: str) -> str:
    from .._terminal import markup_safe

    return markup_safe(text)
