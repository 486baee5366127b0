"""The deterministic runtime: actors, virtual time, choices, traces. No Kubernetes here."""

from ._choosers import PCTChooser as PCTChooser
from ._choosers import RandomChooser as RandomChooser
from ._choosers import ReplayChooser as ReplayChooser
from ._live import LiveRepeat as LiveRepeat
from ._live import LiveWorld as LiveWorld
from ._live import repeat_live as repeat_live
from ._live import run_live as run_live
from ._trace import FORMAT_VERSION as FORMAT_VERSION
from ._trace import Record as Record
from ._trace import Trace as Trace
from ._world import VERDICTS as VERDICTS
from ._world import Chooser as Chooser
from ._world import Event as Event
from ._world import Limits as Limits
from ._world import Lock as Lock
from ._world import Option as Option
from ._world import Queue as Queue
from ._world import RunOutcome as RunOutcome
from ._world import TimerHandle as TimerHandle
from ._world import Violation as Violation
from ._world import World as World
from ._world import run_batch as run_batch
from ._world import run_once as run_once

__all__ = [
    "FORMAT_VERSION", "VERDICTS", "Chooser", "Event", "Limits", "Lock", "Option", "PCTChooser", "Queue",
    "RandomChooser", "Record", "ReplayChooser", "RunOutcome", "TimerHandle", "Trace", "Violation", "World",
    "run_batch", "run_once", "LiveRepeat", "LiveWorld", "repeat_live", "run_live",
]
