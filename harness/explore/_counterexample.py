"""Counterexamples: a failing run that can be saved, loaded and replayed exactly.

A counterexample is decided by its scenario (an importable ``module:qualname``),
its parameters and its list of choices. The trace and violation are stored too,
so a replay can check, step by step, that the scenario still does what it did,
and say in words where it diverged when it does not.
"""

from __future__ import annotations

import importlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ReplayDivergence, TraceFileError
from ..sim import (
    FORMAT_VERSION,
    Entry,
    Limits,
    PlanChooser,
    ReplayChooser,
    RunOutcome,
    Trace,
    Violation,
    entry_from_json,
    run_once,
)

#: trace format versions this harness still replays (1: positional choices only, no plan)
READABLE_VERSIONS = (1, FORMAT_VERSION)

FORMAT_NAME = "race-harness-trace"

Scenario = Callable[..., Awaitable[object]]


def scenario_ref(scenario: Scenario) -> str:
    """``module:qualname`` of a scenario, as stored in trace files.

    A classmethod bound to a subclass (``Machine.scenario``) is named after the
    subclass, not the base class that defines it.
    """
    owner = getattr(scenario, "__self__", None)
    if isinstance(owner, type):
        return f"{owner.__module__}:{owner.__qualname__}.{scenario.__name__}"
    return f"{scenario.__module__}:{scenario.__qualname__}"


def resolve_scenario(ref: str) -> Scenario:
    """Import a scenario from its ``module:qualname`` reference."""
    module_name, _, qualname = ref.partition(":")
    if not module_name or not qualname:
        raise TraceFileError(f"the scenario reference {ref!r} is not of the form 'module:function'")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TraceFileError(
            f"the scenario module {module_name!r} cannot be imported ({exc}). Run the replay from the project "
            "root (where the module is importable), or re-run the hunt that wrote the file."
        ) from None
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise TraceFileError(
                f"{module_name!r} has no scenario {qualname!r}; it was renamed or removed since the trace was "
                "saved. Re-run the hunt to produce a fresh counterexample."
            )
    if not callable(obj):
        raise TraceFileError(f"{ref!r} is not a scenario function")
    return obj  # type: ignore[no-any-return]


