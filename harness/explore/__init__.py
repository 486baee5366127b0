"""Search over interleavings: strategies, shrinking, minimality, counterexamples."""

from ._counterexample import Counterexample as Counterexample
from ._counterexample import resolve_scenario as resolve_scenario
from ._counterexample import scenario_ref as scenario_ref
from ._explore import explore as explore
from ._explore import run_plan as run_plan
from ._faults import describe_faults as describe_faults
from ._faults import parse_faults as parse_faults
from ._minimum import prove_found as prove_found
from ._plans import read_plan as read_plan
from ._result import Result as Result
from ._runner import Budget as Budget
from ._scenarios import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from ._scenarios import Race as Race
from ._scenarios import registered_races as registered_races
from ._scenarios import scenario as scenario
from ._scenarios import skipped_races as skipped_races
from ._strategies import DEFAULT_STRATEGY as DEFAULT_STRATEGY
from ._strategies import PCT as PCT
from ._strategies import STRATEGIES as STRATEGIES
from ._strategies import STRATEGY_FORMS as STRATEGY_FORMS
from ._strategies import Canonical as Canonical
from ._strategies import Exhaustive as Exhaustive
from ._strategies import Hypothesis as Hypothesis
from ._strategies import Portfolio as Portfolio
from ._strategies import Random as Random
from ._strategies import Replay as Replay
from ._strategies import Strategy as Strategy
from ._strategies import make_strategy as make_strategy

__all__ = [
    "PCT", "STRATEGIES", "Budget", "Counterexample", "Exhaustive", "Hypothesis", "Random", "Replay", "Result",
    "Strategy", "explore", "make_strategy", "resolve_scenario", "scenario_ref",
    "ENTRY_POINT_GROUP", "Race", "registered_races", "skipped_races", "scenario",
    "DEFAULT_STRATEGY", "STRATEGY_FORMS", "Canonical", "Portfolio", "describe_faults", "parse_faults",
    "read_plan", "run_plan",
]
