"""race-harness: reproduce, find and explain race conditions in Kubernetes controllers.

Layers (each imports only the ones below it)::

    races/*                 models of real controllers, buggy and fixed
    harness.cli / plugin    python -m harness, the pytest plugin
    harness.report          HTML race reports
    harness.explore         strategies, shrinking, minimality, counterexamples
    harness.kube            fake apiserver, informers, work queues, GC, expectations
    harness.sim             deterministic runtime: actors, virtual time, traces

This module re-exports the public API; everything else is private.
"""

from ._errors import HarnessError as HarnessError
from ._errors import NotInSimulation as NotInSimulation
from ._errors import ReplayDivergence as ReplayDivergence
from ._errors import SimulationError as SimulationError
from ._errors import TraceFileError as TraceFileError
from ._errors import UsageError as UsageError
from .explore import PCT as PCT
from .explore import Budget as Budget
from .explore import Counterexample as Counterexample
from .explore import Exhaustive as Exhaustive
from .explore import Hypothesis as Hypothesis
from .explore import Random as Random
from .explore import Replay as Replay
from .explore import Result as Result
from .explore import explore as explore
from .sim import Event as Event
from .sim import Limits as Limits
from .sim import Lock as Lock
from .sim import Queue as Queue
from .sim import Record as Record
from .sim import Trace as Trace
from .sim import Violation as Violation
from .sim import World as World
from .sim import run_once as run_once
from .stateful import RaceMachine as RaceMachine
from .stateful import booleans as booleans
from .stateful import integers as integers
from .stateful import invariant as invariant
from .stateful import precondition as precondition
from .stateful import rule as rule
from .stateful import sampled_from as sampled_from

__version__ = "0.1.0"

__all__ = [
    "PCT", "Budget", "Counterexample", "Event", "Exhaustive", "HarnessError", "Hypothesis", "Limits", "Lock",
    "NotInSimulation", "Queue", "Random", "Record", "Replay", "ReplayDivergence", "Result", "SimulationError",
    "Trace", "TraceFileError", "UsageError", "Violation", "World", "explore", "run_once",
    "RaceMachine", "rule", "invariant", "precondition", "integers", "sampled_from", "booleans",
]
