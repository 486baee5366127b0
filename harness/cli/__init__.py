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

The package holds one module per concern: ``_parser`` (the options and exit codes), ``_targets``
(resolving TARGETs), ``_hunt`` and ``_cluster_hunt``, ``_hunt_test_command`` (a test command, its scenario in
``_test_command``), ``_replay``, ``_live``, ``_serve``, and ``_common``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .._errors import ReplayDivergence, TraceFileError, UsageError
from .._interrupt import EXIT_INTERRUPTED
from . import _hunt, _live, _replay
from ._common import PROG as PROG
from ._common import _caused_by_interrupt, _one_line, _registered
from ._hunt import _LiveProgress as _LiveProgress
from ._parser import _parser


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI's entry point: returns the exit code (argparse exits on its own for --help and bad options)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _list()
        if args.command == "hunt":
            return _hunt._hunt(args)
        if args.command == "hunt-test":
            from . import _hunt_test_command

            return _hunt_test_command.run(args)
        if args.command == "replay":
            return _replay._replay(args)
        if args.command == "live":
            return _live._live(args)
        if args.command == "serve":
            from . import _serve

            return _serve.run(args)
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


def _list() -> int:
    registry = _registered()
    width = max((len(n) for n in registry), default=10)
    for name, race in registry.items():
        tag = "  [known open]" if race.known_open else ""
        print(f"{name:<{width}}  {race.upstream}  {race.title}{tag}")
    return 0


__all__ = ["PROG", "main"]
