"""Counterexamples: a failing run that can be saved, loaded and replayed exactly.

A counterexample is decided by its scenario (``package.module:qualname`` or
``path/to/file.py:qualname``, see :mod:`harness.explore._references`), its
parameters and its list of choices. The trace and violation are stored too,
so a replay can check, step by step, that the scenario still does what it did,
and say in words where it diverged when it does not.

A trace file is untrusted input: :meth:`Counterexample.load` gives every
defect one paragraph, a ``checksum`` over :data:`SIGNED_FIELDS` tells an edited
or damaged file apart from a scenario that changed, and a replay resolves only
scenarios marked as such (``@harness.scenario``, a RaceMachine, a registered race).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import re
import stat
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import HarnessError, ReplayDivergence, TraceFileError
from ..sim import (
    FORMAT_VERSION,
    Entry,
    Ident,
    Limits,
    PlanReplayChooser,
    ReplayChooser,
    RunOutcome,
    Trace,
    Violation,
    alias_model_file,
    entry_from_json,
    identity_label,
    run_once,
)
from ._beside import hunted_place, missing_beside, watching
from ._references import file_of_module, portable_ref, split_ref
from ._references import resolve as resolve_marked
from ._scenarios import name_of
from ._story import Story, presented, tell

#: trace format versions this harness still replays (1: positional choices only, no plan; 2: no ``defaults``;
#: 3: float time: its plan replays as written, its positional choices may diverge where time was rounded;
#: 4: float time on the nanosecond grid: its plan replays as written, an instant may differ by a nanosecond)
READABLE_VERSIONS = (1, 2, 3, 4, FORMAT_VERSION)

FORMAT_NAME = "race-harness-trace"

#: The fields of a trace file that decide what its replay runs and what it claims. ``checksum`` is a
#: SHA-256 over them (canonical JSON), so :meth:`Counterexample.load` tells an edited or damaged file
#: ("edited or damaged", exit 2) apart from a scenario that changed since the save (a divergence).
#: Add a field here when it starts to affect a replay. ``meta`` is left out on purpose: it holds
#: labels (race, variant, test id) that tools may add to a written file.
SIGNED_FIELDS = (
    "format", "version", "scenario", "params", "defaults", "choices", "plan", "faults", "limits", "trace", "digest",
    "violation", "deviations", "steps", "proved_minimal", "proof", "strategy", "seed",
)

#: what versions 1 and 2 signed: they had no ``defaults``, and their checksums must still verify
_SIGNED_BEFORE_3 = tuple(f for f in SIGNED_FIELDS if f != "defaults")

#: signed when the file holds it (traces written before it existed still verify): the SHA-256 of the scenario
#: file a hunt copied next to the trace, so a replay of the copy runs exactly what was hunted
SCENARIO_SHA256 = "scenario_sha256"

#: signed when the file holds it: the absolute path of the scenario file the hunt ran (the one copied), so a replay
#: runs it there while it is unchanged and the files it finds beside itself resolve (``_beside.py``)
SCENARIO_ORIGIN = "scenario_origin"

#: trace files larger than this are refused unread (a 200,000-step trace, the default limit, is ~40 MB)
MAX_TRACE_BYTES = 128 * 2**20


def checksum(raw: Mapping[str, Any]) -> str:
    """SHA-256 over the :data:`SIGNED_FIELDS` of a trace's JSON form (absent fields count as null).

    A file of format 1 or 2 is checked over the fields its version signed, so it
    still loads (it replays without the defaults a divergence could name).
    """
    old = isinstance(raw.get("version"), int) and raw.get("version") in (1, 2)
    signed = {k: raw.get(k) for k in (_SIGNED_BEFORE_3 if old else SIGNED_FIELDS)}
    for extra in (SCENARIO_SHA256, SCENARIO_ORIGIN):
        if extra in raw:
            signed[extra] = raw[extra]
    return hashlib.sha256(json.dumps(signed, sort_keys=True, separators=(",", ":")).encode()).hexdigest()

Scenario = Callable[..., Awaitable[object]]

#: scenarios this process named itself (explore, hunt): resolved without the trace-file checks
_NAMED: dict[str, Scenario] = {}


def scenario_ref(scenario: Scenario) -> str:
    """How a trace names ``scenario``: ``package.module:qualname``, or ``/path/file.py:qualname`` for a file.

    A classmethod bound to a subclass (``Machine.scenario``) is named after the
    subclass. A scenario of a script run as ``python file.py`` is named by that
    file, never ``__main__``; :meth:`Counterexample.save` stores a file relative
    to the trace's folder.
    """
    module, qualname = name_of(scenario)
    path = file_of_module(module)
    ref = f"{path.as_posix()}:{qualname}" if path is not None else f"{module}:{qualname}"
    _NAMED[ref] = scenario
    return ref


def scenario_defaults(scenario: Scenario, params: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword parameters of ``scenario`` that ``params`` leaves to their defaults, with those defaults.

    A trace stores them beside ``params`` so a replay that diverges after a
    model's default changed can say which parameter did (a replay still runs
    the scenario as it is called now: explicit ``params`` only). A default that
    is not JSON is stored as its ``repr``: enough to notice a change. The first
    parameter is the world; ``*args``/``**kwargs`` have no default to record.
    """
    try:
        sig = inspect.signature(scenario)
    except (TypeError, ValueError):  # a callable without a signature: nothing to record
        return {}
    out: dict[str, Any] = {}
    for i, (name, p) in enumerate(sig.parameters.items()):
        if i == 0 and p.kind is not p.KEYWORD_ONLY:
            continue  # the world
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is p.empty or name in params:
            continue
        out[name] = _as_json(p.default)
    return out


