"""What a run comes to: its :class:`Limits`, the :class:`Violation` that ended it and the :class:`RunOutcome`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._trace import Trace


@dataclass(frozen=True)
class Limits:
    """When a run is a runaway rather than slow: step count, virtual time, and steps at one instant.

    ``max_steps_per_instant``: this many consecutive steps without virtual
    time moving is a livelock (a requeue after a duration that rounds to
    nothing, two controllers undoing each other's writes at once): its own
    verdict, never a finding of the model's oracle.
    """

    max_steps: int = 200_000
    max_time: float = 1_000_000.0
    max_steps_per_instant: int = 20_000


@dataclass(frozen=True)
class Violation:
    """Why a run failed, worded for a person; ``kind`` is one of :data:`VERDICTS`."""

    kind: str
    name: str
    message: str
    step: int
    time: float
    actor: str | None = None

    def describe(self) -> str:
        return f"{VERDICTS[self.kind]}: {self.message}"

    def same_bug(self, other: Violation | None) -> bool:
        return other is not None and (self.kind, self.name) == (other.kind, other.name)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "message": self.message,
            "step": self.step,
            "time": round(self.time, 9),
            "actor": self.actor,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Violation:
        return cls(
            kind=str(raw["kind"]),
            name=str(raw["name"]),
            message=str(raw["message"]),
            step=int(raw["step"]),
            time=float(raw["time"]),
            actor=None if raw.get("actor") is None else str(raw["actor"]),
        )


VERDICTS: dict[str, str] = {
    "oracle": "oracle violated",
    "actor-raised": "actor raised",
    "crashed": "the operator crashed",
    "deadlock": "deadlock",
    "blocked-outside": "actor blocked outside the harness",
    "no-yield": "actor never yielded",
    "misuse": "harness misused",
    "runaway": "runaway",
    "livelock": "livelock",
    "interrupted": "interrupted",
}

#: verdicts that say the run never ended, not that the model's oracle broke
RUNAWAY_KINDS = frozenset({"runaway", "livelock"})


@dataclass
class RunOutcome:
    """Everything one run produced."""

    trace: Trace
    violation: Violation | None
    end_time: float
    peaks: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False

    #: every decision of the run in order (schedule, data and fault), for positional replay
    choices: list[int] = field(default_factory=list)
    #: fault points the run passed (kind -> count), for strategies that place faults
    fault_points: dict[str, int] = field(default_factory=dict)
    #: the widest window (seconds an action could be postponed) seen in the run
    max_window: float = 0.0
    #: real seconds the scheduler waited for programs outside the world (``ExternalOperator``); 0: none ran
    outside_seconds: float = 0.0
    #: faults the run injected (kind -> count): a search's line says how many its runs met, not only which it asked
    faults_injected: dict[str, int] = field(default_factory=dict)

    @property
    def deviations(self) -> int:
        return self.trace.deviations

    @property
    def steps(self) -> int:
        return self.trace.steps
