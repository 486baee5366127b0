"""The command line: the commands, their options and their exit codes, as ``--help`` prints them."""

from __future__ import annotations

import argparse
from typing import NoReturn

from .._options import FAULT_KINDS
from ._common import _TARGET_FORMS, PROG

#: seeds are 64-bit: the strategies derive every run's seed from one modulo 2**64, so a larger or negative
#: seed would silently replay another (2**70 is seed 0)
SEED_LIMIT = 2**64


def _seed(text: str) -> int:
    """``--seed``: a whole number in [0, 2**64), else argparse's usage error (exit 2)."""
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give a seed in [0, 2**64), e.g. --seed 1") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"{text} is outside [0, 2**64): a seed is 64-bit (a larger one would replay another); give e.g. --seed 1"
        )
    return value

_EXIT_CODES = {
    "hunt": (
        "exit codes:\n"
        "  0    every search ended as its variant promises: buggy found, fixed clean (known-open cases\n"
        "       excepted and listed); a scenario hunted without --variant promises nothing\n"
        "  1    some search did not, or a report file could not be written (the finding is printed), or the\n"
        "       model is broken: the scenario's own code raised, or both variants raise alike (a model error)\n"
        "  2    bad usage: unknown race or scenario, bad --param, --budget, --strategy or --report-dir, or a\n"
        "       --cluster that cannot be reached\n"
        "  130  interrupted: the counterexamples found so far and the index are written first\n"
        "  143  SIGTERM (timeout, kill, a cancelled CI job): as 130, the summary and --json lines printed too"
    ),
    "replay": (
        "exit codes:\n"
        "  0    the replay reproduced the trace (its digest: the same trace byte for byte; with operator\n"
        "       processes, the same API order and violation); with --runs N, every run did\n"
        "  1    the replay diverged: the scenario changed since the trace was written (with --runs N: a\n"
        "       run diverged; the line says how many of the N reproduced)\n"
        "  2    bad usage or a bad trace file (missing, not a trace, edited or damaged, or naming a\n"
        "       scenario not marked with @harness.scenario), or a file the scenario finds beside\n"
        "       itself missing from the report folder (the message names it)\n"
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
    from .._version import __version__

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
                   "canonical (default: per race; portfolio for a scenario of yours)")
    h.add_argument("--seed", type=_seed, default=0, help="search seed, a whole number in [0, 2**64) (default 0)")
    h.add_argument(
        "--faults",
        default=None,
        metavar="KINDS",
        help="fault kinds the search may place: all, none, default (each component's own flags) or e.g. "
        "crash,watch_drop; without it, each registered race's own choice (the guide's 'The documented races') "
        f"(kinds: {', '.join(FAULT_KINDS)})",
    )
    h.add_argument("--budget", default=None, help="the search's budget until its first failure: RUNS (e.g. 500) or "
                   "SECONDSs (e.g. 30s); default: per race; for a scenario of yours 1,000 runs (exhaustive: no cap, "
                   "it runs to its verdict). A failure found is then shrunk (at most 2,000 runs) and proved minimal "
                   "(--proof-budget), each counted apart on the verdict's line")
    h.add_argument("--proof-budget", default=5000, type=int, metavar="RUNS",
                   help="runs the minimality proof may take for each entry of the shrunk plan (a plan of k entries: "
                   "k times this, for three entries at most; default 5,000) and for each worker: with --cluster "
                   "local:N or N remote workers, N times as many, in about the same wall time; a proof cut by it "
                   "says what it covered, how many plans remain, about how long they would take, and the budget "
                   "that would reach them")
    h.add_argument(
        "--plan", default=None, metavar="PLAN.json",
        help="run TARGET once under a hand-written plan (a JSON list of fault/hold/pick entries, or a trace file) "
        "instead of searching, and report it like any counterexample (guide: Plans by hand)",
    )
    h.add_argument(
        "--yield-timeout", default=None, metavar="SECONDS",
        help="wall seconds an actor may run without reaching a yield point before the run is stopped as a model "
        "error naming its line (a CPU loop never yields; default 10; 0 turns the watchdog off)",
    )
    h.add_argument("--json", action="store_true", help="one JSON object per line instead of a table")
    h.add_argument("--report-dir", default="reports", metavar="DIR", help="where traces and HTML go (default reports/)")
    h.add_argument(
        "--cluster", default=None, metavar="ADDRESS",
        help="search on a Dask cluster: tcp://HOST:PORT (a running `dask scheduler`) or local:N (N worker "
        "processes here); needs pip install 'race-harness[cluster]'",
    )
    h.add_argument(
        "--shards", type=int, default=None, metavar="N",
        help="with --cluster or a search of OS processes: shards per search, each a task with its own derived seed "
        "(default 4 on a cluster; for processes, 4 or this machine's cores if more); the same N gives the same "
        "shards on any number of workers",
    )
    add_workers(h)

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
    lv.add_argument("--seed", type=_seed, default=0, help="jitter seed of the first run (run i uses SEED+i)")
    lv.add_argument("--json", action="store_true", help="print one JSON object instead of sentences")

    from . import _hunt_test_command, _serve

    _hunt_test_command.add_parser(sub, raw)
    _serve.add_parser(sub, raw, _TARGET_FORMS)
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
    r.add_argument(
        "--runs", type=int, default=1, metavar="N",
        help="only with a trace FILE: replay it N times and say how often it reproduced ('reproduced k of N'); for "
        "a scenario with operator processes (ExternalOperator), whose own threads the harness does not schedule",
    )
    r.add_argument("--json", action="store_true", help='print {"violation", "steps", "deviations", "digest"}')
    r.add_argument(
        "--story", action="store_true",
        help="print the counterexample's story (at most 15 lines: the deviations, the Kubernetes events that lead "
        "to the violation, and its virtual time) instead of every step",
    )
    return p


def add_workers(p: argparse.ArgumentParser) -> None:
    """``--workers N``: how many cores a search of OS processes takes (``harness/_pool.py``)."""
    p.add_argument(
        "--workers", type=int, default=None, metavar="N",
        help="a search whose scenario runs OS processes (an ExternalOperator, a test command) runs its shards on "
        "N worker processes, each with its own operator processes and ports (default: every core this process "
        "may use); --workers 1 runs the same shards here, one after another, to the same verdicts. A run costs "
        "seconds of waiting on the real clock, so N workers take about 1/N of the time; each worker costs its "
        "start-up (~1 s) and its memory. A search in process is never split",
    )


def _add_param(p: argparse.ArgumentParser, note: str = "") -> None:
    p.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE",
        help="a keyword argument of the scenario, repeatable; VALUE is JSON when it parses (3, true, \"x\", [1,2]), "
        "else a string" + (f" ({note})" if note else ""),
    )
