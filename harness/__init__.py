"""race-harness: reproduce, find and explain race conditions in Kubernetes controllers.

Layers (each imports only the ones below it)::

    races/*                 models of real controllers, buggy and fixed
    harness.cli / plugin    python -m harness, the pytest plugin
    harness.report          HTML race reports
    harness.explore         strategies, shrinking, minimality, counterexamples
    harness.operators       operators as written: in process, kopf, OS processes
    harness.kube            fake apiserver, informers, work queues, GC, expectations
    harness.sim             deterministic runtime: actors, virtual time, traces

This module re-exports the public API; everything else is private.

The runtime (``harness.sim``, which imports Trio) and the search layer load on
first use of one of their names (PEP 562 ``__getattr__``), so importing
``harness.pytest_plugin`` (a ``pytest11`` entry point) keeps ``pytest --help``
fast; type checkers see the same names through the ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import sys

if sys.argv[:1] == ["-m"]:  # `python -m harness` is importing its package: Ctrl-C now is one line and 130
    # `_signal` and `os` are loaded with the interpreter; `signal` is not (its enums take a while to build)
    import _signal  # type: ignore[import-not-found]  # no stubs: the C half of `signal`
    import os as _os

    def _startup_interrupt(signum: int, frame: object) -> None:
        """Until ``harness.__main__`` hands over (``_interrupt.end_of_startup``): no traceback from an import."""
        _os.write(2, b"python -m harness: interrupted while starting; nothing was done\n")
        _os._exit(143 if signum == _signal.SIGTERM else 130)

    _signal.signal(_signal.SIGINT, _startup_interrupt)  # first thing, before any import of ours
    _signal.signal(_signal.SIGTERM, _startup_interrupt)

import importlib
import types
from typing import TYPE_CHECKING, Any

from ._errors import HarnessError as HarnessError
from ._errors import NotInSimulation as NotInSimulation
from ._errors import ReplayDivergence as ReplayDivergence
from ._errors import SimulationError as SimulationError
from ._errors import TraceFileError as TraceFileError
from ._errors import UsageError as UsageError

if TYPE_CHECKING:
    from .explore import PCT as PCT
    from .explore import Budget as Budget
    from .explore import Canonical as Canonical
    from .explore import Counterexample as Counterexample
    from .explore import Exhaustive as Exhaustive
    from .explore import Hypothesis as Hypothesis
    from .explore import Portfolio as Portfolio
    from .explore import Race as Race
    from .explore import Random as Random
    from .explore import Replay as Replay
    from .explore import Result as Result
    from .explore import explore as explore
    from .explore import run_plan as run_plan
    from .explore import scenario as scenario
    from .report import write_counterexample_html as write_counterexample_html
    from .report import write_index as write_index
    from .sim import Event as Event
    from .sim import Fault as Fault
    from .sim import Hold as Hold
    from .sim import Ident as Ident
    from .sim import Limits as Limits
    from .sim import Lock as Lock
    from .sim import Note as Note
    from .sim import Pick as Pick
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

_LAZY: dict[str, str] = {
    "PCT": "explore",
    "Budget": "explore",
    "Counterexample": "explore",
    "Exhaustive": "explore",
    "Hypothesis": "explore",
    "Race": "explore",
    "Random": "explore",
    "Replay": "explore",
    "Result": "explore",
    "explore": "explore",
    "run_plan": "explore",
    "scenario": "explore",
    "Portfolio": "explore",
    "Canonical": "explore",
    "Hold": "sim",
    "Fault": "sim",
    "Pick": "sim",
    "Ident": "sim",
    "Event": "sim",
    "Limits": "sim",
    "Note": "sim",
    "Lock": "sim",
    "Queue": "sim",
    "Record": "sim",
    "Trace": "sim",
    "Violation": "sim",
    "World": "sim",
    "run_once": "sim",
    "RaceMachine": "stateful",
    "booleans": "stateful",
    "integers": "stateful",
    "invariant": "stateful",
    "precondition": "stateful",
    "rule": "stateful",
    "sampled_from": "stateful",
    "write_counterexample_html": "report",
    "write_index": "report",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


class _Package(types.ModuleType):
    """Keeps ``harness.explore`` the function when the ``harness.explore`` subpackage loads.

    The import system binds a loaded subpackage on its parent (``setattr``); with
    eager imports ``from .explore import explore`` re-bound the name right after,
    and this keeps that meaning now that the import is lazy.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "explore" and isinstance(value, types.ModuleType):
            value = value.explore
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


from ._version import __version__ as __version__  # noqa: E402  (after the lazy facade, as before)

__all__ = [
    "PCT", "Budget", "Counterexample", "Event", "Exhaustive", "HarnessError", "Hypothesis", "Limits", "Lock",
    "NotInSimulation", "Queue", "Random", "Record", "Replay", "ReplayDivergence", "Result", "SimulationError",
    "Trace", "TraceFileError", "UsageError", "Violation", "World", "explore", "run_once",
    "RaceMachine", "rule", "invariant", "precondition", "integers", "sampled_from", "booleans",
    "Race", "scenario",
    "Portfolio", "Canonical", "Hold", "Fault", "Pick", "Ident", "Note", "run_plan",
    "write_counterexample_html", "write_index",
]
