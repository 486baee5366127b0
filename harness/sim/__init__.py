"""The runtime: one World, two clocks (virtual time under the deterministic scheduler, or the real clock
under Trio's own), actors, choices, traces. No Kubernetes here."""

from ._actors import alias_model_file as alias_model_file
from ._asyncio import WorldLoop as WorldLoop
from ._asyncio import model_line_here as model_line_here
from ._asyncio import running_world_loop as running_world_loop
from ._choice import Chooser as Chooser
from ._choice import Option as Option
from ._choosers import ConvertingChooser as ConvertingChooser
from ._choosers import FaultPlacement as FaultPlacement
from ._choosers import PCTChooser as PCTChooser
from ._choosers import PlanChooser as PlanChooser
from ._choosers import PlanReplayChooser as PlanReplayChooser
from ._choosers import RandomChooser as RandomChooser
from ._choosers import ReplayChooser as ReplayChooser
from ._clocks import EPOCH as EPOCH
from ._clocks import read_world_clocks as read_world_clocks
from ._clocks import real_monotonic as real_monotonic
from ._driver import run_batch as run_batch
from ._driver import run_once as run_once
from ._lockstep import call_in_world as call_in_world
from ._lockstep import in_lockstep_thread as in_lockstep_thread
from ._misuse import ending as ending
from ._misuse import misuse as misuse
from ._misuse import model_line as model_line
from ._outcome import RUNAWAY_KINDS as RUNAWAY_KINDS
from ._outcome import VERDICTS as VERDICTS
from ._outcome import Limits as Limits
from ._outcome import RunOutcome as RunOutcome
from ._outcome import Violation as Violation
from ._plan import Entry as Entry
from ._plan import Fault as Fault
from ._plan import Hold as Hold
from ._plan import Ident as Ident
from ._plan import Pick as Pick
from ._plan import canonical_plan as canonical_plan
from ._plan import entry_from_json as entry_from_json
from ._plan import identity_label as identity_label
from ._primitives import Event as Event
from ._primitives import Lock as Lock
from ._primitives import Queue as Queue
from ._realtime import LiveRepeat as LiveRepeat
from ._realtime import RealClock as RealClock
from ._realtime import repeat_live as repeat_live
from ._realtime import run_live as run_live
from ._time import TimerHandle as TimerHandle
from ._trace import FORMAT_VERSION as FORMAT_VERSION
from ._trace import Access as Access
from ._trace import Note as Note
from ._trace import Record as Record
from ._trace import Trace as Trace
from ._world import World as World

__all__ = [
    "FORMAT_VERSION", "Access", "Note", "RUNAWAY_KINDS", "VERDICTS", "Chooser", "Event", "Limits", "Lock", "Option",
    "PCTChooser", "Queue",
    "PlanReplayChooser", "RandomChooser", "Record", "ReplayChooser", "RunOutcome", "TimerHandle", "Trace", "Violation", "World",
    "WorldLoop", "running_world_loop", "model_line_here", "call_in_world", "in_lockstep_thread", "alias_model_file",
    "run_batch", "run_once", "LiveRepeat", "RealClock", "repeat_live", "run_live",
    "ConvertingChooser", "FaultPlacement", "PlanChooser", "Entry", "Fault", "Hold", "Ident", "Pick",
    "canonical_plan", "entry_from_json", "identity_label", "EPOCH", "read_world_clocks", "real_monotonic",
    "ending", "misuse", "model_line",
]
