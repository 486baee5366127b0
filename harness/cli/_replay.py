"""``replay``: one run of a trace file (untrusted input) or of a scenario under given choices, printed step by step."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .._errors import HarnessError, ReplayDivergence, TraceFileError, UsageError
from .._terminal import printable
from ._common import _fmt, _n, _one_line


def _replay(args: argparse.Namespace) -> int:
    from ..explore import Counterexample

    target = args.file
    if ":" in target and not Path(target).exists():
        return _replay_scenario(args)
    if args.runs < 1:
        raise UsageError(f"--runs {args.runs} is not a number of runs: give a whole number >= 1, e.g. --runs 10")
    if args.param or args.choices is not None:
        raise UsageError(
            "--param and --choices go with a SCENARIO (package.module:function or path/to/file.py:function), "
            "not with a trace FILE, whose parameters and choices are fixed by its checksum"
        )
    cx = Counterexample.load(target)
    _say_if_the_hunted_file_changed(cx, target)
    if args.runs > 1:
        return _replay_runs(args, cx, target)
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
    head = f"replaying trace {target}: {cx.runs_ref}({_fmt({**(cx.defaults or {}), **cx.params})})"
    rule, why = _rule(cx, out)
    same = f"same violation, {rule}"
    if getattr(args, "story", False) and not args.json:
        from ..explore._story import tell

        print(printable(head))
        print(printable(tell(cx, out.trace)))
        print(printable(f"replayed trace {target}: {same}; {_n(cx.deviations, 'deviation')}, "
                        f"{_n(out.steps, 'step')}, digest {out.trace.digest()[:16]}{why}"))
        return 0
    _print_replay(args, head, out, cx.deviations, verdict=f"replayed trace {target}: {same}", why=why)
    return 0


def _rule(cx: Any, out: Any) -> tuple[str, str]:
    """How the replay was compared with the trace: the verdict's words, and why when it was not by digest."""
    if cx.compares_digests(out):
        return "same digest", ""
    if out.outside_seconds:
        return "same API order", (" (a run with operator processes is compared at the API boundary: the same "
                                  "requests and deliveries in the same order with the same choices, not by digest)")
    return "same steps", f" (a trace of format version {cx.format_version} is compared step by step, not by digest)"


def _replay_runs(args: argparse.Namespace, cx: Any, target: str) -> int:
    """``replay TRACE --runs N``: the trace N times, each a fresh run (fresh operator processes); how many reproduced.

    A run inside the world reproduces when its digest is the trace's (the same
    trace byte for byte), so one run in a different step is "diverged at step N"
    however often it is tried. A run with operator processes outside the world
    reproduces at the API boundary only as far as their own threads allow: it
    counts when it made the same requests and deliveries in the same order with
    the same choices, to the same violation (:meth:`Counterexample.divergence`),
    and this says how often, measured."""
    import sys
    import time

    reproduced = 0
    first: str | None = None
    rule = ""
    started = time.perf_counter()
    for i in range(args.runs):
        try:
            out = cx.replay(check=False)
        except HarnessError as exc:
            if isinstance(exc, UsageError):
                raise
            raise TraceFileError(f"{target}: {_one_line(exc)}") from None
        except KeyboardInterrupt:
            raise
        except Exception as exc:
            raise TraceFileError(f"{target} could not be replayed: {type(exc).__name__}: {_one_line(exc)}") from None
        diverged = cx.divergence(out)
        rule = rule or ("by digest" if cx.compares_digests(out) else "at the API boundary" if out.outside_seconds
                        else "step by step")
        if diverged is None:
            reproduced += 1
        elif first is None:
            first = f"run {i + 1} {diverged[1]}"
        if not args.json:
            print(printable(f"run {i + 1}: {'reproduced' if diverged is None else diverged[1]}"), file=sys.stderr)
    seconds = time.perf_counter() - started
    line = (f"replayed trace {target}: reproduced {reproduced} of {args.runs} "
            f"({cx.violation.describe()}; compared {rule}; {seconds:.1f} s)")
    if args.json:
        print(json.dumps({"replayed": line, "reproduced": reproduced, "runs": args.runs, "compared": rule,
                          "violation": cx.violation.describe(), "first_divergence": first,
                          "seconds": round(seconds, 3)}))
    else:
        print(printable(line + (f"; first divergence: {first}" if first else "")))
    return 0 if reproduced == args.runs else 1


def _replay_scenario(args: argparse.Namespace) -> int:
    from ..explore._params import check_params, parse_params, raw_params
    from ..explore._references import resolve
    from ..sim import ReplayChooser, run_once

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


def _print_replay(args: argparse.Namespace, head: str, out: Any, deviations: int, *, verdict: str | None = None,
                  why: str = "") -> None:
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
        tail = f"{_n(deviations, 'deviation')}, {_n(out.steps, 'step')}, digest {out.trace.digest()[:16]}{why}"
        print(printable(f"{verdict} ({violation}); {tail}" if verdict is not None else tail))


def _say_if_the_hunted_file_changed(cx: Any, target: str) -> None:
    """On stderr, before anything runs: the model file the trace was hunted from has changed since.

    A replay runs the hunted file where it was hunted while it is unchanged,
    and else the copy saved beside the trace; a user who fixed the model and
    replays sees the old model run, and was told so only by the path on the
    first line. The hunted file was read only to compare its SHA-256 with the
    recorded one (``Counterexample.load``).
    """
    import sys

    hunted = cx.hunted_path
    if cx.copy_file is None or cx.hunted_ref is not None or hunted is None or not hunted.is_file():
        return
    shown = cx.meta.get("hunted_file")
    if not isinstance(shown, str) or Path(shown).resolve() != hunted.resolve():
        shown = str(hunted)
    copy, _, qualname = cx.scenario.rpartition(":")
    print(printable(
        f"note: {shown} has changed since {target} was hunted; this replays the copy saved beside the trace "
        f"({Path(copy).name}), the model as it was hunted. To try your change, hunt it again: "
        f"python -m harness hunt {shown}:{qualname} --variant both (or run this trace's plan on it: "
        f"python -m harness hunt {shown}:{qualname} --plan {target})"), file=sys.stderr)
