"""RaceMachine: Hypothesis-style stateful tests whose rules are async and run inside the simulation.

A machine is a class with ``async`` rules (user operations: scale a ReplicaSet,
delete a workload, start the next test case) and invariants. The harness runs
it as a scenario: ``setup()`` builds the cluster, then the *user* actor (the
scenario's main actor) performs a program of rules while controllers, informers
and timers interleave. Everything — how many rules, which rule, its arguments,
the interleavings between them and any faults — is a choice of the one stream
the strategy controls, so a failure shrinks as a whole: the minimal
counterexample is the shortest program with the fewest deviations.

We do not subclass or copy Hypothesis' ``RuleBasedStateMachine``: its rules
are synchronous and it owns the loop; here the loop is an actor in our world
and Hypothesis reaches it only through the strategy's draws.

Choice encoding: the program length is drawn first (0 = the empty program, the
canonical run), then each rule index among the rules whose precondition holds,
then each argument as an index into a finite domain (``integers``,
``sampled_from``, ``booleans``); index 0 is always the canonical value.
"""

from __future__ import annotations

import inspect
import unittest
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from ..sim import World

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Domain:
    """A finite argument domain; element 0 is the canonical value."""

    values: tuple[Any, ...]
    name: str = ""

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("an argument domain needs at least one value")


def integers(lo: int, hi: int) -> Domain:
    """``lo..hi`` inclusive; ``lo`` is canonical."""
    return Domain(tuple(range(lo, hi + 1)), f"integers({lo}, {hi})")


def sampled_from(values: Sequence[Any]) -> Domain:
    """One of ``values``; the first is canonical."""
    return Domain(tuple(values), f"sampled_from({list(values)!r})")


def booleans() -> Domain:
    return Domain((False, True), "booleans()")


@dataclass
class _RuleSpec:
    name: str
    fn: Callable[..., Awaitable[object]]
    args: dict[str, Domain] = field(default_factory=dict)
    precondition: Callable[[Any], bool] | None = None


def rule(**args: Domain) -> Callable[[F], F]:
    """Mark an ``async def`` method as a rule; keyword arguments give the argument domains."""

    def deco(fn: F) -> F:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"rule {fn.__name__} must be 'async def': rules run inside the simulation")
        fn.__race_rule__ = dict(args)  # type: ignore[attr-defined]
        return fn

    return deco


def precondition(check: Callable[[Any], bool]) -> Callable[[F], F]:
    """The rule is only chosen while ``check(machine)`` holds."""

    def deco(fn: F) -> F:
        fn.__race_precondition__ = check  # type: ignore[attr-defined]
        return fn

    return deco


def invariant(name: str | None = None) -> Callable[[F], F]:
    """Mark a method as an invariant, checked after every step of the run.

    It returns False or a message string, or raises AssertionError, to fail.
    """

    def deco(fn: F) -> F:
        fn.__race_invariant__ = name or fn.__name__  # type: ignore[attr-defined]
        return fn

    return deco


