"""The self-contained HTML race report of one counterexample.

Layout (Jepsen's ``timeline.clj`` turned on its side): one row per step, one
swimlane column per actor in the order actors first act, the step number and
virtual time on the left, and a ``<details>`` per step on the right holding the
objects' state diff. Everything reads without JavaScript (Jenkins' CSP blanks
JS-only pages); the inline script only adds a filter bar and lane highlighting.
Every string that comes from a model or a user goes through :func:`_e`.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..explore import Counterexample
from ..sim import VERDICTS, Record
from ._files import atomic_write_text
from ._snapshot import APISERVER, Change, StateLog, capture_states

#: timelines longer than this show only their last MAX_STEPS steps (and every earlier deviation)
MAX_STEPS = 10_000
_RECENT = 6  # steps before the violation whose objects the explanation compares


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def is_fault(r: Record) -> bool:
    """An injected fault: a ``world.choose`` whose label starts with "fault"."""
    return r.kind == "choose" and r.label.startswith("fault")


_CSS = """
:root{--fg:#1f2328;--mute:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa;--dev:#bc4c00;--devbg:#fff1e5;
--fault:#8250df;--faultbg:#fbefff;--bad:#cf222e;--badbg:#ffebe9;--ok:#1a7f37;--lane:#e8ecf0}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg);margin:0}
main{padding:20px 28px;max-width:none}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid var(--line);
 padding-bottom:4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:10px 12px;overflow:auto;
 white-space:pre}
.sub{color:var(--mute);margin:0 0 14px}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:10px 0}
.facts dt{color:var(--mute)}.facts dd{margin:0}
.violation{border:1px solid #ffcecb;background:var(--badbg);border-left:5px solid var(--bad);
 border-radius:6px;padding:10px 14px}
