"""``hunt``: search each target, write its trace, page and the index, print a line per search and the summary."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import UsageError
from .._interrupt import exit_status, sigint_requests_stop, stop_requested, stop_signal_name
from .._terminal import printable
from .._verdicts import runaway_line
from ._common import PROG, _n, _one_line, _registered
from ._targets import _label, _resolve_targets, _Target


def _check_report_dir(text: str) -> Path:
    """The report folder exists or can be made, is a folder and is writable -- checked before any search."""
    from ..report import ensure_report_dir

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
        try:
            return _hunt_checked(args, kept)
        finally:  # whatever way it leaves (an exception no run caught): no operator process nor its folder stays
            from .._processes import end_all

            end_all()


def _hunt_checked(args: argparse.Namespace, kept: _Kept) -> int:
    from .._options import parse_fault_spec, parse_strategy
    from ..explore import Budget

    budget = Budget.parse(args.budget) if args.budget is not None else None
    if getattr(args, "proof_budget", 5000) < 1:
        raise UsageError(f"--proof-budget {args.proof_budget}: give the runs the minimality proof may take for each "
                         "entry, 1 or more (default 5000)")
    if getattr(args, "yield_timeout", None) is not None:
        _set_yield_timeout(args.yield_timeout)
    if isinstance(args.strategy, str):  # (hunt-test may hand over a Strategy it made)
        parse_strategy(args.strategy)
    if args.faults is not None:
        parse_fault_spec(args.faults)  # checked before anything runs; explore() takes the text as it is
    if getattr(args, "plan", None) is not None:
        args.plan_entries = _read_plan_file(args.plan)
    from ._cluster_hunt import _check_cluster, _hunt_on_cluster

    cluster = _check_cluster(args)
    names = list(args.targets) or list(_registered())
    if not names:
        from ..explore import skipped_races

        skipped = skipped_races()
        if skipped:  # installed, but their modules fail to import: say which import, not "install the project"
            raise UsageError(f"no races could be loaded: {skipped[0]}"
                             + (f" (and {len(skipped) - 1} more entry points alike)" if len(skipped) > 1 else "")
                             + ". Install what that import needs (pip install -e . installs every dependency of "
                             "the project's own races), or name a scenario as path/to/file.py:function")
        raise UsageError(
            "no races are registered: install the project (pip install -e .) so the race_harness.races entry "
            "points are read, or name a scenario as package.module:function or path/to/file.py:function"
        )
    targets = _resolve_targets(names, args.variant, args.param, live=False, expect=args.expect)
    if getattr(args, "test_command", None):  # hunt-test: named by its command, not by the scenario that runs it
        for t in targets:
            t.name, t.given = args.test_command, {}
    out_dir = _check_report_dir(args.report_dir)
    if cluster is not None:
        return _hunt_on_cluster(args, cluster, targets, budget, out_dir, kept)
    from ._cluster_hunt import _hunt_on_pool, _outside_searches

    outside = _outside_searches(args, targets)
    if outside:  # a search of OS processes: its shards on every core (harness/_pool.py)
        return _hunt_on_pool(args, outside, targets, budget, out_dir, kept)
    if args.shards is not None:  # (--workers is let be: a search in process is never split, as its help says)
        raise UsageError("--shards goes with --cluster (e.g. --cluster local:2 --shards 8) or a search whose "
                         "scenario runs OS processes (an ExternalOperator, a test command); no search here does "
                         "(they run in process, thousands of runs a second): leave it out")

    console = None
    if not args.json:
        from rich.console import Console

        # piped or in CI: rich would assume 80 columns and truncate race names
        console = Console() if sys.stdout.isatty() else Console(width=140)
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
        from ..report import write_index

        kept.index = str(write_index(entries, out_dir, planned=planned, interrupted=interrupted))
        if Path(kept.index).name != "index.html":
            print(f"note: {out_dir / 'index.html'} is not a file race-harness wrote; kept it, and wrote the index "
                  f"to {kept.index} beside it", file=sys.stderr)
    except OSError as exc:
        write_failed = True
        print(f"error: could not write {out_dir / 'index.html'} ({exc.strerror or exc})", file=sys.stderr)
    if console is not None:
        from ..report import render_summary

        render_summary(entries, console)
        for e in entries:
            if e.known_open and e.found and e.variant == "fixed":
                console.print(f"known open upstream: {e.name} still fails with the upstream fix, as documented",
                              markup=False)
        if kept.index:
            console.print(f"report: {kept.index}", markup=False, highlight=False)
    if interrupted and args.json:  # the session's own line: the rows above are not all it promised
        from ..report import interrupted_words

        print(json.dumps({"session": "interrupted", "searches": len(entries), "planned": planned,
                          "outcome": interrupted_words(len(entries), planned), "index": kept.index}), flush=True)
    if interrupted:
        unproved = ""
        if kept.unproved:
            some = "" if len(kept.traces) == 1 else f"{len(kept.unproved)} of them "
            unproved = f", {some}not proved minimal (interrupted)"
        print(
            f"interrupted{'' if stop_signal_name() == 'Ctrl-C' else ' by ' + stop_signal_name()}: "
            f"kept {_n(len(kept.traces), 'counterexample')}"
            f"{' (' + ', '.join(kept.traces) + ')' if kept.traces else ''}{unproved}; "
            + (f"the index of {_n(len(entries), 'search', 'searches')} of {planned} is {kept.index}"
               if kept.index else "no index could be written"),
            file=sys.stderr,
        )
        return exit_status()
    ok = all(e.expected for e in entries) and len(entries) == planned and not write_failed
    return 0 if ok else 1


def _run_budget(t: _Target, budget: Any, strategy: Any) -> Any:
    """The hunt's --budget, else the race's own, else explore()'s default.

    ``exhaustive`` without --budget runs to its verdict: a race's own budget and
    explore()'s default are meant for sampling, and a proof cut by them is no proof.
    """
    from ..explore import Budget

    if budget:
        return budget
    name = strategy if isinstance(strategy, str) or strategy is None else strategy.name
    if (name or "").partition(":")[0].strip() == "exhaustive":
        return Budget(runs=None)
    return Budget(runs=t.budget) if t.budget else Budget()


def _hunt_one(
    t: _Target, variant: str, args: argparse.Namespace, budget: Any, out_dir: Path, console: Any, live: Any, kept: _Kept,
    result: Any = None, shard_runner: Any = None,
) -> tuple[Any, bool]:
    """One search (or the ``result`` a cluster sent back), its files and its output line;
    (report entry, a file could not be written). ``shard_runner``: where the referee's shards run
    (``hunt --cluster`` passes a Dask one for exhaustive and canonical searches)."""
    from ..explore import explore
    from ..report import ReportEntry, free_stem, record_written, slug, write_counterexample_html

    label = _label(t, variant)
    if result is None:
        strategy = args.strategy or t.strategy
        run_budget = _run_budget(t, budget, strategy)
        hook = live.start(label, run_budget.runs) if live is not None else None
        options: dict[str, Any] = {"strategy": strategy} if strategy else {}  # else explore()'s default
        if getattr(args, "plan_entries", None) is not None:  # --plan: one run of the user's plan, every fault kind on
            from ..explore import Replay

            options = {"strategy": Replay(plan=args.plan_entries,
                                          proof="a hand-written plan: not shrunk, not proved minimal")}
            run_budget = 1
        try:
            result = explore(
                t.scenario,
                **options,
                budget=run_budget,
                seed=args.seed,
                progress=hook,
                level_progress=live.levels if live is not None else None,
                proof_budget=getattr(args, "proof_budget", 5000),
                faults=_faults_for(args, t) if getattr(args, "plan_entries", None) is None or args.faults else "all",
                shard_runner=shard_runner,
                canonical_first=bool(getattr(args, "test_command", None)),
                shrink_budget=getattr(args, "shrink_budget", 2000),
                **t.params_by_variant[variant],
            )
        finally:
            if live is not None:
                live.stop()
    cx = result.counterexample
    json_path = html_path = None
    expect = t.expect_by_variant.get(variant)
    runaway = result.verdict == "runaway"  # a runaway met after a counterexample was found leaves it standing
    broken = _model_error(result, t.params_by_variant[variant], expect) if cx is not None else None
    if runaway:  # its own finding: never the race, never as promised (exit 1)
        broken = runaway_line(result.runaway or "")
    tested = getattr(args, "test_command", False)  # hunt-test: the scenario is a test command
    if tested and cx is not None:
        broken = _test_verdict(cx, args) or broken
    failed = False
    unproved = cx is not None and result.verdict == "interrupted" and cx.proved_minimal is not True
    if cx is not None:
        wanted = slug(t.name.replace(".py:", "-").replace(":", "-").replace(".", "_") + (f"-{variant}" if variant else ""))
        stem = free_stem(out_dir, wanted, (".json", ".html", ".py"))  # a same-named file of the user's is kept
        if stem != wanted:
            print(f"note: {out_dir / wanted}.* holds files race-harness did not write; kept them, and wrote "
                  f"{out_dir / stem}.* beside them", file=sys.stderr)
        json_file, html_file = out_dir / f"{stem}.json", out_dir / f"{stem}.html"
        cx.meta.update(race=t.name, variant=variant, known_open=t.known_open, upstream=t.upstream,
                       report=html_file.name)  # the page beside the trace
        if unproved:
            cx.meta["minimality"] = "not proved minimal (interrupted)"
        if broken and not runaway:  # the page of a replay says it too
            cx.meta["model_error"] = broken
        _copy_scenario_file(cx, out_dir / f"{stem}.py", label)
        try:
            cx.save(json_file)
            record_written(json_file)
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
                    model_error=broken if broken and not runaway else None,
                    live_seconds=result.live_seconds,
                )
                record_written(html_file)
                html_path = str(html_file)
            except Exception as exc:
                print(f"warning: could not write the HTML report for {label}: {_one_line(exc)}", file=sys.stderr)
    entry = ReportEntry(
        name=t.name,
        variant=variant,
        verdict="runaway" if runaway else "model-error" if broken else result.verdict,
        # a plan that did not apply is said first: it voids the run, and the search's sentence (every fault kind
        # with no point in the model, ...) can run to hundreds of characters
        outcome=(_unapplied_words(result.unapplied).removeprefix("; ") + "; " if result.unapplied else "")
        + (f"{broken}; {result.outcome}" if broken and result.verdict != "model-error" else result.outcome),
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
        live_seconds=result.live_seconds,
        model_error=broken,
        unapplied=list(result.unapplied),
        faults_without_points=list(result.faults_without_points),
    )
    outcome = entry.outcome
    if unproved and "not proved minimal" not in outcome:
        outcome += "; not proved minimal (interrupted)"
    if args.json:
        print(json.dumps(_json_line(entry, cx, result.found_by)), flush=True)
    elif console is not None:
        if result.verdict == "interrupted":
            mark = "interrupted"
        elif runaway:
            mark = "RUNAWAY"
        elif broken and tested and broken.startswith("fails without"):
            mark = "FAILS WITHOUT ANY DEVIATION"
        elif broken:
            mark = "MODEL ERROR"
        elif entry.unapplied:
            mark = "PLAN NOT APPLIED"
        elif tested:
            mark = "FAILED" if cx is not None else "passed"
        elif expect is None:
            mark = "found" if cx is not None else "clean"
        else:
            mark = "ok" if entry.expected else "UNEXPECTED"
        console.print(f"[{mark}] {printable(label)}: {printable(outcome)}", markup=False, highlight=False,
                      soft_wrap=True)
        if cx is not None and result.verdict != "interrupted" and (not broken or runaway):
            for line in cx.story().lines:  # the story under each counterexample: what Kubernetes did
                console.print(printable(f"    {line}"), markup=False, highlight=False, soft_wrap=True)
    return entry, failed


def _test_verdict(cx: Any, args: argparse.Namespace) -> str | None:
    """What a test command's failure is when it is not an order's: it could not run (``args.could_not_run``, exit
    2), or it fails in the canonical order, with no deviation (its own failure, not a race)."""
    v = cx.violation
    if v.kind == "misuse" and v.name.endswith("could not run"):
        args.could_not_run = _one_line(v.message)
        return f"the test command could not run: {v.message}"
    if v.kind == "oracle" and not cx.deviations:
        return (f"fails without any deviation: {v.name} in the canonical order, so the test fails on its own (its "
                "own bug, or it needs what the served API lacks: see its output in the trace), not because of an "
                "order the search chose")
    return None


def _unapplied_words(unapplied: list[str]) -> str:
    """"; the plan did not apply: entry 3 ... never occurred; ..." -- the first five, then how many more (the
    ``--json`` row lists them all)."""
    shown = "; ".join(unapplied[:5])
    more = f"; and {len(unapplied) - 5:,} more entries that never applied (--json lists them all)" if len(unapplied) > 5 else ""
    return f"; the plan did not apply ({len(unapplied):,} of its entries): {shown}{more}"


def _read_plan_file(path: str) -> Any:
    """``--plan FILE``: the plan entries, or a one-paragraph error (the file is untrusted input)."""
    import json

    from ..explore import read_plan

    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"--plan {path}: no such file. Write the plan as a JSON list of entries "
                         "(guide: Plans by hand) or pass a trace file written by a hunt.") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"--plan {path} could not be read as JSON ({_one_line(exc)}). Write the plan as a JSON "
                         "list of entries (guide: Plans by hand) or pass a trace file written by a hunt.") from None
    return read_plan(raw, f"--plan {path}")


def _model_error(result: Any, params: dict[str, Any], expect: str | None) -> str | None:
    """A broken model, not the race: the scenario's own actor raised or waited forever, an actor blocked outside
    the harness, or both variants raise (or deadlock) alike under one plan."""
    from .._verdicts import both_variants_raise

    if result.model_error is not None:
        return f"model error: {result.model_error}"
    # One fact, one verdict: whichever variant failed (the buggy one as promised, or the fixed one, searched
    # alone or beside it), the other variant is run under the same plan; an exception or a wait that both show
    # alike is the model's in every row. ``expect`` is no longer consulted: a fixed row once said "found
    # UNEXPECTED" where its buggy row said "model error" for the same hang.
    del expect
    return both_variants_raise(result.counterexample, params)


def _copy_scenario_file(cx: Any, copy: Path, label: str) -> None:
    """A file-based scenario is copied next to its trace, which then names the copy, its SHA-256 and the original.

    A replay runs the original where it was hunted while its SHA-256 is the
    recorded one (``Path(__file__).parent / "operator.py"`` then finds the
    operator beside it); the copy is the fallback, so the report folder copied
    elsewhere (a CI artifact) still replays, exactly the file that was hunted
    (the trace's checksum covers the SHA-256 and the original's path). A
    scenario of an installed module or a registered race is named by its module.
    """
    import hashlib

    from ..explore._counterexample import _NAMED, resolve_scenario
    from ..explore._references import is_file_ref
    from ..report import atomic_write_text, record_written

    where, _, qualname = cx.scenario.rpartition(":")
    if not is_file_ref(where):
        return
    try:
        text = Path(where).read_bytes().decode("utf-8")
        atomic_write_text(copy, text)
        record_written(copy)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"warning: could not copy {where} next to the trace of {label} ({_one_line(exc)}); the trace names "
              "the original file", file=sys.stderr)
        return
    ref = f"{copy.resolve().as_posix()}:{qualname}"
    try:  # a replay after the user edits it says it replays the copy, not the edit (relative: a trace is portable)
        cx.meta["hunted_file"] = Path(where).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        pass  # outside the folder the hunt ran in: a replay there could not read it anyway
    _NAMED[ref] = resolve_scenario(cx.scenario)  # this process keeps running the function it already loaded
    cx.scenario = ref
    cx.scenario_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    # where it was hunted: a replay runs it there while it is unchanged, so the files beside it resolve
    cx.scenario_origin = Path(where).resolve().as_posix()


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

    The exhaustive referee (a search or a minimality proof) adds a second line:
    the plans run and known at its current level, and rich's estimate of the
    time that level still takes (known plans only: a level's runs add siblings,
    so the estimate can grow). Piped or in CI the hunt prints plain lines
    instead; the live lines are transient, so they never mix with the outcome
    line printed after them.
    """

    def __init__(self, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        self._task: Any = None
        self._level: Any = None
        self._at: tuple[str, int] | None = None

    def levels(self, phase: str, level: int, done: int, known: int) -> None:
        """The referee's hook (``explore(level_progress=...)``): plans done and known at the current level."""
        if self._level is None:
            self._level = self._progress.add_task("", total=known, status="")
        if self._at != (phase, level):  # a new level: its own bar and its own time estimate
            self._at = (phase, level)
            self._progress.reset(self._level, total=known, completed=done)
        what = "proof of minimality" if phase == "proof" else "exhaustive"
        self._progress.update(self._level, description=f"  {what}, level {level}", total=known, completed=done,
                              status="plans run of those known at this level")

    def start(self, description: str, total: int | None) -> Any:
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, status="searching")

        def hook(runs: int, found: bool) -> None:
            status = "found; shrinking" if found else "searching"
            self._progress.update(self._task, completed=runs, status=status)

        return hook

    def stop(self) -> None:
        for task in (self._task, self._level):
            if task is not None:
                self._progress.remove_task(task)
        self._task = self._level = self._at = None
        self._progress.stop()