def _as_json(value: Any) -> Any:
    """``value`` when it survives a JSON round trip unchanged, else its ``repr`` (a label, compared as text)."""
    try:
        if json.loads(json.dumps(value)) == value:
            return value
    except (TypeError, ValueError):
        pass
    return repr(value)


def resolve_scenario(ref: str, *, base: Path | None = None) -> Scenario:
    """The scenario ``ref`` names: one this process named itself, else a *marked* scenario only.

    A reference read from a file is resolved by the rules of
    :mod:`harness.explore._references`: nothing is imported unless its source marks
    the name as a scenario, and ``os:system`` is refused (:class:`TraceFileError`).
    A relative file path is taken from ``base`` (default: the current folder).
    """
    named = _NAMED.get(ref)
    if named is not None:
        return named
    return resolve_marked(ref, base=base)


#: lines of a runaway's program: enough for the loop's first iterations
_LOOP_LINES = 40
#: trace records whose choice is a value, not a position among what was offered: compared in every replay
_VALUED = frozenset({"choose", "fault"})


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
    #: a cut proof's estimated time, measured in this process (the hunt's line says it after ``proof``; never saved)
    proof_time: str = field(default="", compare=False)
    #: the scenario's parameters left to their defaults, with the values they had when the run was recorded
    #: (None: a trace of format 1 or 2, which did not record them)
    defaults: dict[str, Any] | None = None
    #: the SHA-256 of the scenario file the trace names, when a hunt copied it next to the trace (None: not copied)
    scenario_sha256: str | None = None
    #: the absolute path of the file the hunt copied (None: not copied, or a trace older than this record)
    scenario_origin: str | None = None
    #: the trace format version the counterexample was read from (a digest compares only within one version)
    format_version: int = FORMAT_VERSION
    #: where a replay runs a hunted file: the hunted place when it is there unchanged, else None (see ``_beside``)
    hunted_ref: str | None = field(default=None, compare=False, repr=False)
    #: the copy saved beside the trace, and where it was hunted (None: unknown), when the trace names a copy
    copy_file: Path | None = field(default=None, compare=False, repr=False)
    hunted_path: Path | None = field(default=None, compare=False, repr=False)

    def told(self) -> Trace:
        """This run once more with notes (what the kube layer and the model noted inside each step), cached.

        The same choices give the same trace; only the notes and each step's
        footprint are added (they never change a run). When the run cannot be
        repeated (its scenario is gone or changed), the stored trace is
        returned: a story then tells the steps without notes.
        """
        told = self.__dict__.get("_told")
        if told is not None:
            return told  # type: ignore[no-any-return]
        trace = self.trace
        if not trace.noted and self.violation.kind != "no-yield":  # that run would hold the watchdog's bound again
            try:
                fn = self._scenario_fn()
                out = run_once(fn, self._chooser(), params=self.params, limits=self.limits, faults=self.faults,
                               notes=True)
            except Exception:  # a story falls back to the steps, never fails a report
                out = None
            if out is not None and self.divergence(out) is None:
                trace = out.trace
        self.__dict__["_told"] = trace
        return trace

    def story(self, *, max_lines: int = 15) -> Story:
        """What happened, in at most ``max_lines`` lines: the deviations, the Kubernetes events, the violation.

        See :mod:`harness.explore._story`: a causal slice from the violated
        oracle back, plan entries first, each hold once, the violation at its
        virtual time.
        """
        return tell(self, max_lines=max_lines)

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
    @property
    def runs_ref(self) -> str:
        """The scenario a replay runs: the hunted file where it was hunted, when it is there unchanged; else
        :attr:`scenario` (the copy beside the trace, a module, a file)."""
        return self.hunted_ref or self.scenario

    def _scenario_fn(self) -> Scenario:
        """The scenario, resolved; a hunt's copy of a model file names its lines as the hunted file did."""
        fn = resolve_scenario(self.runs_ref)
        hunted = self.meta.get("hunted_file") if isinstance(self.meta, dict) else None
        if self.hunted_ref is None and (isinstance(hunted, str) or self.scenario_origin is not None):
            alias_model_file(self.scenario.rpartition(":")[0], self.scenario_origin or str(hunted))
        return fn

    def replay(
        self, *, check: bool = True, observer: Callable[[Any, Any], None] | None = None, notes: bool = False
    ) -> RunOutcome:
        """Run the scenario again under the stored choices.

        With ``check``, a run that takes a different path raises
        :class:`ReplayDivergence` naming the first divergent step in words.
        ``observer(world, last_record)`` is called at every scheduling point
        (reports snapshot model state with it); it must not change the run.
        ``notes=True`` records what happened inside the steps (the same run).
        """
        if self.copy_file is None or self.hunted_ref is not None:
            out = self._run(observer, notes)
        else:  # the report folder's copy: name the files beside the hunted one that this folder lacks
            with watching(self.copy_file.parent) as missing:
                try:
                    out = self._run(observer, notes)
                except Exception:
                    if missing:
                        raise TraceFileError(self._missing_beside(missing)) from None
                    raise
            if missing and self.divergence(out) is not None:
                raise TraceFileError(self._missing_beside(missing))
        if check:
            self._check_same(out)
        return out

    def _run(self, observer: Callable[[Any, Any], None] | None, notes: bool) -> RunOutcome:
        fn = self._scenario_fn()
        return run_once(fn, self._chooser(), params=self.params, limits=self.limits, observer=observer,
                        faults=self.faults, notes=notes)

    def _chooser(self) -> Any:
        """What replays this run: its plan (the recorded run's actions wherever an operator process takes part), or
        its recorded decisions."""
        if self.plan is None:
            return ReplayChooser(self.choices, self.trace)
        return PlanReplayChooser(self.plan, self.choices, self.trace)

    def _missing_beside(self, missing: Mapping[str, None]) -> str:
        assert self.copy_file is not None and self.scenario_sha256 is not None
        if self.scenario_origin is None:  # an older trace: where it was hunted is known only relative to that folder
            hunted = self.meta.get("hunted_file")
            return missing_beside(list(missing), self.copy_file, None, self.scenario_sha256,
                                  hunted if isinstance(hunted, str) else None)
        return missing_beside(list(missing), self.copy_file, self.hunted_path, self.scenario_sha256)

    def compares_digests(self, out: RunOutcome) -> bool:
        """Whether a replay ``out`` must have this trace's digest, byte for byte: every run inside the world does.

        A run with operator processes outside the world (``ExternalOperator``: it waited for them,
        ``outside_seconds``) is compared at the API boundary instead: the same actions in the same order, the same data
        choices and faults, to the same violation (:meth:`divergence`), since their threads run on the real clock (an
        action may stand at another position among those offered: which requests had arrived is the OS's timing). A
        trace of an older format is compared that way too (its times were rounded otherwise).
        """
        return not out.outside_seconds and self.format_version == FORMAT_VERSION

    def _check_same(self, out: RunOutcome) -> None:
        found = self.divergence(out)
        if found is not None:
            step, why = found
            raise ReplayDivergence(why, step=step)

    def divergence(self, out: RunOutcome) -> tuple[int, str] | None:
        """Where and why the run ``out`` left this trace: ``(step, "diverged at step N because ...")``, or None.

        When the scenario's defaults changed since the trace was recorded, the
        reason names each changed parameter: that is the likeliest cause, and the
        step alone would not point to it.
        """
        old, new = self.trace, out.trace
        why: str | None = None
        step = 0
        exact = self.compares_digests(out)
        for i in range(min(len(old), len(new))):
            if exact and old[i].to_json() != new[i].to_json() and old[i].same_action(new[i]) and \
                    old[i].choice == new[i].choice:  # the same action taken, but not the same step: another digest
                step, why = old[i].step, _another_step(old, new, i)
                break
            # (outside the world, letting time pass is the same action whatever waited: arrivals are the OS's)
            same = old[i].same_action(new[i]) or (not exact and old[i].kind == new[i].kind == "wait")
            if not same or (old[i].choice != new[i].choice and (exact or old[i].kind in _VALUED)):
                step = old[i].step
                why = (
                    f"diverged at step {step} because the trace recorded '{old[i].actor}: {old[i].label}' "
                    f"(choice {old[i].choice} of {old[i].enabled}) but the scenario now offers "
                    f"'{new[i].actor}: {new[i].label}' (choice {new[i].choice} of {new[i].enabled})"
                )
                break
        if why is None and (len(old) != len(new) or not self.violation.same_bug(out.violation)):
            step = min(len(old), len(new)) + 1
            now = out.violation.describe() if out.violation else "no violation"
            why = (
                f"diverged at step {step} because the trace ended after {len(old)} steps with "
                f"'{self.violation.describe()}' and the scenario now ends after {len(new)} steps with '{now}'"
            )
        if why is None:
            return None
        changed = self.changed_defaults()
        if changed:
            return step, (
                f"{why}; {'; '.join(changed)} since the trace was saved. Restore the default, or re-run the hunt "
                "to get a fresh counterexample."
            )
        if out.outside_seconds:  # a run with operator processes: their requests come on their own real-time schedule
            return step, (
                f"{why}. The run has programs outside the world (operator or test processes), whose requests arrive "
                "on their own real-time schedule, and this run left the recorded order there; a replay follows the "
                "recorded actions and waits for a request not arrived, up to 5 s at one step. `replay --runs N` says "
                "how often it reproduces; on a loaded machine, try again with fewer other processes beside it."
            )
        if self.scenario_sha256 is not None:  # the file was checked at load: it is the very file hunted
            return step, (
                f"{why}. The scenario file is the one this trace was hunted with (its SHA-256 matches), so the "
                "trace itself was changed after the hunt (edited, its digest recomputed), or the model depends on "
                "something outside the harness (the wall clock, a file it reads, a global left from another run); "
                "re-run the hunt to get a fresh counterexample."
            )
        return step, (f"{why}. The scenario changed since this trace was saved, or the trace was edited after the "
                      "hunt; re-run the hunt to get a fresh counterexample.")

    def changed_defaults(self) -> list[str]:
        """Each recorded default that the scenario no longer has, in words (empty when unknown or unchanged)."""
        if self.defaults is None:
            return []
        try:
            fn = self._scenario_fn()
        except HarnessError:
            return []
        now = scenario_defaults(fn, self.params)
        out = []
        for name in sorted(set(self.defaults) | set(now)):
            if name not in now:
                out.append(f"the parameter '{name}' (recorded default {self.defaults[name]!r}) no longer has a default")
            elif name not in self.defaults:
                out.append(f"the parameter '{name}' is new (default {now[name]!r})")
            elif now[name] != self.defaults[name]:
                out.append(f"the default of parameter '{name}' changed from {self.defaults[name]!r} to {now[name]!r}")
        return out

    # ------------------------------------------------------------- program
    def program(self, *, context: int = 1) -> str:
        """The minimal step program: the plan, then the steps of the story's causal slice.

        Canonical stretches fold into "... N canonical steps ...", but never a
        step of the causal slice (:meth:`story`: what wrote what the violated
        oracle read, back to the plan's entries), a fault, or an action a plan
        entry names. A hold is said once, in its plan line: the steps it spans
        carry no "instead of" each (that read as one deviation per step). A
        counterexample without a plan (positional choices) marks its deviations
        and keeps ``context`` steps around each.
        """
        params = {**(self.defaults or {}), **self.params}
        lines = [f"scenario {self.scenario}({_fmt_params(params)})"]
        # the plan is what the counterexample *is*; the marked steps below are where it acted
        lines.extend(f"  plan: {e.describe()}" for e in self.plan or ())
        told = self.told()
        recs = presented(told, told.notes, plan=self.plan is not None)
        story = self.story()
        steps = self.story_steps() | story.causal
        keep: set[int] = set()
        for i, r in enumerate(recs):
            if r.step in steps:
                keep.add(i)
            if r.choice and self.plan is None:
                keep.update(range(max(0, i - context), min(len(recs), i + context + 1)))
        keep.update(range(max(0, len(recs) - 2), len(recs)))
        order = sorted(keep)
        cut = 0
        if self.violation.kind in ("runaway", "livelock") and len(order) > _LOOP_LINES:
            # a run that never ends: its first iterations say what loops; 200,000 lines say nothing more
            cut, order = len(recs) - order[_LOOP_LINES - 1] - 1, order[:_LOOP_LINES]
        last = -1
        for i in order:
            if last >= 0 and i > last + 1:
                lines.append(f"      ... {i - last - 1} canonical steps ...")
            elif last < 0 and i > 0:
                lines.append(f"      ... {i} canonical steps ...")
            lines.append("  " + recs[i].describe())
            last = i
        if cut:
            lines.append(f"      ... the loop goes on for {cut:,} more steps (a runaway: its first iterations are shown)")
        lines.append(f"  {story.verdict}")
        return "\n".join(lines)

    def story_steps(self) -> set[int]:
        """The steps :meth:`program` never folds (see there), by step number."""
        idents: set[tuple[str, str, str | None]] = set()
        for e in self.plan or ():
            for ident in (getattr(e, "what", None), getattr(e, "until", None), getattr(e, "at", None)):
                if isinstance(ident, Ident):
                    idents.add((ident.actor, ident.label, ident.key))
        text = f"{self.violation.message}\n{self.violation.name}"
        named: dict[str, bool] = {}
        out: set[int] = set()
        for r in self.trace:
            if (r.choice and self.plan is None) or r.kind == "fault" or (r.actor, identity_label(r.label), r.key) in idents:
                out.add(r.step)
            elif r.key is not None:
                hit = named.get(r.key)
                if hit is None:
                    hit = named[r.key] = _names(text, r.key)
                if hit:
                    out.add(r.step)
        return out

    # ------------------------------------------------------------ save/load
    def to_json(self) -> dict[str, Any]:
        out = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "scenario": self.scenario,
            "params": self.params,
            "defaults": self.defaults,
            "strategy": self.strategy,
            "seed": self.seed,
            "limits": {"max_steps": self.limits.max_steps, "max_time": self.limits.max_time,
                       "max_steps_per_instant": self.limits.max_steps_per_instant},
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
        if self.scenario_sha256 is not None:
            out[SCENARIO_SHA256] = self.scenario_sha256
        if self.scenario_origin is not None:
            out[SCENARIO_ORIGIN] = self.scenario_origin
        out["checksum"] = checksum(out)
        # for a reader of the file only: load() never reads them back (a replay tells the run afresh), so they
        # are outside the checksum and nothing in them can reach a replay
        out["notes"] = self.told().notes_json()
        return out

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the counterexample as JSON, atomically (temp file + rename)."""
        target = Path(path)
        raw = self.to_json()
        raw["scenario"] = portable_ref(self.scenario, target.parent)  # a file: relative to the trace's folder
        raw["checksum"] = checksum(raw)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(raw, indent=1, sort_keys=True)
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
        """Read a saved counterexample; any defect raises a one-paragraph :class:`TraceFileError`.

        The file is untrusted: it is read only if it is a regular, readable file of
        at most :data:`MAX_TRACE_BYTES`; it must be UTF-8 JSON of a known format
        version whose ``checksum`` matches. Loading never imports or runs anything.
        """
        p = Path(path)
        hint = (
            "A trace file is the JSON written by `python -m harness hunt` or Counterexample.save(); "
            "re-run the hunt to produce a fresh one."
        )
        raw = _read_json(p, hint)
        if not isinstance(raw, dict) or raw.get("format") != FORMAT_NAME:
            raise TraceFileError(f"{p} is JSON but not a race-harness trace (no \"format\": \"{FORMAT_NAME}\"). {hint}")
        if raw.get("version") not in READABLE_VERSIONS or isinstance(raw.get("version"), bool):
            raise TraceFileError(
                f"{p} has trace format version {raw.get('version')!r}; this harness reads version {FORMAT_VERSION}. {hint}"
            )
        if "checksum" not in raw:
            raise TraceFileError(
                f"{p} has no checksum, so it cannot be told apart from an edited or damaged file (it was written "
                f"by an older race-harness, or by hand). {hint}"
            )
        if raw["checksum"] != checksum(raw):
            raise TraceFileError(
                f"{p} was edited or damaged: its checksum does not match its contents (one of "
                f"{', '.join(SIGNED_FIELDS)} changed after it was written). {hint}"
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
                limits=Limits(int(lim.get("max_steps", Limits.max_steps)), float(lim.get("max_time", Limits.max_time)),
                              int(lim.get("max_steps_per_instant", Limits.max_steps_per_instant))),
                proved_minimal=raw.get("proved_minimal"),
                meta=dict(raw.get("meta") or {}),
                path=str(path),
                plan=None if raw.get("plan") is None else tuple(entry_from_json(e) for e in raw["plan"]),
                faults=None if raw.get("faults") is None else frozenset(str(k) for k in raw["faults"]),
                proof=str(raw.get("proof") or ""),
                defaults=None if raw.get("defaults") is None else dict(raw["defaults"]),
                scenario_sha256=None if raw.get(SCENARIO_SHA256) is None else str(raw[SCENARIO_SHA256]),
                scenario_origin=None if raw.get(SCENARIO_ORIGIN) is None else str(raw[SCENARIO_ORIGIN]),
                format_version=int(raw["version"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TraceFileError(f"{p} is missing or has a malformed field ({type(exc).__name__}: {exc}). {hint}") from None
        if any(c < 0 for c in cx.choices):
            raise TraceFileError(f"{p} holds negative choices, which no run can take. {hint}")
        if raw.get("digest") != cx.digest():
            raise TraceFileError(f"{p} was edited or damaged: its digest does not match its trace. {hint}")
        try:
            where, qualname = split_ref(cx.scenario)
        except TraceFileError as exc:
            raise TraceFileError(f"{p}: {exc}. {hint}") from None
        if where.endswith(".py") or "/" in where or "\\" in where:  # a file, stored relative to the trace's folder
            file = (p.parent / where).resolve()
            ref = f"{file.as_posix()}:{qualname}"
            if ref not in _NAMED:  # a scenario this process named itself (a hunt's own shards) is not the file's say
                if cx.scenario_sha256 is not None:  # a hunt's copy: run the hunted file where it was hunted, if it can
                    hunted, cx.hunted_path = hunted_place(cx.scenario_origin, cx.meta.get("hunted_file"),
                                                          cx.scenario_sha256)
                    cx.copy_file = file
                    if hunted is not None and hunted.resolve() != file:
                        cx.hunted_ref = f"{hunted.as_posix()}:{qualname}"
                if cx.hunted_ref is None:
                    _check_scenario_file(p, where, file, cx.scenario_sha256, hint)
            cx.scenario = ref
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
        fn = scenario if not isinstance(scenario, str) else _NAMED.get(scenario)
        return cls(
            ref, dict(params), _trim(out.choices), out.trace, out.violation, strategy, seed, limits,
            plan=plan, faults=faults, defaults=None if fn is None else scenario_defaults(fn, params),
        )


def _check_scenario_file(p: Path, where: str, file: Path, sha256: str | None, hint: str) -> None:
    """A trace may name only a file under its own folder or the current one, and the very file it was hunted with.

    The trace is untrusted: without this rule it could run any marked ``.py`` on
    the disk by absolute path or ``../``. A hunt copies the scenario file next to
    its trace (so a copied report folder replays), and records the copy's SHA-256.
    """
    allowed = [p.parent.resolve(), Path.cwd().resolve()]
    if not any(file.is_relative_to(folder) for folder in allowed):
        raise TraceFileError(
            f"{p} names the scenario file {where!r} ({file}), which lies outside the trace's folder "
            f"({allowed[0]}) and the current folder, so it was not read: a trace may name a file under one of "
            "those, an installed module or a registered race. Copy the scenario file next to the trace, or replay "
            "from a folder that holds it."
        )
    if sha256 is None or not file.is_file():
        return  # a missing file is refused by the replay, with its own words
    try:
        now = hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError as exc:
        raise TraceFileError(f"{p}: the scenario file {file} cannot be read ({exc.strerror or exc}). {hint}") from None
    if now != sha256:
        raise TraceFileError(
            f"{p} was hunted with another version of {file.name}: the file's SHA-256 is not the one the trace "
            f"recorded, so a replay would not run what was hunted. Restore the file, or re-run the hunt. {hint}"
        )


def _another_step(old: Trace, new: Trace, i: int) -> str:
    """Step ``i`` took the recorded action with the recorded choice, and yet differs (time, resourceVersion,
    enabled set, displaced action): the replay's digest is not the trace's, which a replay inside the world never
    allows (a trace is its digest: same choices, same trace byte for byte)."""
    a, b = old[i].to_json(), new[i].to_json()
    fields = {"time": "virtual time", "rv": "resourceVersion", "enabled": "number of enabled actions",
              "instead": "displaced action", "step": "step number"}
    what = " and ".join(name for key, name in fields.items() if a.get(key) != b.get(key))
    recorded, took = (" ".join(t[i].describe().split()) for t in (old, new))
    return (f"diverged at step {old[i].step} because the trace recorded '{recorded}' but the replay took '{took}': "
            f"the same action, at another {what} (the replay's digest {new.digest()[:16]} is not the trace's "
            f"{old.digest()[:16]})")


def _read_json(p: Path, hint: str) -> Any:
    """The JSON value in file ``p``, or one :class:`TraceFileError` per way a path can fail to be a trace."""
    try:
        st = p.stat()
    except FileNotFoundError:
        raise TraceFileError(f"{p} does not exist. {hint}") from None
    except OSError as exc:
        raise TraceFileError(f"{p} cannot be read ({exc.strerror or type(exc).__name__}). {hint}") from None
    if stat.S_ISDIR(st.st_mode):
        raise TraceFileError(f"{p} is a folder, not a trace file; name one of the .json files in it. {hint}")
    if not stat.S_ISREG(st.st_mode):
        raise TraceFileError(f"{p} is not a regular file (a device, pipe or socket). {hint}")
    if st.st_size > MAX_TRACE_BYTES:
        raise TraceFileError(
            f"{p} is {st.st_size / 2**20:,.0f} MiB, larger than any trace the harness writes "
            f"(at most {MAX_TRACE_BYTES // 2**20} MiB), so it was not read. {hint}"
        )
    try:
        with p.open("rb") as fh:
            data = fh.read(MAX_TRACE_BYTES + 1)
    except PermissionError:
        raise TraceFileError(f"{p} cannot be read: permission denied (check its mode and owner). {hint}") from None
    except OSError as exc:
        raise TraceFileError(f"{p} cannot be read ({exc.strerror or type(exc).__name__}). {hint}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceFileError(f"{p} is not UTF-8 text (byte {exc.start} is not valid UTF-8). {hint}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFileError(
            f"{p} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); it may be truncated. {hint}"
        ) from None
    except RecursionError:
        raise TraceFileError(f"{p} is JSON nested too deeply to be a trace. {hint}") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise TraceFileError(f"{p} is not valid trace JSON ({exc}). {hint}") from None


def _trim(choices: list[int]) -> list[int]:
    end = len(choices)
    while end and choices[end - 1] == 0:
        end -= 1
    return choices[:end]


def _names(text: str, key: str) -> bool:
    """Whether ``text`` names the object ``key`` (``"Kind ns/name"`` or a bare name) by its whole name.

    The rule of the report's object picking (``harness/report/_text.py``): ``test-a``
    is not named by ``test-a/wl1``.
    """
    name = key.split(" ", 1)[1] if " " in key else key
    return bool(name) and re.search(r"(?<![\w./-])" + re.escape(name) + r"(?![\w/-]|\.\w)", text) is not None


def _fmt_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())
