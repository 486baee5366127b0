"""``python -m harness``: list the registered races, hunt them or any scenario, replay a trace, run one live.

A TARGET is a registered race (``python -m harness list``) or a scenario named
``package.module:function`` or ``path/to/file.py:function`` (a RaceMachine class
too), marked with ``@harness.scenario``; ``--param NAME=VALUE`` passes its
keyword arguments (VALUE is JSON when it parses, else a string).

Exit codes, the same for every command::

    0    the outcome is what was asked for: every buggy variant found, every fixed
         variant clean (known-open cases excepted); a replay that reproduced its trace
    1    it is not (or a replay diverged, or the reports could not be written)
    2    bad usage or a bad input file; nothing was searched
    130  interrupted (Ctrl-C): what was found is saved first; a second Ctrl-C stops at once
    143  terminated (SIGTERM): as 130
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ._errors import HarnessError, ReplayDivergence, TraceFileError, UsageError
from ._interrupt import EXIT_INTERRUPTED, exit_status, sigint_requests_stop, stop_requested, stop_signal_name
from ._options import FAULT_KINDS
from ._terminal import printable

PROG = "python -m harness"

_TARGET_FORMS = "a race name (see 'list'), package.module:function or path/to/file.py:function"

_EXIT_CODES = {
    "hunt": (
        "exit codes:\n"
        "  0    every search ended as its variant promises: buggy found, fixed clean (known-open cases\n"
        "       excepted and listed); a scenario hunted without --variant promises nothing\n"
        "  1    some search did not, or a report file could not be written (the finding is printed)\n"
        "  2    bad usage: unknown race or scenario, bad --param, --budget, --strategy or --report-dir, or a\n"
        "       --cluster that cannot be reached\n"
        "  130  interrupted: the counterexamples found so far and the index are written first\n"
        "  143  SIGTERM (timeout, kill, a cancelled CI job): as 130, the summary and --json lines printed too"
    ),
    "replay": (
        "exit codes:\n"
        "  0    the replay reproduced the trace (same steps, same violation)\n"
        "  1    the replay diverged: the scenario changed since the trace was written\n"
        "  2    bad usage or a bad trace file (missing, not a trace, edited or damaged, or naming a\n"
        "       scenario not marked with @harness.scenario)\n"
        "  130  interrupted"
    ),
    "live": (
        "exit codes (as 'hunt'):\n"
        "  0    the runs ended as the variant promises: buggy failed at least once, fixed never did;\n"
        "       a scenario run without --variant promises nothing\n"
        "  1    they did not\n"
        "  2    bad usage\n"
        "  130  interrupted"
    ),
    "list": "exit codes:\n  0    listed\n  2    bad usage",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _parser() -> _Parser:
    from . import __version__

    raw = argparse.RawDescriptionHelpFormatter
    p = _Parser(
        prog=PROG,
        description="Reproduce, find and explain controller races.",
        epilog=(
            "TARGET: " + _TARGET_FORMS + ".\n\n" + "exit codes: 0 as asked, 1 not (see each command's --help), "
            "2 bad usage or input, 130 interrupted"
        ),
        formatter_class=raw,
    )
    p.add_argument("--version", action="version", version=f"race-harness {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser(
        "list", help="the registered races, one per line, with their upstream reference",
        epilog=_EXIT_CODES["list"], formatter_class=raw,
    )

    h = sub.add_parser(
        "hunt", help="hunt races (all registered ones by default) or your scenario; write reports/",
        description="Search each TARGET for a violation, shrink it, prove it minimal, and write a replayable "
        "JSON trace, an HTML page per counterexample and index.html.",
        epilog=f"TARGET: {_TARGET_FORMS}.\n\n{_EXIT_CODES['hunt']}", formatter_class=raw,
    )
    h.add_argument("targets", nargs="*", metavar="TARGET", help="default: every registered race")
    h.add_argument(
        "--variant", choices=("buggy", "fixed", "both"), default=None,
        help="fixed=False, fixed=True or both (default: both for a race, the scenario as is otherwise)",
    )
    h.add_argument(
        "--expect", choices=("violation", "clean"), default=None,
        help="what the run promises: a violation (a buggy variant, a positive control) or clean (a fixed variant, a "
        "negative control); default: violation for --variant buggy, clean for --variant fixed, nothing otherwise",
    )
    _add_param(h)
    h.add_argument("--strategy", default=None, help="portfolio, random, pct[:DEPTH], hypothesis, exhaustive[:K], "
                   "canonical (default: per race)")
    h.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    h.add_argument(
        "--faults",
        default=None,
        metavar="KINDS",
        help="fault kinds the search may place: all, none, default (each component's own flags) or e.g. "
        "crash,watch_drop; without it, each registered race's own choice (README's races table) "
        f"(kinds: {', '.join(FAULT_KINDS)})",
    )
    h.add_argument("--budget", default=None, help="RUNS (e.g. 500) or SECONDSs (e.g. 30s); default: per race")
    h.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    h.add_argument("--report-dir", default="reports", metavar="DIR", help="where traces and HTML go (default reports/)")
    h.add_argument(
        "--cluster", default=None, metavar="ADDRESS",
        help="search on a Dask cluster: tcp://HOST:PORT (a running `dask scheduler`) or local:N (N worker "
        "processes here); needs pip install 'race-harness[cluster]'",
    )
    h.add_argument(
        "--shards", type=int, default=None, metavar="N",
        help="with --cluster: shards per search, each a Dask task with its own derived seed (default 4); "
        "the same N gives the same shards on any number of workers",
    )

    lv = sub.add_parser(
        "live",
        help="re-run a race as a plain Trio program (real scheduler, real clock), the way pytest-repeat would",
        description="Run TARGET as an ordinary Trio program -- Trio's own scheduling, real (scaled) sleeps with "
        "jitter, no harness control -- again and again, as a user without the harness would.",
        epilog=f"TARGET: {_TARGET_FORMS}.\n\n{_EXIT_CODES['live']}", formatter_class=raw,
    )
    lv.add_argument("target", metavar="TARGET")
    lv.add_argument(
        "--variant", choices=("buggy", "fixed"), default=None,
        help="fixed=False or fixed=True (default: buggy for a race, the scenario as is otherwise)",
    )
    _add_param(lv)
    lv.add_argument("--runs", type=int, default=100, help="stop after N runs (default 100)")
    lv.add_argument("--seconds", type=float, default=None, help="stop after this many wall seconds")
    lv.add_argument(
        "--time-scale", type=float, default=0.01, metavar="S", help="real seconds per virtual second (default 0.01)"
    )
    lv.add_argument("--jitter", type=float, default=0.2, help="relative jitter of every sleep and timer (default 0.2)")
    lv.add_argument("--timeout", type=float, default=60.0, help="real seconds one run may take (default 60)")
    lv.add_argument("--seed", type=int, default=0, help="jitter seed of the first run (run i uses SEED+i)")
    lv.add_argument("--json", action="store_true", help="print one JSON object instead of sentences")

    r = sub.add_parser(
        "replay", help="replay a saved counterexample (or a scenario's choices) and print its steps",
        description="Replay the trace FILE written by 'hunt' (or Counterexample.save) and check that it takes the "
        "same steps to the same violation; or run SCENARIO under --choices (default: the canonical order).",
        epilog=_EXIT_CODES["replay"], formatter_class=raw,
    )
    r.add_argument("file", metavar="FILE|SCENARIO")
    _add_param(r, "only with SCENARIO")
    r.add_argument(
        "--choices", default=None, metavar="C,C,...",
        help="only with SCENARIO: the positional choices to replay, e.g. 0,1,0,2 (default: none, the canonical order)",
    )
    r.add_argument("--json", action="store_true", help='print {"violation", "steps", "deviations", "digest"}')
    r.add_argument(
        "--story", action="store_true",
        help="print the counterexample's story (at most 15 lines: the deviations, the Kubernetes events that lead "
        "to the violation, and its virtual time) instead of every step",
    )
    return p


def _add_param(p: argparse.ArgumentParser, note: str = "") -> None:
    p.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="a keyword argument of the scenario, repeatable; VALUE is JSON when it parses (3, true, \"x\", [1,2]), "
        "else a string" + (f" ({note})" if note else ""),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI's entry point: returns the exit code (argparse exits on its own for --help and bad options)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "hunt":
            return _hunt(args)
        if args.command == "replay":
            return _replay(args)
        if args.command == "live":
            return _live(args)
        parser.print_help()
        return 2
    except (UsageError, TraceFileError) as exc:
        print(f"{PROG} {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except ReplayDivergence as exc:
        print(f"{PROG} replay: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG} {args.command}: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if not _caused_by_interrupt(exc):
            raise
        # Ctrl-C inside trio.run can surface wrapped (TrioInternalError): still an interrupt, not a crash
        print(f"{PROG} {args.command}: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return True
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return False


def _one_line(exc: BaseException) -> str:
    """An error in one line, with any control character from a trace file escaped (see harness/_terminal.py)."""
    return printable(" ".join(str(exc).split()))


def _registered() -> dict[str, Any]:
    """The registered races, found through their entry points as a user's own package's are."""
    from .explore import registered_races

    return registered_races()


def _list() -> int:
    registry = _registered()
    width = max((len(n) for n in registry), default=10)
    for name, race in registry.items():
        tag = "  [known open]" if race.known_open else ""
        print(f"{name:<{width}}  {race.upstream}  {race.title}{tag}")
    return 0


# ----------------------------------------------------------------------------- targets
@dataclass
class _Target:
    """One TARGET of the command line, resolved: what to run and what its variants promise."""

    name: str
    scenario: Callable[..., Any]
    params: dict[str, Any]
    variants: list[str]  # "buggy", "fixed", or "" (the scenario as is: no promise)
    race: Any = None  # a harness.Race for a registered race
    title: str = ""
    upstream: str = ""
    known_open: bool = False
    budget: int | None = None
    strategy: str | None = None
    faults: str | None = None  # a registered race's own fault kinds
    params_by_variant: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: what each variant's search promises: "violation", "clean" or None (nothing)
    expect_by_variant: dict[str, str | None] = field(default_factory=dict)
    #: the --param values given on the command line, shown with every result
    given: dict[str, Any] = field(default_factory=dict)


def _resolve_targets(
    names: Sequence[str], variant: str | None, param_items: Sequence[str], *, live: bool, expect: str | None = None
) -> list[_Target]:
    """Resolve every TARGET before anything runs: a typo is exit 2, never a half-done hunt."""
    from .explore._scenarios import check_params, parse_params, raw_params, resolve

    params = parse_params(param_items)
    typed = raw_params(param_items)
    if "fixed" in params and variant is not None:
        raise UsageError("give either --variant or --param fixed=..., not both")
    targets = []
    for name in names:
        if ":" not in name:
            registry = _registered()
            race = registry.get(name)
            if race is None:
                raise UsageError(
                    f"unknown race {name!r}; choose from: {', '.join(registry)} -- or name a scenario as "
                    "package.module:function or path/to/file.py:function"
                )
            variants = (["buggy"] if live else ["buggy", "fixed"]) if variant in (None, "both") else [variant]
            if "fixed" in params:
                variants = ["fixed" if params["fixed"] else "buggy"]
            t = _Target(
                name, race.scenario, {**race.params, **params}, variants, race, race.title, race.upstream,
                race.known_open, race.budget, race.strategy, race.faults,
            )
        else:
            fn = resolve(name, error=UsageError, source="the command line")
            variants = [""] if variant is None else ["buggy", "fixed"] if variant == "both" else [variant]
            t = _Target(name, fn, dict(params), variants)
        t.params = check_params(t.scenario, t.params, name, typed)
        t.given = {k: t.params[k] for k in params}
        for v in t.variants:
            p = dict(t.params) if not v else {**t.params, "fixed": v == "fixed"}
            if v and t.race is None:
                try:
                    check_params(t.scenario, p, name)
                except UsageError as exc:
                    raise UsageError(f"{exc}; --variant {v} means --param fixed={str(v == 'fixed').lower()}") from None
            t.params_by_variant[v] = p
            promise = "violation" if v == "buggy" else "clean" if v == "fixed" else None
            if t.known_open and v == "fixed":
                promise = "violation"  # the upstream fix still fails: listed, not hidden
            t.expect_by_variant[v] = expect or promise
        targets.append(t)
    return targets


def _label(t: _Target, variant: str) -> str:
    shown = f"{t.name} [{_fmt_given(t.given)}]" if t.given else t.name
    return f"{shown} ({variant})" if variant else shown


def _fmt_given(params: dict[str, Any]) -> str:
    """``drops=false, name=web``: the --param values as they are typed."""
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in params.items())


# ----------------------------------------------------------------------------- hunt
def _check_report_dir(text: str) -> Path:
    """The report folder exists or can be made, is a folder and is writable -- checked before any search."""
    from .report import ensure_report_dir

    fix = "name a folder you can write to (it is created if missing), e.g. --report-dir reports"
    if not text.strip():
        raise UsageError(f"--report-dir is empty; {fix}")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--report-dir {text}: is a file, not a folder; {fix}")
    try:
        ensure_report_dir(path)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".race-harness-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"--report-dir {text}: cannot be written ({exc.strerror or exc}); {fix}") from None
    return path


@dataclass
class _Kept:
    """What a hunt wrote so far, for the line an interrupt prints."""

    traces: list[str] = field(default_factory=list)
    unproved: list[str] = field(default_factory=list)
    index: str | None = None
    searches: int = 0


def _hunt(args: argparse.Namespace) -> int:
    kept = _Kept()

    def second() -> str:
        where = f"; the index {kept.index}" if kept.index else ""
        return (
            f"interrupted again: stopped at once; kept {_n(len(kept.traces), 'counterexample')} "
            f"({', '.join(kept.traces) or 'none'}){where}; no written file is half-written"
        )

    with sigint_requests_stop(second):
        return _hunt_checked(args, kept)


def _hunt_checked(args: argparse.Namespace, kept: _Kept) -> int:
    from ._options import parse_fault_spec, parse_strategy
    from .explore import Budget

    budget = Budget.parse(args.budget) if args.budget is not None else None
    if args.strategy is not None:
        parse_strategy(args.strategy)
    if args.faults is not None:
        parse_fault_spec(args.faults)  # checked before anything runs; explore() takes the text as it is
    cluster = _check_cluster(args)
    names = list(args.targets) or list(_registered())
    if not names:
        raise UsageError(
            "no races are registered: install the project (pip install -e .) so the race_harness.races entry "
            "points are read, or name a scenario as package.module:function or path/to/file.py:function"
        )
    targets = _resolve_targets(names, args.variant, args.param, live=False, expect=args.expect)
    out_dir = _check_report_dir(args.report_dir)
    if cluster is not None:
        return _hunt_on_cluster(args, cluster, targets, budget, out_dir, kept)

    console = None
    if not args.json:
        from rich.console import Console

        # piped or in CI: rich would assume 80 columns and truncate race names
        console = Console() if sys.stdout.isatty() else Console(width=130)
    live = _LiveProgress(console) if console is not None and console.is_terminal else None
    entries: list[Any] = []
    interrupted = False
    write_failed = False
    for t in targets:
        for variant in t.variants:
            if stop_requested():
                interrupted = True
                break
            entry, failed = _hunt_one(t, variant, args, budget, out_dir, console, live, kept)
            entries.append(entry)
            kept.searches += 1
            write_failed = write_failed or failed
            if entry.verdict == "interrupted":
                interrupted = True
                break
        if interrupted:
            break
    return _hunt_end(args, targets, entries, out_dir, console, kept, interrupted, write_failed)


def _hunt_end(
    args: argparse.Namespace, targets: list[_Target], entries: list[Any], out_dir: Path, console: Any, kept: _Kept,
    interrupted: bool, write_failed: bool,
) -> int:
    """The index, the summary and the exit code of a hunt, in process or on a cluster."""
    planned = sum(len(t.variants) for t in targets)
    interrupted = interrupted or stop_requested()
    try:
        from .report import write_index

        kept.index = str(write_index(entries, out_dir))
    except OSError as exc:
        write_failed = True
        print(f"error: could not write {out_dir / 'index.html'} ({exc.strerror or exc})", file=sys.stderr)
    if console is not None:
        from .report import render_summary

        render_summary(entries, console)
        for e in entries:
            if e.known_open and e.found and e.variant == "fixed":
                console.print(f"known open upstream: {e.name} still fails with the upstream fix, as documented",
                              markup=False)
        if kept.index:
            console.print(f"report: {kept.index}", markup=False, highlight=False)
    if interrupted:
        unproved = ""
        if kept.unproved:
            some = "" if len(kept.traces) == 1 else f"{len(kept.unproved)} of them "
            unproved = f", {some}not proved minimal (interrupted)"
        print(
            f"interrupted{' by SIGTERM' if stop_signal_name() == 'SIGTERM' else ''}: "
            f"kept {_n(len(kept.traces), 'counterexample')}"
            f"{' (' + ', '.join(kept.traces) + ')' if kept.traces else ''}{unproved}; "
            + (f"the index of {_n(len(entries), 'search', 'searches')} of {planned} is {kept.index}"
               if kept.index else "no index could be written"),
            file=sys.stderr,
        )
        return exit_status()
    ok = all(e.expected for e in entries) and len(entries) == planned and not write_failed
    return 0 if ok else 1


def _run_budget(t: _Target, budget: Any) -> Any:
    """The hunt's --budget, else the race's own, else explore()'s default."""
    from .explore import Budget

    return budget or (Budget(runs=t.budget) if t.budget else Budget())


