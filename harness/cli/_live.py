"""``live``: uncontrolled re-runs on Trio's own scheduler and a real clock, what a user without the harness sees."""

from __future__ import annotations

import argparse
import json
import sys

from .._errors import UsageError
from .._interrupt import EXIT_INTERRUPTED
from ._common import PROG, _n
from ._targets import _label, _resolve_targets


def _live(args: argparse.Namespace) -> int:
    """Uncontrolled re-runs: what a user without the harness sees; exit codes as 'hunt'."""
    from .._verdicts import model_error
    from ..sim import RUNAWAY_KINDS, repeat_live

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
    broken = model_error(v) if v is not None else None
    if v is not None and broken is None and v.kind in RUNAWAY_KINDS:  # a run that never ends is never the race
        broken = (f"a live run never ended ({v.describe()}); a runaway is not the race: check --time-scale "
                  f"({args.time_scale:g} real seconds per virtual second) and the model's loops")
    found = res.found and broken is None
    expected = found if variant == "buggy" or t.known_open else (not res.found) if variant == "fixed" else True
    if broken is not None:  # the model's own failure: whatever the variant promised, it is not the race
        expected = False
    if args.json:
        print(json.dumps({
            "race": t.name, "variant": variant, "found": found, "expected": expected,
            "runs": res.runs, "seconds": round(res.seconds, 3), "violation": v.describe() if v else None,
            "model_error": broken, "time_scale": args.time_scale, "jitter": args.jitter,
        }))
    elif broken is not None:
        print(f"model error on live run {res.runs:,}: {broken}. Fix the model: a live run of a model that raises, "
              f"waits forever or never ends is not the race (hunt {t.name} shows the same error with its trace)")
    else:
        print(res.outcome)
        if res.found:
            again = f" --variant {variant}" if variant else ""
            print(f"to get a minimal, replayable counterexample: {PROG} hunt {t.name}{again}")
    return 0 if expected else 1
