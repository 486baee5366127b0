"""``python -m harness hunt-test -- COMMAND...``: a test command hunted as a scenario.

The command (``go test ./internal/controller/...``, ``pytest tests/e2e``) runs
against this process's apiserver through :class:`~harness.operators.TestProcess`:
``KUBECONFIG`` names it, ``USE_EXISTING_CLUSTER=true`` makes envtest use it, and
its exit status is the oracle. The hunt is ``hunt``'s (the same strategies,
shrinking, proof, reports and exit codes) run on the marked scenario
``_test_command.test_command`` with the command as its parameters, so a trace names it
and ``replay`` runs the same command again (``replay --runs N`` says how often
it reproduces). A failure found in the canonical order, with no deviation, is
said as such: the test fails on its own (its own bug, or it needs what the
served API lacks), not because of an order the search chose. A test command is
a process: its search runs in shards on every core (``--workers``,
``harness/_pool.py``), the canonical order in the first shard only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .._errors import UsageError
from ._common import PROG

#: what the test runs for, in real seconds, before it is stopped as runaway (a suite's own timeouts come first)
DEFAULT_TIMEOUT = 900.0  # (as _test_command.DEFAULT_TIMEOUT)
#: runs of each portfolio member's turn: its default (40) would give a search of seconds-long runs to the random
#: walk for minutes before the patterns and small plans, whose finds need no long shrink, had a turn
_TURN = 4
#: the scenario a hunt of a test command runs (and its trace names)
SCENARIO = "harness.cli._test_command:test_command"

_EXIT = (
    "exit codes:\n"
    "  0    the test passed in every run of the budget (N runs, no failure: never a proof)\n"
    "  1    a run failed: the failing order is shrunk, proved as far as the proof budget reaches and written as a\n"
    "       trace and a page (a failure with no deviation is the test's own: said as such)\n"
    "  2    bad usage, or the command could not run against the apiserver (it exited before its first request)\n"
    "  130  interrupted: what was found is written first"
)


def add_parser(sub: Any, raw: type[argparse.HelpFormatter]) -> None:
    """``hunt-test``: its options are ``hunt``'s search options and the command's own."""
    from ._parser import _seed, add_workers

    t = sub.add_parser(
        "hunt-test", help="hunt the orders that make a test command fail (envtest, pytest) against the served API",
        description="Run COMMAND (a test suite) against this harness's apiserver, again and again under the "
        "search's orders, deliveries and faults; a failing run is shrunk, proved minimal and written as a replayable "
        "trace. The command is pointed at the apiserver by KUBECONFIG and USE_EXISTING_CLUSTER=true (envtest then "
        "uses it instead of starting its own); its exit status is the oracle.",
        epilog=f"example: hunt-test --budget 50 -- go test ./internal/controller/...\n\n{_EXIT}",
        formatter_class=raw,
    )
    t.add_argument("test_argv", nargs=argparse.REMAINDER, metavar="-- COMMAND...",
                   help="the test command and its arguments, after --")
    t.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment variable for the command, repeatable (KUBECONFIG is the harness's)")
    t.add_argument("--cwd", default=".", help="where the command runs (default: here)")
    t.add_argument("--name", default="test", help="the process's name in traces and stories (default: test)")
    t.add_argument("--budget", default="20", help="runs (or SECONDSs) until the first failure (default 20)")
    t.add_argument("--strategy", default="portfolio", help="portfolio, random, pct[:DEPTH], exhaustive[:K], ... "
                   "(default portfolio, in short turns: a run costs seconds, so each member gets its turn early)")
    t.add_argument("--seed", type=_seed, default=0, help="search seed (default 0)")
    t.add_argument("--faults", default=None, metavar="KINDS", help="fault kinds the search may place (as hunt's)")
    t.add_argument("--shrink-budget", default=60, type=int, metavar="RUNS",
                   help="candidate plans the shrinker may try (default 60: a test run costs seconds); the runs that "
                   "write a run as a plan and confirm a failing plan a second time come on top, as the line counts")
    t.add_argument("--proof-budget", default=200, type=int, metavar="RUNS",
                   help="runs the minimality proof may take per entry (default 200)")
    t.add_argument("--quiet", type=float, default=0.15, metavar="SECONDS",
                   help="real seconds without progress after which the test counts as waiting (default 0.15)")
    t.add_argument("--startup", type=float, default=180.0, metavar="SECONDS",
                   help="real seconds its first request may take (compiling included; default 180)")
    t.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"real seconds one run of the command may take (default {DEFAULT_TIMEOUT:g})")
    t.add_argument("--no-cluster", action="store_true",
                   help="no namespace controller nor garbage collector beside the apiserver (envtest has neither)")
    add_workers(t)
    t.add_argument("--json", action="store_true", help="one JSON object per search instead of a table")
    t.add_argument("--report-dir", default="reports", metavar="DIR", help="where traces and HTML go (default reports/)")


def run(args: argparse.Namespace) -> int:
    """Check the command, then hunt :func:`test_command` with it (``hunt``'s machinery and exit codes)."""
    from . import _hunt

    command = list(args.test_argv)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise UsageError("give the test command after --, e.g. hunt-test -- go test ./internal/controller/...")
    cwd = Path(args.cwd).resolve()
    if not cwd.is_dir():
        raise UsageError(f"--cwd {args.cwd}: no such folder; give the folder the test command runs in")
    program = command[0]
    if os.sep not in program and shutil.which(program) is None:
        raise UsageError(f"{program}: not found on PATH; give the test command as you run it (its path, or a "
                         "program on PATH)")
    if os.sep in program and not (cwd / program).exists():
        raise UsageError(f"{program}: no such file in {cwd}; give its path (relative to --cwd) or a program on PATH")
    env: dict[str, str] = {}
    for item in args.env:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise UsageError(f"--env {item!r} is not NAME=VALUE; use e.g. --env GINKGO_NO_COLOR=TRUE")
        env[key] = value
    for what in ("quiet", "startup", "timeout"):
        if getattr(args, what) <= 0:
            raise UsageError(f"--{what} {getattr(args, what)}: give a positive number of seconds")
    params = {"argv": command, "cwd": str(cwd), "name": args.name, "quiet": args.quiet, "startup": args.startup,
              "timeout": args.timeout}
    if env:
        params["env"] = env
    if args.no_cluster:
        params["cluster"] = False
    if args.shrink_budget < 0 or args.proof_budget < 1:
        raise UsageError("--shrink-budget takes 0 or more runs, --proof-budget 1 or more")
    strategy: Any = args.strategy
    if strategy.strip() == "portfolio":
        from ..explore import Portfolio

        strategy = Portfolio(args.seed, chunk=_TURN)
    hunt = argparse.Namespace(
        targets=[SCENARIO], variant=None, expect="clean", strategy=strategy, shrink_budget=args.shrink_budget,
        seed=args.seed, faults=args.faults, budget=args.budget, proof_budget=args.proof_budget, plan=None,
        yield_timeout=None, json=args.json, report_dir=args.report_dir, cluster=None, shards=None, workers=args.workers,
        param=[f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in params.items()],
        test_command=" ".join(command),
    )
    code = _hunt._hunt(hunt)
    if getattr(hunt, "could_not_run", None):
        print(f"{PROG} hunt-test: error: {hunt.could_not_run}", file=sys.stderr)
        return 2
    return code