def _hunt_one(
    t: _Target, variant: str, args: argparse.Namespace, budget: Any, out_dir: Path, console: Any, live: Any, kept: _Kept,
    result: Any = None,
) -> tuple[Any, bool]:
    """One search (or the ``result`` a cluster sent back), its files and its output line;
    (report entry, a file could not be written)."""
    from .explore import explore
    from .report import ReportEntry, slug, write_counterexample_html

    label = _label(t, variant)
    if result is None:
        run_budget = _run_budget(t, budget)
        hook = live.start(label, run_budget.runs) if live is not None else None
        strategy = args.strategy or t.strategy
        options: dict[str, Any] = {"strategy": strategy} if strategy else {}  # else explore()'s default
        try:
            result = explore(
                t.scenario,
                **options,
                budget=run_budget,
                seed=args.seed,
                progress=hook,
                faults=_faults_for(args, t),
                **t.params_by_variant[variant],
            )
        finally:
            if live is not None:
                live.stop()
    cx = result.counterexample
    json_path = html_path = None
    failed = False
    unproved = cx is not None and result.verdict == "interrupted" and cx.proved_minimal is not True
    if cx is not None:
        stem = slug(t.name.replace(".py:", "-").replace(":", "-").replace(".", "_") + (f"-{variant}" if variant else ""))
        json_file, html_file = out_dir / f"{stem}.json", out_dir / f"{stem}.html"
        cx.meta.update(race=t.name, variant=variant, known_open=t.known_open, upstream=t.upstream,
                       report=html_file.name)  # the page beside the trace
        if unproved:
            cx.meta["minimality"] = "not proved minimal (interrupted)"
        _copy_scenario_file(cx, out_dir / f"{stem}.py", label)
        try:
            cx.save(json_file)
            json_path = str(json_file)
            kept.traces.append(json_path)
            if unproved:
                kept.unproved.append(json_path)
        except UsageError as exc:  # a scenario no file can name (defined in `python -c`)
            failed = True
            print(f"error: {label}: {_one_line(exc)}", file=sys.stderr)
            _print_facts(cx, label)
        except OSError as exc:
            failed = True
            print(f"error: could not write {json_file} ({exc.strerror or exc}).", file=sys.stderr)
            _print_facts(cx, label)
        if json_path is not None:
            try:
                write_counterexample_html(
                    cx,
                    html_file,
                    title=f"{label}: {t.title}" if t.title else label,
                    upstream=t.upstream,
                    seed=args.seed,
                    json_path=json_path,
                    index_path=out_dir / "index.html",
                )
                html_path = str(html_file)
            except Exception as exc:
                print(f"warning: could not write the HTML report for {label}: {_one_line(exc)}", file=sys.stderr)
    expect = t.expect_by_variant.get(variant)
    broken = _model_error(cx, t.params_by_variant[variant], expect) if cx is not None else None
    entry = ReportEntry(
        name=t.name,
        variant=variant,
        verdict="model-error" if broken else result.verdict,
        outcome=f"{broken}; {result.outcome}" if broken else result.outcome,
        found=cx is not None and broken is None,
        runs=result.runs,
        seconds=result.seconds,
        deviations=cx.deviations if cx else None,
        steps=cx.steps if cx else None,
        upstream=t.upstream,
        known_open=t.known_open,
        json_path=json_path,
        html_path=html_path,
        seed=args.seed,
        expect=expect,
        params=dict(t.given),
        violation_kind=cx.violation.kind if cx is not None else None,
        found_at_run=result.first_found_run,
        found_after_s=result.first_found_seconds,
        shrink_runs=result.shrink_runs,
        proof_runs=result.proof_runs,
        model_error=broken,
    )
    outcome = entry.outcome
    if unproved and "not proved minimal" not in outcome:
        outcome += "; not proved minimal (interrupted)"
    if args.json:
        print(json.dumps(_json_line(entry, cx)), flush=True)
    elif console is not None:
        if result.verdict == "interrupted":
            mark = "interrupted"
        elif broken:
            mark = "MODEL ERROR"
        elif expect is None:
            mark = "found" if cx is not None else "clean"
        else:
            mark = "ok" if entry.expected else "UNEXPECTED"
        console.print(f"[{mark}] {printable(label)}: {printable(outcome)}", markup=False, highlight=False,
                      soft_wrap=True)
        if cx is not None and result.verdict != "interrupted" and not broken:
            for line in cx.story().lines:  # the story under each counterexample: what Kubernetes did
                console.print(printable(f"    {line}"), markup=False, highlight=False, soft_wrap=True)
    return entry, failed