.violation .what{font-weight:600;color:var(--bad)}
.notice{border:1px solid #d4a72c66;background:#fff8c5;border-radius:6px;padding:8px 12px;margin:10px 0}
table{border-collapse:collapse}
table.cmp td,table.cmp th{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
table.cmp th{background:var(--soft)}
.stale{color:var(--bad);font-weight:600}.fresh{color:var(--ok)}
.legend span{display:inline-block;margin-right:16px}
.sw{display:inline-block;width:12px;height:12px;border-radius:3px;vertical-align:-1px;margin-right:4px}
.timeline-wrap{overflow:auto;border:1px solid var(--line);border-radius:6px;max-height:80vh}
table.tl{width:max-content;min-width:100%}
table.tl th{position:sticky;top:0;background:var(--soft);z-index:2;border-bottom:1px solid var(--line);
 padding:6px 8px;font-weight:600;text-align:left;font-size:12.5px;white-space:nowrap}
table.tl td{padding:2px 6px;vertical-align:top;border-bottom:1px solid #eef1f4}
table.tl td.n{white-space:nowrap;text-align:right;color:var(--mute)}
table.tl td.n a{color:inherit;text-decoration:none}
table.tl td.t{white-space:nowrap;color:var(--mute);text-align:right}
td.lane{min-width:7.5em;max-width:13em;background:linear-gradient(90deg,transparent calc(50% - 1px),
 var(--lane) calc(50% - 1px),
 var(--lane) calc(50% + 1px),transparent calc(50% + 1px))}
td.lane.on{background:none}
.act{display:block;border-radius:5px;padding:1px 6px;background:#ddf4ff;border:1px solid #54aeff66;font-size:12px;
 overflow-wrap:anywhere}
.act.timer{background:#f6f8fa;border-style:dashed;border-color:#8c959f}
.act.choose{background:#fff;border-color:#8c959f}
tr.dev .act{background:var(--devbg);border:2px solid var(--dev)}
tr.fault .act{background:var(--faultbg);border:2px solid var(--fault)}
tr.bad .act{background:var(--badbg);border:2px solid var(--bad)}
tr.dev td.n,tr.fault td.n,tr.bad td.n{font-weight:700;color:var(--fg)}
.tag{display:inline-block;font-size:11px;font-weight:700;border-radius:9px;padding:0 6px;margin-left:4px;color:#fff}
.tag.dev{background:var(--dev)}.tag.fault{background:var(--fault)}.tag.bad{background:var(--bad)}
.instead{display:block;font-size:11.5px;color:var(--dev)}
td.state{min-width:22em;max-width:44em;font-size:12.5px}
td.state summary{cursor:pointer;color:var(--mute)}
td.state summary.has{color:var(--fg)}
.chg{margin:4px 0 6px}.chg b{font-weight:600}
.chg table td{padding:0 6px;border:none;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;
 vertical-align:top}
.old{color:var(--bad)}.new{color:var(--ok)}
tr.gap td{text-align:center;color:var(--mute);font-style:italic;background:var(--soft)}
:target{outline:3px solid #0969da;outline-offset:-3px}
tr.hidden{display:none}
td.lane.hl,th.hl{background-color:#fff8c5}
#filters{display:flex;gap:14px;align-items:center;flex-wrap:wrap;margin:6px 0 10px}
#filters input[type=search]{padding:3px 8px;border:1px solid var(--line);border-radius:6px;min-width:18em}
footer{color:var(--mute);font-size:12px;margin:30px 0 10px}
"""

_JS = """
(function(){
  var tl=document.getElementById('timeline'); if(!tl) return;
  var rows=[].slice.call(tl.querySelectorAll('tbody tr[data-actor]'));
  var bar=document.createElement('div'); bar.id='filters';
  bar.innerHTML='<label><input type="checkbox" id="f-dev"> only deviations, faults and the violation</label>'+
    '<input type="search" id="f-text" placeholder="filter steps by text (actor, label, object)">'+
    '<span id="f-count"></span>';
  tl.parentNode.insertBefore(bar, tl);
  var dev=document.getElementById('f-dev'), text=document.getElementById('f-text'),
 count=document.getElementById('f-count');
  function apply(){
    var q=text.value.toLowerCase(), shown=0;
    rows.forEach(function(r){
      var ok=(!dev.checked||r.classList.contains('dev')||r.classList.contains('fault')||r.classList.contains('bad'))&&
             (!q||r.textContent.toLowerCase().indexOf(q)>=0);
      r.classList.toggle('hidden',!ok); if(ok) shown++;
    });
    count.textContent=shown+' of '+rows.length+' steps shown';
  }
  dev.addEventListener('change',apply); text.addEventListener('input',apply);
  [].slice.call(tl.querySelectorAll('th.lanehead')).forEach(function(th){
    th.style.cursor='pointer'; th.title='click to highlight this lane';
    th.addEventListener('click',function(){
      var i=th.getAttribute('data-lane'), on=!th.classList.contains('hl');
      th.classList.toggle('hl',on);
      [].slice.call(tl.querySelectorAll('td.lane[data-lane="'+i+'"]')).forEach(function(td){td.classList.toggle('hl',on);});
    });
  });
  apply();
})();
"""


def lanes_of(records: Iterable[Record]) -> list[str]:
    """Actors in the order they first act: one swimlane each."""
    seen: dict[str, None] = {}
    for r in records:
        seen.setdefault(r.actor, None)
    return list(seen)


def _visible(records: list[Record]) -> tuple[list[Record], int]:
    """The records the timeline shows and how many it leaves out (0 below the cap)."""
    if len(records) <= MAX_STEPS:
        return records, 0
    cut = len(records) - MAX_STEPS
    early = [r for r in records[:cut] if r.choice or is_fault(r)]
    return early + records[cut:], cut - len(early)


def _change_html(c: Change) -> str:
    where = "apiserver" if c.where.startswith(APISERVER) else f"cache of {c.where}"
    head = f"<b>{_e(c.ref)}</b> {c.what} in {_e(where)}"
    if c.after is None:
        return f'<div class="chg">{head}</div>'
    rows = []
    for path, old, new in c.fields():
        o = "" if old is None else f'<span class="old">{_e(old)}</span>'
        n = "<i>(removed)</i>" if new is None else f'<span class="new">{_e(new)}</span>'
        arrow = " → " if old is not None else ""
        rows.append(f"<tr><td>{_e(path)}</td><td>{o}{arrow}{n}</td></tr>")
    return f'<div class="chg">{head}<table>{"".join(rows)}</table></div>'


def _summary_of(changes: list[Change]) -> str:
    parts = []
    for c in changes[:3]:
        where = "api" if c.where.startswith(APISERVER) else "cache"
        rv = (c.after or c.before or {}).get("resourceVersion", "?")
        parts.append(f"{where}: {c.ref} {c.what} rv={rv}")
    more = f" (+{len(changes) - 3} more)" if len(changes) > 3 else ""
    return "; ".join(parts) + more


def _step_row(r: Record, lanes: dict[str, int], n_lanes: int, state: StateLog, violation_step: int) -> str:
    classes = []
    tags = ""
    if r.choice:
        classes.append("dev")
        tags += f'<span class="tag dev" title="deviation">choice {r.choice} of {r.enabled}</span>'
    if is_fault(r):
        classes.append("fault")
        tags += '<span class="tag fault">fault</span>' if r.choice else ""
    if r.step == violation_step:
        classes.append("bad")
        tags += '<span class="tag bad">violation</span>'
    lane = lanes[r.actor]
    # the key is shown when the label does not already name it
    shown_key = r.key if r.key and r.key.split(" ", 1)[-1] not in r.label else None
    where = f" [{_e(shown_key)}{f' rv={r.rv}' if r.rv is not None else ''}]" if shown_key else ""
    instead = f'<span class="instead">instead of: {_e(r.instead)}</span>' if r.choice and r.instead else ""
    act = f'<span class="act {_e(r.kind)}">{_e(r.label)}{where}{tags}{instead}</span>'
    cells = []
    for i in range(n_lanes):
        if i == lane:
            cells.append(f'<td class="lane on" data-lane="{i}">{act}</td>')
        else:
            cells.append(f'<td class="lane" data-lane="{i}"></td>')
    changes = state.changes.get(r.step, [])
    body = [f'<div class="mono">{_e(r.describe())}</div>']
    if r.kind == "choose":
        body.append(f"<div>a non-scheduling choice: option {r.choice} of {r.enabled} (0 = the default, no fault)</div>")
    elif r.enabled > 1:
        canon = "the canonical action" if not r.choice else f"a deviation; the canonical action was '{_e(r.instead)}'"
        body.append(f"<div>{r.enabled} actions were enabled; this was {canon}.</div>")
    body.extend(_change_html(c) for c in changes)
    if not changes and state.available:
        body.append("<div>no object changed</div>")
    summ = _e(_summary_of(changes)) if changes else "no object change" if state.available else "details"
    cls = ' class="has"' if changes else ""
    detail = f"<details><summary{cls}>{summ}</summary>{''.join(body)}</details>"
    return (
        f'<tr id="step-{r.step}" class="{" ".join(classes)}" data-actor="{_e(r.actor)}">'
        f'<td class="n"><a href="#step-{r.step}">{r.step}</a></td><td class="t">{r.time:.3f}</td>'
        f'{"".join(cells)}<td class="state">{detail}</td></tr>'
    )


def _named_refs(cx: Counterexample, state: StateLog) -> list[str]:
    """Objects named in the violation message, else those touched in the last steps."""
    every = {ref for store in state.final.values() for ref in store}
    msg = cx.violation.message
    named = [ref for ref in sorted(every) if ref in msg or ref.split(" ", 1)[1] in msg]
    if named:
        return named
    recent: list[str] = []
    for r in list(cx.trace)[-_RECENT:]:
        if r.key and r.key in every and r.key not in recent:
            recent.append(r.key)
    for step in sorted(state.changes)[-_RECENT:]:
        for c in state.changes[step]:
            if c.ref not in recent:
                recent.append(c.ref)
    return recent[:8]


def _comparison(cx: Counterexample, state: StateLog) -> str:
    if not state.available:
        return f'<p class="notice">{_e(state.note)}</p>' if state.note else ""
    refs = _named_refs(cx, state)
    if not refs:
        return ""
    apis = [w for w in state.final if w.startswith(APISERVER)]
    kinds = {ref.split(" ", 1)[0] for ref in refs}
    infs = [w for w in state.final if w not in apis and state.informers.get(w) in kinds]
    head = "".join(f"<th>{_e(w)}</th>" for w in apis) + "".join(f"<th>cache of {_e(w)}</th>" for w in infs)
    rows = []
    for ref in refs:
        kind = ref.split(" ", 1)[0]
        server_rv = next((state.final[a][ref][0] for a in apis if ref in state.final[a]), None)
        cells = []
        for a in apis:
            got = state.final[a].get(ref)
            cells.append(f"<td>{'absent' if got is None else f'rv={got[0]}'}</td>")
        for w in infs:
            if state.informers.get(w) != kind:
                cells.append("<td>—</td>")
                continue
            got = state.final[w].get(ref)
            if got is None:
                cls, text = ("fresh", "absent") if server_rv is None else ("stale", "absent (not yet delivered)")
            elif server_rv is None:
                cls, text = "stale", f"rv={got[0]} (deleted on the apiserver)"
            elif got[0] != server_rv:
                cls, text = "stale", f"rv={got[0]} (stale: apiserver has rv={server_rv})"
            else:
                cls, text = "fresh", f"rv={got[0]} (up to date)"
            cells.append(f'<td class="{cls}">{_e(text)}</td>')
        rows.append(f"<tr><th>{_e(ref)}</th>{''.join(cells)}</tr>")
    return (
        "<p>When the run stopped, the apiserver held and each informer cache showed:</p>"
        f'<table class="cmp"><tr><th>object</th>{head}</tr>{"".join(rows)}</table>'
    )


def render_counterexample_html(
    cx: Counterexample,
    *,
    title: str,
    upstream: str = "",
    seed: int | None = None,
    replay_command: str | None = None,
    state: StateLog | None = None,
) -> str:
    """The report as a string; :func:`write_counterexample_html` writes it."""
    if state is None:
        state = capture_states(cx)
    records = list(cx.trace)
    shown, omitted = _visible(records)
    lane_names = lanes_of(records)
    lanes = {name: i for i, name in enumerate(lane_names)}
    v = cx.violation
    seed = cx.seed if seed is None else seed
    replay = replay_command or cx.replay_command()
    violation_step = v.step if any(r.step == v.step for r in records) else (records[-1].step if records else -1)
    faults = sum(1 for r in records if is_fault(r) and r.choice)
    parts: list[str] = []
    add = parts.append
    add(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)} — race report</title>')
    add('<meta name="viewport" content="width=device-width, initial-scale=1">')
    add(f"<style>{_CSS}</style></head><body><main>")
    add(f"<h1>{_e(title)}</h1>")
    sub = [f"scenario <code>{_e(cx.scenario)}</code>"]
    if upstream:
        sub.append(f"upstream: {_e(upstream)}")
    add(f'<p class="sub">{" · ".join(sub)}</p>')
    # --- the violation, in words
    at = f'<a href="#step-{violation_step}">step {v.step}</a>'
    who = f", in actor <code>{_e(v.actor)}</code>" if v.actor else ""
    add('<h2 id="violation">What went wrong</h2><div class="violation">')
    add(f'<div class="what">{_e(VERDICTS.get(v.kind, v.kind))}: {_e(v.name)}</div>')
    add(f"<p>{_e(v.message)}</p>")
    add(f"<p>Detected at {at}, virtual time t={v.time:.3f} s{who}.</p></div>")
    add(_comparison(cx, state))
    # --- facts
    minimal = {True: "yes (exhaustive search found no run with fewer deviations)", False: "no", None: "not checked"}
    add('<h2 id="reproduce">Reproduce</h2><dl class="facts">')
    add(f"<dt>seed</dt><dd><code>{_e(seed)}</code></dd>")
    add(f"<dt>strategy</dt><dd><code>{_e(cx.strategy or '—')}</code></dd>")
    add(f"<dt>deviations</dt><dd>{cx.deviations} (faults injected: {faults})</dd>")
    add(f"<dt>steps</dt><dd>{cx.steps} ({len(records)} trace records)</dd>")
    add(f"<dt>minimal</dt><dd>{_e(minimal.get(cx.proved_minimal, str(cx.proved_minimal)))}</dd>")
    add(f"<dt>choices</dt><dd><code>{_e(cx.choices)}</code></dd>")
    add(f"<dt>trace digest</dt><dd><code>{_e(cx.digest())}</code></dd>")
    add(f"<dt>replay</dt><dd><code>{_e(replay)}</code></dd></dl>")
    add("<p>The minimal step program (every deviation with its neighbours):</p>")
    add(f"<pre>{_e(cx.program())}</pre>")
    # --- timeline
    add('<h2 id="timeline-head">Timeline</h2>')
    add(
        '<p class="legend"><span><i class="sw" style="background:var(--devbg);border:2px solid var(--dev)"></i>'
        "deviation from the canonical order</span>"
        '<span><i class="sw" style="background:var(--faultbg);border:2px solid var(--fault)"></i>injected fault</span>'
        '<span><i class="sw" style="background:var(--badbg);border:2px solid var(--bad)"></i>violation detected</span>'
        '<span><i class="sw" style="background:#f6f8fa;border:1px dashed #8c959f"></i>timer</span>'
        "<span>open a step's details (right) for the objects it changed</span></p>"
    )
    if omitted:
        add(
            f'<p class="notice" id="cap-notice">This trace has {len(records):,} records; the timeline is capped at '
            f"{MAX_STEPS:,} steps and shows the last {MAX_STEPS:,} plus every earlier deviation and fault "
            f"({omitted:,} canonical steps left out). The JSON trace has every step.</p>"
        )
    add('<div class="timeline-wrap"><table class="tl" id="timeline"><thead><tr><th>step</th><th>t (s)</th>')
    for i, name in enumerate(lane_names):
        add(f'<th class="lanehead" data-lane="{i}">{_e(name)}</th>')
    add("<th>objects (open a step)</th></tr></thead><tbody>")
    prev: Record | None = None
    index = {r.step: i for i, r in enumerate(records)}
    for r in shown:
        if prev is not None and index[r.step] > index[prev.step] + 1:
            gap = index[r.step] - index[prev.step] - 1
            add(f'<tr class="gap"><td colspan="{len(lane_names) + 3}">… {gap:,} canonical steps not shown …</td></tr>')
        add(_step_row(r, lanes, len(lane_names), state, violation_step))
        prev = r
    add("</tbody></table></div>")
    add(
        f"<footer>race-harness report · {len(lane_names)} swimlanes · written without external assets; "
        "JavaScript only adds filtering.</footer>"
    )
    add(f"</main><script>{_JS}</script></body></html>\n")
    return "".join(parts)


def write_counterexample_html(
    cx: Counterexample,
    path: str | os.PathLike[str],
    *,
    title: str,
    upstream: str = "",
    seed: int | None = None,
    replay_command: str | None = None,
) -> Path:
    """Write the self-contained HTML report of ``cx`` to ``path`` (atomically) and return it.

    The counterexample is replayed once with an observer to show the objects'
    state per step; if that is impossible the report says why and still renders.
    """
    text = render_counterexample_html(cx, title=title, upstream=upstream, seed=seed, replay_command=replay_command)
    return atomic_write_text(path, text)


def slug(text: str) -> str:
    """A file-name-safe form of a race or test name."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return out[:120] or "race"
