"""Models of real controller races, each with a buggy and a fixed variant."""

from ._registry import MODULES as MODULES
from ._registry import REGISTRY as REGISTRY
from ._registry import Race as Race

__all__ = ["MODULES", "REGISTRY", "Race"]