def _model_error(cx: Any, params: dict[str, Any], expect: str | None) -> str | None:
    """A broken model, not the race: the scenario's own actor raised, or both variants raise alike under one plan."""
    from ._verdicts import both_variants_raise, model_error

    own = model_error(cx.violation)
    if own is not None:
        return f"model error: {own}"
    if expect == "violation":  # the variant that should fail: does the other one fail the same way?
        return both_variants_raise(cx, params)
    return None


def _copy_scenario_file(cx: Any, copy: Path, label: str) -> None:
    """A file-based scenario is copied next to its trace, which then names the copy and its SHA-256.

    The report folder is then self-contained: copied elsewhere (a CI artifact),
    its traces still replay, and a replay runs exactly the file that was hunted
    (the trace's checksum covers the copy's SHA-256). A scenario of an installed
    module or a registered race is named by its module, as before.
    """
    import hashlib

    from .explore._counterexample import _NAMED, resolve_scenario
    from .explore._scenarios import is_file_ref
    from .report import atomic_write_text

    where, _, qualname = cx.scenario.rpartition(":")
    if not is_file_ref(where):
        return
    try:
        text = Path(where).read_bytes().decode("utf-8")
        atomic_write_text(copy, text)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"warning: could not copy {where} next to the trace of {label} ({_one_line(exc)}); the trace names "
              "the original file", file=sys.stderr)
        return
    ref = f"{copy.resolve().as_posix()}:{qualname}"
    _NAMED[ref] = resolve_scenario(cx.scenario)  # this process keeps running the function it already loaded
    cx.scenario = ref
    cx.scenario_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()


