"""Async stateful race tests: rules run inside the simulation as the user's actor."""

from ._machine import Domain as Domain
from ._machine import RaceMachine as RaceMachine
from ._machine import booleans as booleans
from ._machine import format_program as format_program
from ._machine import integers as integers
from ._machine import invariant as invariant
from ._machine import precondition as precondition
from ._machine import rule as rule
from ._machine import sampled_from as sampled_from

__all__ = [
    "Domain", "RaceMachine", "booleans", "format_program", "integers", "invariant", "precondition", "rule",
    "sampled_from",
]
