"""``python -m harness``: list the documented races, hunt them, replay a counterexample, run one live.

Exit codes: 0 when every buggy variant was found and every fixed variant came
out clean (known-open cases excepted and listed), 1 otherwise (or a replay
that diverged), 2 on bad usage or a bad input file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ._errors import HarnessError, ReplayDivergence, TraceFileError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _parser() -> _Parser:
    p = _Parser(prog="python -m harness", description="Reproduce, find and explain controller races.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser("list", help="the documented races, one per line, with their upstream reference")
    h = sub.add_parser("hunt", help="hunt the documented races (all by default), write reports/")
    h.add_argument("races", nargs="*", metavar="RACE", help="race names (see 'list'); default: all")
    h.add_argument("--variant", choices=("buggy", "fixed", "both"), default="both")
    h.add_argument("--strategy", default=None, help="random, pct[:DEPTH], hypothesis, exhaustive[:K] (default: per race)")
    h.add_argument("--seed", type=int, default=0, help="search seed (default 0)")
    h.add_argument("--budget", default=None, help="RUNS (e.g. 500) or SECONDSs (e.g. 30s); default: per race")
    h.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    h.add_argument("--report-dir", default="reports", metavar="DIR", help="where traces and HTML go (default reports/)")
    lv = sub.add_parser(
        "live",
        help="re-run a race as a plain Trio program (real scheduler, real clock), the way pytest-repeat would",
    )
    lv.add_argument("race", metavar="RACE", help="race name (see 'list')")
    lv.add_argument("--variant", choices=("buggy", "fixed"), default="buggy")
    lv.add_argument("--runs", type=int, default=100, help="stop after N runs (default 100)")
    lv.add_argument("--seconds", type=float, default=None, help="stop after this many wall seconds")
    lv.add_argument(
        "--time-scale", type=float, default=0.01, metavar="S", help="real seconds per virtual second (default 0.01)"
    )
    lv.add_argument("--jitter", type=float, default=0.2, help="relative jitter of every sleep and timer (default 0.2)")
    lv.add_argument("--timeout", type=float, default=60.0, help="real seconds one run may take (default 60)")
    lv.add_argument("--seed", type=int, default=0, help="jitter seed of the first run (run i uses SEED+i)")
    lv.add_argument("--json", action="store_true", help="print one JSON object instead of sentences")
    r = sub.add_parser("replay", help="replay a saved counterexample and print its steps")
    r.add_argument("file", metavar="FILE")
    r.add_argument("--json", action="store_true", help='print {"violation", "steps", "digest"}')
    return p


def main(argv: Sequence[str] | None = None) -> int:
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
        print(f"python -m harness {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ReplayDivergence as exc:
        print(f"python -m harness replay: {exc}", file=sys.stderr)
        return 1


def _list() -> int:
    from races import REGISTRY

    width = max((len(n) for n in REGISTRY), default=10)
    for name, race in REGISTRY.items():
        tag = "  [known open]" if race.known_open else ""
        print(f"{name:<{width}}  {race.upstream}  {race.title}{tag}")
    return 0


def _hunt(args: argparse.Namespace) -> int:
    from races import REGISTRY

    from .explore import Budget, explore, make_strategy
    from .report import ReportEntry, ensure_report_dir, render_summary, slug, write_counterexample_html, write_index

    names = list(args.races) or list(REGISTRY)
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise UsageError(f"unknown race {unknown[0]!r}; choose from: {', '.join(REGISTRY)}")
    budget = Budget.parse(args.budget) if args.budget is not None else None
    if args.strategy is not None:
        make_strategy(args.strategy, seed=args.seed)  # validate before any work
    variants = ["buggy", "fixed"] if args.variant == "both" else [args.variant]
    out_dir = ensure_report_dir(args.report_dir)
    entries: list[ReportEntry] = []
    console = None
    if not args.json:
        from rich.console import Console

        # piped or in CI: rich would assume 80 columns and truncate race names
        console = Console() if sys.stdout.isatty() else Console(width=110)
    live = _LiveProgress(console) if console is not None and console.is_terminal else None
    try:
        for name in names:
            race = REGISTRY[name]
            for variant in variants:
                run_budget = budget or Budget(runs=race.budget)
                hook = live.start(f"{name} ({variant})", run_budget.runs) if live is not None else None
                try:
                    result = explore(
                        race.scenario,
                        strategy=args.strategy or race.strategy,
                        budget=run_budget,
                        seed=args.seed,
                        fixed=variant == "fixed",
                        progress=hook,
                        **race.params,
                    )
                finally:
                    if live is not None:
                        live.stop()
                cx = result.counterexample
                json_path = html_path = None
                if cx is not None:
                    cx.meta.update(race=name, variant=variant, known_open=race.known_open, upstream=race.upstream)
                    base = out_dir / slug(f"{name}-{variant}")
                    cx.save(base.with_suffix(".json"))
                    json_path = str(base.with_suffix(".json"))
                    try:
                        write_counterexample_html(
                            cx,
                            base.with_suffix(".html"),
                            title=f"{name} ({variant}): {race.title}",
                            upstream=race.upstream,
                            seed=args.seed,
                            replay_command=cx.replay_command(json_path),
                        )
                        html_path = str(base.with_suffix(".html"))
                    except Exception as exc:
                        print(f"warning: could not write the HTML report for {name} ({variant}): {exc}", file=sys.stderr)
                entry = ReportEntry(
                    name=name,
                    variant=variant,
                    verdict=result.verdict,
                    outcome=result.outcome,
                    found=cx is not None,
                    runs=result.runs,
                    seconds=result.seconds,
                    deviations=cx.deviations if cx else None,
                    steps=cx.steps if cx else None,
                    upstream=race.upstream,
                    known_open=race.known_open,
                    json_path=json_path,
                    html_path=html_path,
                    seed=args.seed,
                )
                entries.append(entry)
                if args.json:
                    print(json.dumps(_json_line(entry)), flush=True)
                elif console is not None:
                    mark = "ok" if entry.expected else "UNEXPECTED"
                    console.print(f"[{mark}] {name} ({variant}): {result.outcome}", markup=False, highlight=False, soft_wrap=True)
                if result.verdict == "interrupted":
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        print("interrupted: the races hunted so far are kept in the index", file=sys.stderr)
    index = write_index(entries, out_dir)
    if console is not None:
        render_summary(entries, console)
        opened = [e for e in entries if e.known_open and e.found and e.variant == "fixed"]
        for e in opened:
            console.print(f"known open upstream: {e.name} still fails with the upstream fix, as documented", markup=False)
        console.print(f"report: {index}", markup=False, highlight=False)
    ok = all(e.expected for e in entries) and len(entries) == len(names) * len(variants)
    return 0 if ok else 1


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


def _json_line(e: Any) -> dict[str, Any]:
    return {
        "race": e.name,
        "variant": e.variant,
        "found": e.found,
        "verdict": e.verdict,
        "runs": e.runs,
        "seconds": round(e.seconds, 3),
        "deviations": e.deviations,
        "steps": e.steps,
        "trace": e.json_path,
        "known_open": e.known_open,
    }


def _live(args: argparse.Namespace) -> int:
    """Uncontrolled re-runs: what a user without the harness sees. Exit 0 when it failed, 1 when not."""
    from races import REGISTRY

    from .sim import repeat_live

    if args.race not in REGISTRY:
        raise UsageError(f"unknown race {args.race!r}; choose from: {', '.join(REGISTRY)}")
    if args.runs < 1 or args.time_scale <= 0 or not 0 <= args.jitter < 1:
        raise UsageError("use --runs >= 1, --time-scale > 0 and 0 <= --jitter < 1")
    race = REGISTRY[args.race]
    if not args.json:
        print(
            f"{args.race} ({args.variant}) live: Trio's scheduler, real clock at {args.time_scale:g} s per virtual second, "
            f"±{args.jitter:.0%} jitter, no injected faults; up to {args.runs} runs"
            + (f" / {args.seconds:g} s" if args.seconds else ""),
            flush=True,
        )
    res = repeat_live(
        race.scenario,
        params={"fixed": args.variant == "fixed", **race.params},
        runs=args.runs,
        seconds=args.seconds,
        seed=args.seed,
        time_scale=args.time_scale,
        jitter=args.jitter,
        timeout=args.timeout,
    )
    v = res.failure.violation if res.failure is not None else None
    if args.json:
        print(json.dumps({
            "race": args.race, "variant": args.variant, "found": res.found, "runs": res.runs,
            "seconds": round(res.seconds, 3), "violation": v.describe() if v else None,
            "time_scale": args.time_scale, "jitter": args.jitter,
        }))
    else:
        print(res.outcome)
        if res.found:
            print(f"to get a minimal, replayable counterexample: python -m harness hunt {args.race} --variant {args.variant}")
    return 0 if res.found else 1


def _replay(args: argparse.Namespace) -> int:
    from .explore import Counterexample

    cx = Counterexample.load(args.file)
    try:
        out = cx.replay()
    except HarnessError:
        raise
    except Exception as exc:  # the scenario itself could not be imported or run
        raise TraceFileError(f"{args.file} could not be replayed: {type(exc).__name__}: {exc}") from None
    violation = out.violation.describe() if out.violation else None
    if args.json:
        print(json.dumps({"violation": violation, "steps": out.steps, "digest": out.trace.digest()}))
    else:
        print(f"replaying {cx.scenario}({', '.join(f'{k}={v!r}' for k, v in cx.params.items())})")
        print(out.trace.render())
        print(f"=> {violation or 'no violation'}")
        print(f"{out.deviations} deviations, {out.steps} steps, digest {out.trace.digest()[:16]}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