# ----------------------------------------------------------------------------- hunt --cluster
def _check_cluster(args: argparse.Namespace) -> Any:
    """--cluster and --shards checked with the other options, before any target is imported or searched."""
    if args.cluster is None:
        if args.shards is not None:
            raise UsageError("--shards goes with --cluster (e.g. --cluster local:2 --shards 8); leave it out otherwise")
        return None
    if args.shards is not None and args.shards < 1:
        raise UsageError(f"--shards {args.shards} is not valid: use a whole number >= 1, e.g. --shards 8")
    from ._cluster import parse_cluster

    return parse_cluster(args.cluster)


def _hunt_on_cluster(
    args: argparse.Namespace, spec: Any, targets: list[_Target], budget: Any, out_dir: Path, kept: _Kept
) -> int:
    """The searches as Dask shards (harness/_cluster.py); the files, lines and index as in process."""
    from ._cluster import ClusterHunt, Search, open_cluster
    from ._shards import DEFAULT_SHARDS
    from .explore import scenario_ref

    console = None
    if not args.json:
        from rich.console import Console

        console = Console() if sys.stdout.isatty() else Console(width=130)
    searches, order = [], []
    for t in targets:
        for variant in t.variants:
            b = _run_budget(t, budget)
            searches.append(Search(
                _label(t, variant), scenario_ref(t.scenario), t.params_by_variant[variant], args.strategy or t.strategy,
                _faults_for(args, t), b.runs, b.seconds,
            ))
            order.append((t, variant))
    entries: list[Any] = []
    write_failed = False
    with open_cluster(spec) as client:  # an unreachable cluster is a UsageError here: exit 2, nothing searched
        shown = console if console is not None and console.is_terminal else None
        hunt = ClusterHunt(client, searches, args.seed, args.shards or DEFAULT_SHARDS, shown)
        if console is not None:
            console.print(f"cluster {spec}: {_n(hunt.workers, 'worker')}, {_n(len(hunt.shards), 'shard')} "
                          f"of {_n(len(searches), 'search', 'searches')}", markup=False, highlight=False)
        for sharded in hunt.results():
            t, variant = order[sharded.search]
            entry, failed = _hunt_one(t, variant, args, budget, out_dir, console, None, kept, result=sharded.result)
            entries.append(entry)
            kept.searches += 1
            write_failed = write_failed or failed
            if console is not None:
                for f in sharded.findings:
                    shards = ", ".join(map(str, f.shards))
                    console.print(f"    signature {f.signature}: found by {_n(len(f.shards), 'shard')} of "
                                  f"{sharded.shards} ({shards})", markup=False, highlight=False)
            for f in sharded.findings[1:]:  # another bug in the same search: its own trace, nothing lost
                if not _save_other(f.counterexample, out_dir, entry, f.signature, kept, console):
                    write_failed = True
    return _hunt_end(args, targets, entries, out_dir, console, kept, stop_requested(), write_failed)


