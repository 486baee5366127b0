"""The self-contained HTML race report of one counterexample.

The page answers, top down, what a reviewer asks in order: what broke (the
oracle in words, the actor, each deviation as "step N, ACTOR did X instead of
Y"), how to reproduce it (commands relative to the report's folder, the step
program), how a metric behaved over the run (inline SVG), which state the
violation names, and the timeline: focused on the deviations, faults and the
violation, the whole run one ``<details>`` away.

Rendering is Jinja2 with autoescaping on for everything; the templates and the
one stylesheet live in ``harness/report/templates`` and are inlined into each
page, so it stays one file that reads without JavaScript (Jenkins' CSP blanks
JS-only pages; a script only adds a text filter).
"""

from __future__ import annotations

import functools
import os
import re
import urllib.parse
from importlib import resources
from pathlib import Path
from typing import Any

from markupsafe import Markup

from .._verdicts import waiting
from ..explore import Counterexample
from ..explore._minimum import LIVE_REPRODUCE
from ..explore._story import presented
from ..sim import VERDICTS
from ._chart import draw
from ._files import atomic_write_text
from ._provenance import provenance
from ._snapshot import StateLog, capture_states
from ._story import deviations, minimality, plan_lines, relevant, violating_actor
from ._text import breakable, linkify, upstream_repo
from ._timeline import MAX_STEPS, Fold, box_text, counts, focus, full, is_fault, lanes_of
from ._why import why_sentence

__all__ = ["MAX_STEPS", "render_counterexample_html", "slug", "write_counterexample_html"]

#: a page with its full timeline larger than this (UTF-8 bytes) is written without it
PAGE_BUDGET = 1_000_000
#: the full timeline carries the objects column up to this many records
_FULL_OBJECTS = 1_000
_MAX_CHARTS = 8
#: the objects column starts unfolded up to this many lanes in the focused timeline
_OBJECTS_LANES = 8
_MAX_DEVIATIONS = 30