@dataclass
class Counterexample:
    """A minimal failing run: its choices, trace and violation, and how to replay it."""

    scenario: str
    params: dict[str, Any]
    choices: list[int]
    trace: Trace
    violation: Violation
    strategy: str = ""
    seed: int | None = None
    limits: Limits = field(default_factory=Limits)
    #: fewest deviations proved by exhaustive search below this one (None: not checked)
    proved_minimal: bool | None = None
    #: extra labels a caller attaches (race name, variant, known-open, ...)
    meta: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    #: the named deviations (holds, faults, picks) that make this run from the canonical one;
    #: None for a positional-only counterexample (format 1, or a run no plan reproduced)
    plan: tuple[Entry, ...] | None = None
    #: fault kinds the run was explored with (None: the model's own flags; {"*"}: all)
    faults: frozenset[str] | None = None
    #: what the minimality proof established, in words ("proved minimal", or what a cut proof covered)
    proof: str = ""

    @property
    def deviations(self) -> int:
        """The number of plan entries (postponements, faults, picks); positional deviations without a plan."""
        return len(self.plan) if self.plan is not None else self.trace.deviations

    @property
    def steps(self) -> int:
        return self.trace.steps

    def signature(self) -> str:
        """The failure, not the trace: oracle, violating actor and the identities of the plan's entries.

        Findings with one signature are one bug, whatever seed, strategy or
        worker found them (the plan is the canonical minimum when proved).
        """
        import hashlib

        v = self.violation
        parts: list[Any] = [v.kind, v.name, v.actor]
        if self.plan is not None:
            parts.append([e.to_json() for e in self.plan])
        else:
            parts.append(self.choices)
        return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]

    def digest(self) -> str:
        return self.trace.digest()

    def replay_command(self, path: str | None = None) -> str:
        where = path or self.path or "<trace.json>"
        return f"python -m harness replay {where}"

    # --------------------------------------------------------------- replay
    def replay(self, *, check: bool = True, observer: Callable[[Any, Any], None] | None = None) -> RunOutcome:
        """Run the scenario again under the stored choices.

        With ``check``, a run that takes a different path raises
        :class:`ReplayDivergence` naming the first divergent step in words.
        ``observer(world, last_record)`` is called at every scheduling point
        (reports snapshot model state with it); it must not change the run.
        """
        fn = resolve_scenario(self.scenario)
        chooser: Any = PlanChooser(self.plan) if self.plan is not None else ReplayChooser(self.choices)
        out = run_once(fn, chooser, params=self.params, limits=self.limits, observer=observer, faults=self.faults)
        if check:
            self._check_same(out)
        return out

    def _check_same(self, out: RunOutcome) -> None:
        old, new = self.trace, out.trace
        for i in range(min(len(old), len(new))):
            if not old[i].same_action(new[i]) or old[i].choice != new[i].choice:
                raise ReplayDivergence(
                    f"the replay diverged at step {old[i].step}: the trace recorded "
                    f"'{old[i].actor}: {old[i].label}' (choice {old[i].choice} of {old[i].enabled}) but the scenario "
                    f"now offers '{new[i].actor}: {new[i].label}' (choice {new[i].choice} of {new[i].enabled}). "
                    "The scenario changed since this trace was saved; re-run the hunt to get a fresh counterexample.",
                    step=old[i].step,
                )
        if len(old) != len(new) or not self.violation.same_bug(out.violation):
            step = min(len(old), len(new)) + 1
            now = out.violation.describe() if out.violation else "no violation"
            raise ReplayDivergence(
                f"the replay diverged at step {step}: the trace ended after {len(old)} steps with "
                f"'{self.violation.describe()}', the scenario now ends after {len(new)} steps with '{now}'. "
                "The scenario changed since this trace was saved; re-run the hunt to get a fresh counterexample.",
                step=step,
            )

    # ------------------------------------------------------------- program
    def program(self, *, context: int = 1) -> str:
        """The minimal step program: every deviation with the steps around it."""
        lines = [f"scenario {self.scenario}({_fmt_params(self.params)})"]
        keep: set[int] = set()
        recs = list(self.trace)
        for i, r in enumerate(recs):
            if r.choice:
                keep.update(range(max(0, i - context), min(len(recs), i + context + 1)))
        keep.update(range(max(0, len(recs) - 2), len(recs)))
        last = -1
        for i in sorted(keep):
            if last >= 0 and i > last + 1:
                lines.append(f"      ... {i - last - 1} canonical steps ...")
            elif last < 0 and i > 0:
                lines.append(f"      ... {i} canonical steps ...")
            lines.append("  " + recs[i].describe())
            last = i
        lines.append(f"  => {self.violation.describe()}")
        return "\n".join(lines)

    # ------------------------------------------------------------ save/load
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "scenario": self.scenario,
            "params": self.params,
            "strategy": self.strategy,
            "seed": self.seed,
            "limits": {"max_steps": self.limits.max_steps, "max_time": self.limits.max_time},
            "choices": self.choices,
            "plan": None if self.plan is None else [e.to_json() for e in self.plan],
            "faults": None if self.faults is None else sorted(self.faults),
            "proof": self.proof,
            "deviations": self.deviations,
            "steps": self.steps,
            "violation": self.violation.to_json(),
            "proved_minimal": self.proved_minimal,
            "meta": self.meta,
            "digest": self.digest(),
            "trace": self.trace.to_json(),
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the counterexample as JSON, atomically (temp file + rename)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_json(), indent=1, sort_keys=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
            # mkstemp makes the file 0600; a trace is shared (CI artifacts), so it gets what open() would
            # give it: 0666 less the umask. os.umask can only be read by setting it, hence the round trip.
            mask = os.umask(0o022)
            os.umask(mask)
            os.chmod(tmp, 0o666 & ~mask)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.path = str(path)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Counterexample:
        """Read a saved counterexample; any defect raises a one-paragraph :class:`TraceFileError`."""
        p = Path(path)
        hint = (
            "A trace file is the JSON written by `python -m harness hunt` or Counterexample.save(); "
            "re-run the hunt to produce a fresh one."
        )
        if not p.exists():
            raise TraceFileError(f"{p} does not exist. {hint}")
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            raise TraceFileError(f"{p} is not a text file. {hint}") from None
        except json.JSONDecodeError as exc:
            raise TraceFileError(
                f"{p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                f"it may be truncated. {hint}"
            ) from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT_NAME:
            raise TraceFileError(f"{p} is JSON but not a race-harness trace (no \"format\": \"{FORMAT_NAME}\"). {hint}")
        if raw.get("version") not in READABLE_VERSIONS:
            raise TraceFileError(
                f"{p} has trace format version {raw.get('version')!r}; this harness reads version {FORMAT_VERSION}. {hint}"
            )
        try:
            lim = raw.get("limits") or {}
            cx = cls(
                scenario=str(raw["scenario"]),
                params=dict(raw.get("params") or {}),
                choices=[int(c) for c in raw["choices"]],
                trace=Trace.from_json(list(raw["trace"])),
                violation=Violation.from_json(dict(raw["violation"])),
                strategy=str(raw.get("strategy", "")),
                seed=None if raw.get("seed") is None else int(raw["seed"]),
                limits=Limits(int(lim.get("max_steps", Limits.max_steps)), float(lim.get("max_time", Limits.max_time))),
                proved_minimal=raw.get("proved_minimal"),
                meta=dict(raw.get("meta") or {}),
                path=str(path),
                plan=None if raw.get("plan") is None else tuple(entry_from_json(e) for e in raw["plan"]),
                faults=None if raw.get("faults") is None else frozenset(str(k) for k in raw["faults"]),
                proof=str(raw.get("proof") or ""),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceFileError(f"{p} is missing or has a malformed field ({type(exc).__name__}: {exc}). {hint}") from None
        if any(c < 0 for c in cx.choices):
            raise TraceFileError(f"{p} holds negative choices, which no run can take. {hint}")
        if raw.get("digest") not in (None, cx.digest()):
            raise TraceFileError(f"{p} was edited or damaged: its digest does not match its trace. {hint}")
        return cx

    @classmethod
    def from_outcome(
        cls,
        scenario: Scenario | str,
        params: dict[str, Any],
        out: RunOutcome,
        *,
        strategy: str = "",
        seed: int | None = None,
        limits: Limits = Limits(),
        plan: tuple[Entry, ...] | None = None,
        faults: frozenset[str] | None = None,
    ) -> Counterexample:
        assert out.violation is not None
        ref = scenario if isinstance(scenario, str) else scenario_ref(scenario)
        return cls(
            ref, dict(params), _trim(out.choices), out.trace, out.violation, strategy, seed, limits,
            plan=plan, faults=faults,
        )


def _trim(choices: list[int]) -> list[int]:
    end = len(choices)
    while end and choices[end - 1] == 0:
        end -= 1
    return choices[:end]


def _fmt_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())
