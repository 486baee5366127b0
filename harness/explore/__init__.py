"""Search over interleavings: strategies, shrinking, minimality, counterexamples."""

from ._counterexample import Counterexample as Counterexample
from ._counterexample import resolve_scenario as resolve_scenario
from ._counterexample import scenario_ref as scenario_ref
from ._explore import DEFAULT_STRATEGY as DEFAULT_STRATEGY
from ._explore import PCT as PCT
from ._explore import STRATEGIES as STRATEGIES
from ._explore import STRATEGY_FORMS as STRATEGY_FORMS
from ._explore import Budget as Budget
from ._explore import Canonical as Canonical
from ._explore import Exhaustive as Exhaustive
from ._explore import Hypothesis as Hypothesis
from ._explore import Portfolio as Portfolio
from ._explore import Random as Random
from ._explore import Replay as Replay
from ._explore import Result as Result
from ._explore import Strategy as Strategy
from ._explore import describe_faults as describe_faults
from ._explore import explore as explore
from ._explore import make_strategy as make_strategy
from ._explore import parse_faults as parse_faults
from ._explore import prove_found as prove_found
from ._explore import read_plan as read_plan
from ._explore import run_plan as run_plan
from ._scenarios import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from ._scenarios import Race as Race
from ._scenarios import registered_races as registered_races
from ._scenarios import scenario as scenario

__all__ = [
    "PCT", "STRATEGIES", "Budget", "Counterexample", "Exhaustive", "Hypothesis", "Random", "Replay", "Result",
    "Strategy", "explore", "make_strategy", "resolve_scenario", "scenario_ref",
    "ENTRY_POINT_GROUP", "Race", "registered_races", "scenario",
    "DEFAULT_STRATEGY", "STRATEGY_FORMS", "Canonical", "Portfolio", "describe_faults", "parse_faults",
    "read_plan", "run_plan",
]