def _save_other(cx: Any, out_dir: Path, entry: Any, sig: str, kept: _Kept, console: Any) -> bool:
    """A second distinct failure of one search (another shard's): saved beside the first, named by signature."""
    stem = Path(entry.json_path).stem if entry.json_path else "finding"
    path = out_dir / f"{stem}-{sig[:8]}.json"
    cx.meta.update(race=entry.name, variant=entry.variant, known_open=entry.known_open, upstream=entry.upstream)
    try:
        cx.save(path)
    except (OSError, UsageError) as exc:
        print(f"error: could not write {path} ({_one_line(exc)})", file=sys.stderr)
        return False
    kept.traces.append(str(path))
    if console is not None:
        console.print(printable(f"    another failure of {entry.name}: {cx.violation.describe()}; trace {path}"),
                      markup=False, highlight=False)
    return True


def _print_facts(cx: Any, label: str) -> None:
    """Everything needed to replay a counterexample that could not be saved, on stderr: nothing is lost."""
    params = " ".join(f"--param {k}={json.dumps(v)}" for k, v in cx.params.items())
    choices = ",".join(str(c) for c in cx.choices)
    print(printable(
        f"the counterexample of {label}, so that nothing is lost: scenario {cx.scenario}, params "
        f"{json.dumps(cx.params, sort_keys=True, default=repr)}, seed {cx.seed}, strategy {cx.strategy}, "
        f"choices [{choices}]; violation: {cx.violation.describe()}. Replay it with: "
        f"{PROG} replay {cx.scenario} {params} --choices {choices or '0'}".replace("  ", " ")),
        file=sys.stderr,
    )