def _num(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    return f"{value:,}" if isinstance(value, int | float) else str(value)


@functools.cache
def environment() -> Any:
    """The Jinja2 environment (autoescape everywhere, undefined names fail), built on first use.

    Imported lazily: the pytest plugin and the CLI import ``harness.report`` only when they write.
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["breakable"] = breakable
    env.filters["num"] = _num
    return env


@functools.cache
def stylesheet() -> Markup:
    """The one stylesheet, inlined into every page (it is ours: no model text reaches it)."""
    text = resources.files("harness.report").joinpath("templates", "report.css").read_text(encoding="utf-8")
    return Markup(text.replace("</", "<\\/"))


def href(target: str | os.PathLike[str], page_dir: Path) -> str:
    """A link from a page in ``page_dir`` to ``target``: relative, so a downloaded folder keeps working."""
    try:
        rel = os.path.relpath(Path(target).resolve(), page_dir.resolve())
    except ValueError:  # another drive on Windows
        return Path(target).resolve().as_uri()
    return urllib.parse.quote(Path(rel).as_posix())


def _replay_lines(
    cx: Counterexample, page_dir: Path, json_path: str | None, extra: str | None
) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    if json_path:
        here = os.path.relpath(Path(json_path).resolve(), page_dir.resolve())
        lines.append(("replay (in this folder)", cx.replay_command(Path(here).as_posix())))
        try:
            there = os.path.relpath(Path(json_path).resolve(), Path.cwd())
        except ValueError:
            there = ""
        if there and not there.startswith("..") and not os.path.isabs(there) and Path(there) != Path(here):
            lines.append(("replay (where it was written)", cx.replay_command(Path(there).as_posix())))
    else:
        lines.append(("replay", cx.replay_command("<trace.json>") + "   # after Counterexample.save('<trace.json>')"))
    if extra and all(extra != cmd for _, cmd in lines):
        lines.append(("or", extra))
    return lines


#: how ``ExternalOperator.start`` notes an operator process (its note names it in the field ``process``)
_OWN_PROCESS = "runs as its own process against this apiserver"


def live_words(notes: Any, live_seconds: float | None = None) -> str:
    """What a run with operator processes outside the world (``ExternalOperator``) must tell its reader: it ran on
    the real clock, so a replay starts fresh processes and reproduces as far as their own threads allow, and how
    long the search waited for them (``live_seconds``, the hunt's; never saved in the trace, whose bytes are the
    same in every run). Empty for a run of the world alone."""
    names = sorted({str(dict(n.fields).get("process")) for n in notes
                    if n.kind == "log" and _OWN_PROCESS in n.text and dict(n.fields).get("process")})
    if not names:
        return ""
    text = (f"This run used operator processes on the real clock ({', '.join(names)}): between choices the harness "
            "waited for them to go quiet, so one plan gives one order of API events as far as their own threads "
            f"allow. A replay starts them afresh; a plan counted as failing only when it failed {LIVE_REPRODUCE} times "
            "in a row")
    if live_seconds:
        text += f". The search waited {live_seconds:.1f} s (real) for them"
    return text + ". To see how often it reproduces here: add --runs N to the replay command (reproduced k of N)."


def render_counterexample_html(
    cx: Counterexample,
    *,
    title: str,
    upstream: str = "",
    seed: int | None = None,
    replay_command: str | None = None,
    state: StateLog | None = None,
    page_path: str | os.PathLike[str] | None = None,
    json_path: str | os.PathLike[str] | None = None,
    index_path: str | os.PathLike[str] | None = None,
    command_line: str | None = None,
    model_error: str | None = None,
    live_seconds: float | None = None,
) -> str:
    """The report as a string; :func:`write_counterexample_html` writes it.

    ``model_error``: the hunt's "model error: ..." line when this failure is the
    model's, not the race (default: ``cx.meta["model_error"]``, which the hunt
    saves with the trace). The page then says so in its badge, box and text, as
    the terminal and the index do, and gives the same remedy.

    ``page_path`` is where the page will live (links and the replay command
    are made relative to its folder); ``json_path`` the saved trace (default:
    where ``cx`` was saved or loaded from), ``index_path`` the session index.
    ``replay_command`` is one more way to replay (the pytest line), shown as given. ``live_seconds``: the real
    seconds the search waited for operator processes (``Result.live_seconds``), said beside the line that the run
    used them.
    """
    if state is None:
        state = capture_states(cx)
    page_dir = Path(page_path).parent if page_path is not None else Path.cwd()
    json_file = str(json_path) if json_path is not None else cx.path
    told = cx.told()
    records = presented(told, told.notes, plan=cx.plan is not None)
    v = cx.violation
    actors = lanes_of(records)
    devs = deviations(records, actors)
    plan = plan_lines(cx)
    actor, vrec = violating_actor(cx)
    violation_step = vrec.step if vrec is not None else (records[-1].step if records else -1)
    # one story: the page's summary, its state table and its focused timeline come from the story's slice
    story = cx.story()
    known = {ref for store in state.final.values() for ref in store} | {ref for g in state.gone.values() for ref in g}
    refs = [ref for ref in story.objects if ref in known] if state.available else []
    rel = relevant(cx, state, refs)
    plan_steps = [s for p in plan for s in p.steps]
    focused = focus(records, violation_step=violation_step, extra=plan_steps, named=sorted(story.steps))
    shown = [b for b in focused.rows if not isinstance(b, Fold)]
    folds = sum(1 for b in focused.rows if isinstance(b, Fold))
    around = (
        f"the neighbourhoods of {len(devs)} deviation{'s' if len(devs) != 1 else ''}"
        f"{' and faults' if any(d.kind == 'fault' for d in devs) else ''} and of the violation"
        if devs
        else "the neighbourhood of the violation"
    )
    focus_words = (
        f"Showing {len(shown):,} of {len(records):,} steps: {around}"
        + (", and the steps the story tells" if story.steps else "")
        + (f"; {folds} canonical stretch{'es' if folds != 1 else ''} folded." if folds else ".")
        + (" Lanes of actors with nothing shown are hidden." if len(focused.lanes) < len(actors) else "")
    )
    end_time = max((r.time for r in records), default=0.0)
    end_time = max(end_time, v.time)
    end_step = records[-1].step if records else 0
    charts = []
    for series in list(state.series.values())[:_MAX_CHARTS]:
        c = draw(series, end_time=end_time, end_step=end_step, mark=(v.time, v.step))
        if c is not None:
            charts.append(c)
    minimal, proof = minimality(cx)
    if model_error is None and isinstance(cx.meta.get("model_error"), str):
        model_error = str(cx.meta["model_error"])
    # a deadlock is charged to the actor that waits, at the line it waits on; never to the step it ran last
    waits = waiting(v)
    repo = upstream_repo(upstream) or upstream_repo(str(cx.meta.get("upstream", "")))
    state_note = "" if state.available or not state.note.startswith("object state unavailable") else state.note
    params = ", ".join(f"{k}={val!r}" for k, val in cx.params.items())
    focused_steps = {b.record.step for b in shown}
    context = {
        "css": stylesheet(),
        "prov": provenance(command_line),
        "title": title,
        "cx": cx,
        "v": v,
        "verdict": "model error (not the race)" if model_error else VERDICTS.get(v.kind, v.kind),
        "model_error": model_error,
        "waits": waits,
        "message": linkify(v.message, repo),
        "upstream": linkify(upstream, repo, commits=True) if upstream else "",
        "params": params,
        "actor": actor,
        "vrec": vrec,
        "vtext": box_text(vrec) if vrec is not None else "",
        "devs": devs,
        "max_devs": _MAX_DEVIATIONS,
        "plan": plan,
        "replay": _replay_lines(cx, page_dir, json_file, replay_command),
        "seed": cx.seed if seed is None else seed,
        "faults": sum(1 for r in records if is_fault(r)),
        "n_records": len(records),
        "end_time": end_time,
        "minimal": minimal,
        "proof": proof,
        "program": cx.program(),
        "story_lines": _story_lines(cx),
        "why": why_sentence(cx, story),
        "live": live_words(told.notes, live_seconds),
        # each story line with the steps of its own plan entry: the story tells entries in the run's order,
        # the plan lists them in the search's (zipping the two paired a hold with another entry's steps)
        "story_entries": [(text, plan[i].steps if i < len(plan) else ())
                          for text, i in zip(story.entries, story.entry_plan, strict=False)]
        if cx.plan is not None else [],
        "story_told": cx.told().noted,
        # an oracle that broke because time passed: the badge says the instant, not the step before it
        "vlate": v.time if vrec is not None and v.time > vrec.time + 1e-9 else None,
        "json_href": href(json_file, page_dir) if json_file else None,
        "json_name": Path(json_file).name if json_file else None,
        "index_href": href(index_path, page_dir) if index_path is not None else None,
        "charts": charts,
        "show_state": bool(state_note) or not rel.empty,
        "state_note": state_note,
        "relevant": rel,
        "focused": focused,
        "focused_lanes": {a: i for i, a in enumerate(focused.lanes)},
        "focused_steps": focused_steps,
        "objects_lanes": _OBJECTS_LANES,
        "focus_words": focus_words,
        "full": None,
        "full_lanes": {a: i for i, a in enumerate(actors)},
        "full_objects": len(records) <= _FULL_OBJECTS,
        "cap_words": "",
        "changes": state.changes,
        "available": state.available,
        "counts": counts(records),
    }
    template = environment().get_template("counterexample.html.j2")
    if len(records) <= MAX_STEPS:
        context["full"] = full(records, violation_step=violation_step)
        page = str(template.render(context))
        if len(page.encode("utf-8")) <= PAGE_BUDGET:
            return page
        why = f"its full timeline would make this page larger than {PAGE_BUDGET // 1_000_000} MB"
    else:
        why = f"that is more than the {MAX_STEPS:,} a page shows in full"
    context["full"] = None
    context["cap_words"] = (
        f"This run has {len(records):,} steps; {why}, so the full timeline is left out. The focused timeline "
        "above shows every deviation, fault and the violation with their neighbours; the metrics and counts "
        "summarise the rest."
    )
    return str(template.render(context))


def write_counterexample_html(
    cx: Counterexample,
    path: str | os.PathLike[str],
    *,
    title: str,
    upstream: str = "",
    seed: int | None = None,
    replay_command: str | None = None,
    json_path: str | os.PathLike[str] | None = None,
    index_path: str | os.PathLike[str] | None = None,
    command_line: str | None = None,
    model_error: str | None = None,
    live_seconds: float | None = None,
) -> Path:
    """Write the self-contained HTML report of ``cx`` to ``path`` (atomically) and return it.

    The counterexample is replayed once with an observer to show the objects'
    state per step; if that is impossible the report says why and still renders.
    """
    text = render_counterexample_html(
        cx,
        title=title,
        upstream=upstream,
        seed=seed,
        replay_command=replay_command,
        page_path=path,
        json_path=json_path,
        index_path=index_path,
        command_line=command_line,
        model_error=model_error,
        live_seconds=live_seconds,
    )
    return atomic_write_text(path, text)


def slug(text: str) -> str:
    """A file-name-safe form of a race or test name."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return out[:120] or "race"


def _story_lines(cx: Counterexample) -> list[dict[str, object]]:
    """The story's lines for the page: a line that starts with its step ("#17 ...") links to it."""
    out: list[dict[str, object]] = []
    for line in cx.story().lines:
        step = None
        if line.startswith("#"):
            head, _, rest = line.partition(" ")
            if head[1:].isdigit():
                step, line = int(head[1:]), rest.strip()
        out.append({"step": step, "text": line})
    return out