def _faults_for(args: argparse.Namespace, t: _Target) -> str | None:
    """``--faults`` when given, else the registered race's own fault kinds (None for other scenarios)."""
    return str(args.faults) if args.faults is not None else t.faults


def _json_line(e: Any, cx: Any, found_by: str | None = None) -> dict[str, Any]:
    return {
        "race": e.name,
        "variant": e.variant,
        "seed": e.seed,
        "found": e.found,
        # the strategy (a portfolio's member: "stale state", "pct", ...) whose run first failed
        "found_by": found_by if cx is not None else None,
        "verdict": e.verdict,
        "expected": e.expected,
        "expect": e.expect,
        "params": e.params,
        "violation_kind": e.violation_kind,
        "model_error": e.model_error,
        "unapplied": e.unapplied,
        "faults_without_points": e.faults_without_points,
        # time to find (search only), then what the shrink and the minimality proof took; runs/seconds: total
        "found_at_run": e.found_at_run,
        "found_after_s": None if e.found_after_s is None else round(e.found_after_s, 3),
        "shrink_runs": e.shrink_runs,
        "proof_runs": e.proof_runs,
        "runs": e.runs,
        "seconds": round(e.seconds, 3),
        # operator processes ran on the real clock (ExternalOperator): the seconds spent waiting for them
        "live_process_seconds": round(e.live_seconds, 3),
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
        # the page's "Why it failed": the harm first (the operator's write the oracle read), then the deviation
        "why": _why(cx) if cx is not None and e.found else None,
    }


def _why(cx: Any) -> str | None:
    from ..report._why import why_sentence

    try:
        return why_sentence(cx, cx.story())  # (the story's run is the page's, cached on the counterexample)
    except Exception:  # a story that cannot be told (its scenario gone) leaves the sentence out, never the line
        return None


def _set_yield_timeout(text: str) -> None:
    """``--yield-timeout SECONDS``: the watchdog's bound (harness/sim/_watchdog.py), checked before anything runs."""
    from ..sim._watchdog import configure

    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise UsageError(f"--yield-timeout {text!r} is not a number of seconds >= 0: e.g. --yield-timeout 30, "
                         "or 0 to turn the watchdog off")
    configure(bound=seconds)