class RaceMachine:
    """Base class for async stateful race tests. Subclass, then use ``scenario`` or ``TestCase``."""

    #: every subclass is a scenario a trace file may name (the explore layer reads the mark, not this class)
    __race_scenario__: ClassVar[bool] = True

    #: upper bound on the number of rules in one program
    max_rules: ClassVar[int] = 4
    #: let the cluster settle (no enabled action but timers) between rules? (default: no)
    fixed: ClassVar[bool] = False
    #: default search budget of ``TestCase`` (runs of the default portfolio, capped by Hypothesis' max_examples)
    budget: ClassVar[int] = 300

    def __init__(self, world: World, **params: Any) -> None:
        self.world = world
        self.params = params

    async def setup(self) -> None:
        """Build the cluster and start the controllers (override)."""

    async def teardown(self) -> None:
        """After the program: e.g. register end-of-run oracles (override)."""

    # ------------------------------------------------------------ discovery
    @classmethod
    def rules(cls) -> list[_RuleSpec]:
        out: list[_RuleSpec] = []
        for name in _ordered_members(cls):
            fn = getattr(cls, name)
            spec = getattr(fn, "__race_rule__", None)
            if spec is not None:
                out.append(_RuleSpec(name, fn, spec, getattr(fn, "__race_precondition__", None)))
        return out

    @classmethod
    def invariants(cls) -> list[tuple[str, str]]:
        out = []
        for name in _ordered_members(cls):
            label = getattr(getattr(cls, name), "__race_invariant__", None)
            if label is not None:
                out.append((name, label))
        return out

    # ------------------------------------------------------------- scenario
    @classmethod
    async def scenario(cls, world: World, **params: Any) -> None:
        """The machine as a harness scenario: setup, then a chosen program of rules."""
        machine = cls._make(world, params)
        await machine.setup()
        for attr, label in cls.invariants():
            world.invariant(getattr(machine, attr), label)
        rules = cls.rules()
        if not rules:
            raise TypeError(f"{cls.__name__} has no @rule methods")
        length = world.choose("program length", cls.max_rules + 1)
        for _ in range(length):
            enabled = [r for r in rules if r.precondition is None or r.precondition(machine)]
            if not enabled:
                break
            spec = enabled[world.choose("rule", len(enabled))]
            kwargs = {a: d.values[world.choose(f"{spec.name}.{a}", len(d.values))] for a, d in spec.args.items()}
            await world.step(f"rule {spec.name}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
            await getattr(machine, spec.name)(**kwargs)
        await machine.teardown()

    @classmethod
    def _make(cls, world: World, params: dict[str, Any]) -> RaceMachine:
        sub = cls
        if "fixed" in params and params["fixed"] != cls.fixed:
            sub = type(cls.__name__, (cls,), {"fixed": bool(params["fixed"]), "__module__": cls.__module__})
        rest = {k: v for k, v in params.items() if k != "fixed"}
        return sub(world, **rest)

    # ------------------------------------------------------------- TestCase
    @classmethod
    def _test_case(cls) -> type[unittest.TestCase]:
        machine = cls

        class MachineTestCase(unittest.TestCase):
            def runTest(self) -> None:  # noqa: N802 - unittest's name
                __tracebackhide__ = True
                from hypothesis import settings

                from ..explore import explore

                current = settings()
                seed = 0 if current.derandomize else None
                budget = min(current.max_examples, machine.budget) if current.max_examples else machine.budget
                result = explore(machine.scenario, budget=budget, seed=seed or 0, fixed=machine.fixed)
                if result.counterexample is not None:
                    raise AssertionError(format_program(result.counterexample, machine))

        MachineTestCase.__name__ = f"{cls.__name__}TestCase"
        MachineTestCase.__qualname__ = f"{cls.__qualname__}.TestCase"
        return MachineTestCase

    TestCase: ClassVar[type[unittest.TestCase]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls.TestCase = cls._test_case()


def _ordered_members(cls: type) -> list[str]:
    """Members in definition order, base classes first (never hash order)."""
    seen: dict[str, None] = {}
    for klass in reversed(cls.__mro__):
        for name in vars(klass):
            seen.setdefault(name, None)
    return list(seen)


def _is_program_choice(label: str) -> bool:
    """Choices that pick the program itself (shown as rule calls, not as deviations)."""
    return label in ("rule", "program length") or "." in label


def format_program(cx: Any, machine: type[RaceMachine] | None = None) -> str:
    """The minimal program the way Hypothesis prints a state machine, plus how to replay it."""
    name = machine.__name__ if machine is not None else cx.scenario.rsplit(":", 1)[-1].rsplit(".", 1)[0]
    lines = [f"state = {name}(fixed={cx.params.get('fixed', False)!r})", "await state.setup()"]
    pending: list[str] = []
    for rec in cx.trace:
        if rec.kind == "run" and rec.actor == "main" and rec.label.startswith("rule "):
            lines.extend(pending)
            pending = []
            lines.append(f"await state.{rec.label[len('rule '):]}")
        elif rec.choice and not (rec.kind == "choose" and _is_program_choice(rec.label)):
            what = f"{rec.actor}: {rec.label}" if rec.kind != "choose" else f"{rec.label} -> {rec.choice}"
            instead = f" (instead of '{rec.instead}')" if rec.instead else ""
            pending.append(f"# t={rec.time:g} step {rec.step}: {what}{instead}")
    lines.extend(pending)
    lines.append("await state.teardown()")
    lines.append(f"# => {cx.violation.describe()}")
    cmd = cx.replay_command() if getattr(cx, "path", None) else "python -m harness replay <saved trace>"
    lines.append(
        f"# {cx.deviations} deviation{'' if cx.deviations == 1 else 's'}, "
        f"{cx.steps} step{'' if cx.steps == 1 else 's'}; replay: {cmd}"
    )
    return "\n".join(lines)
