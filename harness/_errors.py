"""The harness's error hierarchy.

Every error the harness raises on purpose derives from :class:`HarnessError`, and
its message ends with what to do about it::

    HarnessError
     +-- UsageError          bad input: an unknown race, option, budget or strategy
     +-- TraceFileError      a replay file that is missing, malformed or truncated
     +-- ReplayDivergence    a saved trace no longer matches the scenario it replays
     +-- SimulationError     misuse of the runtime from inside a scenario
          +-- NotInSimulation  a harness primitive awaited outside a running World
          +-- OutsideTheCluster  an operator's request to a host the world does not serve
          +-- BlockingClient     a synchronous client called where it would block the whole world
          +-- OperatorNotLoaded  an operator's code (kopf handlers) that could not be found or imported

Verdicts of a run (oracle violated, deadlock, runaway, ...) are *results*, not
exceptions: they are :class:`harness.Violation` values carried by a counterexample.
"""

from __future__ import annotations

#: The audit event (``sys.audit``) a part of the harness raises when a file a scenario named is not there and the
#: part looked for it without opening it (an existence check): ``(path,)``. Python's own ``open`` and process
#: events cover the rest; a replay of a report folder's copy of a scenario listens to them all, to name the file
#: the folder lacks (``harness/explore/_beside.py``).
FILE_NOT_FOUND_EVENT = "race_harness.file_not_found"


class HarnessError(Exception):
    """Base class of every error the harness raises on purpose."""


class UsageError(HarnessError):
    """Bad input from a user: the message names the accepted form."""


class TraceFileError(HarnessError):
    """A replay file cannot be read as a race-harness trace."""


class ReplayDivergence(HarnessError):
    """Replaying a saved trace took a different path than the one recorded."""

    def __init__(self, message: str, *, step: int) -> None:
        super().__init__(message)
        self.step = step


class SimulationError(HarnessError):
    """A scenario used the simulation runtime in a way it cannot support."""


class NotInSimulation(SimulationError):
    """A harness primitive was used outside a running :class:`World`."""


class OutsideTheCluster(SimulationError):
    """An operator's request to a host other than the cluster's apiserver: nothing else exists under the world."""


class BlockingClient(SimulationError):
    """A synchronous client (the official ``kubernetes`` client) called from the world's own thread, not a thread of
    the operator's executor: it would block every actor while it waits for an answer no actor could give."""


class OperatorNotLoaded(SimulationError):
    """The code a scenario runs as an operator (a kopf handlers file or module) could not be found or imported:
    the scenario is wrong, not the operator's behaviour."""