class _LiveProgress:
    """A rich live line per search (runs explored, found yet?) on an interactive terminal only.

    Piped or in CI the hunt prints plain lines instead; the live line is transient,
    so it never mixes with the outcome line printed after it.
    """

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task: Any = None

    def start(self, description: str, total: int | None) -> Any:
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, status="searching")

        def hook(runs: int, found: bool) -> None:
            status = "found; shrinking" if found else "searching"
            self._progress.update(self._task, completed=runs, status=status)

        return hook

    def stop(self) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
            self._task = None
        self._progress.stop()


def _faults_for(args: argparse.Namespace, t: _Target) -> str | None:
    """``--faults`` when given, else the registered race's own fault kinds (None for other scenarios)."""
    return str(args.faults) if args.faults is not None else t.faults


def _json_line(e: Any, cx: Any) -> dict[str, Any]:
    return {
        "race": e.name,
        "variant": e.variant,
        "found": e.found,
        "verdict": e.verdict,
        "expected": e.expected,
        "expect": e.expect,
        "params": e.params,
        "violation_kind": e.violation_kind,
        "model_error": e.model_error,
        # time to find (search only), then what the shrink and the minimality proof took; runs/seconds: total
        "found_at_run": e.found_at_run,
        "found_after_s": None if e.found_after_s is None else round(e.found_after_s, 3),
        "shrink_runs": e.shrink_runs,
        "proof_runs": e.proof_runs,
        "runs": e.runs,
        "seconds": round(e.seconds, 3),
        "deviations": e.deviations,
        "steps": e.steps,
        "proved_minimal": None if cx is None else cx.proved_minimal,
        "trace": e.json_path,
        "report": e.html_path,
        "digest": None if cx is None else cx.digest(),
        "signature": None if cx is None else cx.signature(),
        "known_open": e.known_open,
        "proof": None if cx is None else cx.proof,
        "outcome": e.outcome,  # states the space: deviations counted, lag windows, fault kinds
    }


def _n(count: int, word: str, plural: str | None = None) -> str:
    """``1 deviation``, ``2 deviations``."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


# ----------------------------------------------------------------------------- live
def _live(args: argparse.Namespace) -> int:
    """Uncontrolled re-runs: what a user without the harness sees; exit codes as 'hunt'."""
    from .sim import repeat_live

    if args.runs < 1 or args.time_scale <= 0 or not 0 <= args.jitter < 1 or args.timeout <= 0:
        raise UsageError("use --runs >= 1, --time-scale > 0, 0 <= --jitter < 1 and --timeout > 0")
    if args.seconds is not None and args.seconds <= 0:
        raise UsageError("use --seconds > 0 (or leave it out)")
    t = _resolve_targets([args.target], args.variant, args.param, live=True)[0]
    variant = t.variants[0]
    label = _label(t, variant)
    if not args.json:
        print(
            f"{label} live: Trio's scheduler, real clock at {args.time_scale:g} s per virtual second, "
            f"±{args.jitter:.0%} jitter, no injected faults; up to {_n(args.runs, 'run')}"
            + (f" / {args.seconds:g} s" if args.seconds else ""),
            flush=True,
        )
    try:
        res = repeat_live(
            t.scenario,
            params=t.params_by_variant[variant],
            runs=args.runs,
            seconds=args.seconds,
            seed=args.seed,
            time_scale=args.time_scale,
            jitter=args.jitter,
            timeout=args.timeout,
        )
    except KeyboardInterrupt:
        print(f"{PROG} live: interrupted; live runs keep nothing (hunt {t.name} for a replayable trace)",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    v = res.failure.violation if res.failure is not None else None
    expected = res.found if variant == "buggy" or t.known_open else (not res.found) if variant == "fixed" else True
    if args.json:
        print(json.dumps({
            "race": t.name, "variant": variant, "found": res.found, "expected": expected, "runs": res.runs,
            "seconds": round(res.seconds, 3), "violation": v.describe() if v else None,
            "time_scale": args.time_scale, "jitter": args.jitter,
        }))
    else:
        print(res.outcome)
        if res.found:
            again = f" --variant {variant}" if variant else ""
            print(f"to get a minimal, replayable counterexample: {PROG} hunt {t.name}{again}")
    return 0 if expected else 1


# ----------------------------------------------------------------------------- replay
def _replay(args: argparse.Namespace) -> int:
    from .explore import Counterexample

    target = args.file
    if ":" in target and not Path(target).exists():
        return _replay_scenario(args)
    if args.param or args.choices is not None:
        raise UsageError(
            "--param and --choices go with a SCENARIO (package.module:function or path/to/file.py:function), "
            "not with a trace FILE, whose parameters and choices are fixed by its checksum"
        )
    cx = Counterexample.load(target)
    try:
        out = cx.replay(check=False, notes=True)
    except HarnessError as exc:
        if isinstance(exc, UsageError):
            raise
        raise TraceFileError(f"{target}: {_one_line(exc)}") from None
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # the scenario itself raised while it was set up
        raise TraceFileError(f"{target} could not be replayed: {type(exc).__name__}: {_one_line(exc)}") from None
    diverged = cx.divergence(out)
    if diverged is not None:
        # a replay reads as a replay: what was replayed and where it left the trace, never a search's words
        raise ReplayDivergence(f"replayed trace {target}: {diverged[1]}", step=diverged[0])
    head = f"replaying trace {target}: {cx.scenario}({_fmt({**(cx.defaults or {}), **cx.params})})"
    if getattr(args, "story", False) and not args.json:
        from .explore._story import tell

        print(printable(head))
        print(printable(tell(cx, out.trace)))
        print(printable(f"replayed trace {target}: same violation; {_n(cx.deviations, 'deviation')}, "
                        f"{_n(out.steps, 'step')}, digest {out.trace.digest()[:16]}"))
        return 0
    _print_replay(args, head, out, cx.deviations, verdict=f"replayed trace {target}: same violation")
    return 0


def _replay_scenario(args: argparse.Namespace) -> int:
    from .explore._scenarios import check_params, parse_params, raw_params, resolve
    from .sim import ReplayChooser, run_once

    fn = resolve(args.file, error=UsageError, source="the command line")
    params = check_params(fn, parse_params(args.param), args.file, raw_params(args.param))
    text = (args.choices or "").replace(" ", "")
    try:
        choices = [int(c) for c in text.split(",")] if text else []
    except ValueError:
        choices = [-1]
    if any(c < 0 for c in choices):
        raise UsageError(f"--choices {args.choices!r} is not valid: use whole numbers >= 0 separated by commas, e.g. 0,1,0,2")
    try:
        out = run_once(fn, ReplayChooser(choices), params=params)
    except KeyboardInterrupt:
        raise
    except HarnessError:
        raise
    except Exception as exc:
        raise UsageError(f"{args.file} could not be run: {type(exc).__name__}: {_one_line(exc)}") from None
    head = f"running {args.file}({_fmt(params)}) under choices [{','.join(map(str, choices))}]"
    _print_replay(args, head, out, out.deviations)
    return 0


def _print_replay(args: argparse.Namespace, head: str, out: Any, deviations: int, *, verdict: str | None = None) -> None:
    """The steps, then one closing line: ``verdict`` for a trace file ("replayed trace X: same violation")."""
    violation = out.violation.describe() if out.violation else None
    if args.json:
        doc: dict[str, Any] = {
            "violation": violation, "steps": out.steps, "deviations": deviations, "digest": out.trace.digest(),
        }
        if verdict is not None:
            doc["replayed"] = verdict
        print(json.dumps(doc))
    else:
        # a trace file is untrusted: its labels, parameters and messages never reach the terminal raw
        print(printable(head))
        print(printable(out.trace.render(notes=True)))
        print(printable(f"=> {violation or 'no violation'}"))
        tail = f"{_n(deviations, 'deviation')}, {_n(out.steps, 'step')}, digest {out.trace.digest()[:16]}"
        print(printable(f"{verdict} ({violation}); {tail}" if verdict is not None else tail))


def _fmt(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
