"""Traces: lazy records read the same as eager ones, and digests stay byte for byte what they were.

``trace_digests.json`` holds digests recorded when the clock became an integer count of nanoseconds (format 5;
15 of 75 moved from format 4, each by jumps that the float clock had landed one nanosecond late): toys and races
under random and PCT choosers, with late deliveries ("let time pass" records), faults and
deviations ("instead of ..." words). Digests are stored in trace files and compared across
processes, so a change that moves one of them breaks every saved trace: regenerate the file only
with a format change (``FORMAT_VERSION``), never to make this test pass. A deliberate change to a
race's model (kueue_second_pass's final fix), or to a kube component a race runs (the garbage
collector following attemptToDeleteItem: volcano_gang_close), re-records that race's rows alone. Every apiserver
holding a cluster's four namespaces from its start moved every race's revisions and uids by four: their digests
alone were re-recorded (steps, deviations, violations and lengths unchanged, as the rows show).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tests.toys as toys
from harness.sim import (
    FaultPlacement,
    Option,
    PCTChooser,
    PlanReplayChooser,
    RandomChooser,
    Record,
    ReplayChooser,
    RunOutcome,
    Trace,
    World,
    run_batch,
    run_once,
)
from races import REGISTRY

GOLDEN: dict[str, list[Any]] = json.loads((Path(__file__).parent / "trace_digests.json").read_text())


def _cases() -> Iterator[tuple[str, Any, dict[str, Any], frozenset[str] | None, Any]]:
    for name in ("lost_update", "order_violation", "slow_liveness"):
        for fixed in (False, True):
            for seed in range(4):
                yield (f"toy {name} fixed={fixed} random:{seed}", getattr(toys, name), {"fixed": fixed}, None,
                       RandomChooser(seed, lag=0.7 if seed % 2 else None))
            yield f"toy {name} fixed={fixed} pct:0", getattr(toys, name), {"fixed": fixed}, None, PCTChooser(0, 3, 40)
    for rname, race in REGISTRY.items():
        for fixed in (False, True):
            if rname == "volcano_queue_backlog" and fixed:
                continue  # 90,000 steps a run: too slow for a unit test
            for seed in range(3):
                faults = FaultPlacement(None, [1, 3]) if seed == 2 else None
                yield (f"race {rname} fixed={fixed} random:{seed}", race.scenario, {**race.params, "fixed": fixed},
                       frozenset({"*"}) if seed == 2 else None, RandomChooser(seed, faults=faults, lag=0.7 if seed else None))


def _summary(out: RunOutcome) -> list[Any]:
    return [out.trace.digest(), out.steps, out.deviations, out.violation.name if out.violation else None, len(out.trace)]


@pytest.mark.parametrize("direct_time", [True, False], ids=["direct-time", "time-through-trio"])
def test_digests_of_toys_and_races_are_the_ones_recorded_before_lazy_traces(
    direct_time: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(World, "_direct_time", direct_time)
    seen = 0
    for label, scenario, params, faults, chooser in _cases():
        if label not in GOLDEN:
            continue  # a race registered after the digests were recorded
        assert _summary(run_once(scenario, chooser, params=params, faults=faults)) == GOLDEN[label], label
        seen += 1
    assert seen >= 60


def test_batched_runs_give_the_recorded_digests() -> None:
    toy_cases = [c for c in _cases() if c[0].startswith("toy ") and c[2]["fixed"] is False]
    by_scenario: dict[str, list[Any]] = {}
    for case in toy_cases:
        by_scenario.setdefault(case[1].__name__, []).append(case)
    for cases in by_scenario.values():
        got: list[list[Any]] = []

        def keep_going(out: RunOutcome, got: list[list[Any]] = got) -> bool:
            got.append(_summary(out))
            return True

        run_batch(cases[0][1], (c[4] for c in cases), keep_going, params=cases[0][2])
        assert got == [GOLDEN[c[0]] for c in cases]


def test_a_lazy_trace_reads_as_the_eager_one() -> None:
    out = run_once(toys.order_violation, RandomChooser(3, lag=0.7))
    raw_steps, raw_deviations, raw_len = out.trace.steps, out.trace.deviations, len(out.trace)  # before any record
    eager = Trace(list(out.trace))
    assert (eager.steps, eager.deviations, len(eager)) == (raw_steps, raw_deviations, raw_len)
    assert eager == out.trace and hash(eager) == hash(out.trace)
    assert eager.digest() == out.trace.digest() and eager.to_json() == out.trace.to_json()
    assert (out.trace.steps, out.trace.deviations) == (raw_steps, raw_deviations)  # after the records were built
    assert Trace.from_json(out.trace.to_json()) == out.trace


def test_deviation_words_name_the_displaced_action_as_it_was_then() -> None:
    """"instead of" is formatted on demand from the displaced action; the actor's later steps do not change it."""
    for seed in range(5):
        out = run_once(toys.order_violation, RandomChooser(seed), params={"fixed": True})
        assert out.violation is None
        recs = list(out.trace)
        devs = [i for i, r in enumerate(recs) if r.choice]
        assert devs
        for i in devs:  # the displaced action runs later, under the words it had when it was passed over
            assert any(f"{r.actor}: {r.label}" == recs[i].instead for r in recs[i + 1:]), recs[i]


@pytest.mark.parametrize("more", [False, True])
def test_wait_records_say_what_was_held(more: bool) -> None:
    from harness.sim import Option
    from harness.sim._trace import _record

    held = (Option("a", "x", None), Option("b", "y", None))
    rec = _record((4, 1.5, "scheduler", (held, more), None, None, 2, 3, "wait", held[0]))
    assert rec == Record(4, 1.5, "scheduler", f"let time pass while a: x, b: y{' ...' if more else ''} wait", None,
                         None, 2, 3, "wait", "a: x")


def _offered(*names: str) -> list[Option]:
    return [Option(name, f"{name.partition('/')[2] or name} step", None) for name in names]


def _identified(*names: str) -> list[Option]:
    options = _offered(*names)
    for o in options:
        o.ident = (o.actor, o.label, None, 1)
    return options


def test_plan_replay_follows_the_recorded_run_once_a_process_takes_part() -> None:
    """A plan's trace replayed: inside the world the plan picks (the world never asks ``awaits``); once the world
    has a program outside it (it asks ``awaits`` at each decision) the recorded run's actions are followed where
    arrivals moved them. Before: a test process's POST overtaken by its operator's first LIST made the plan take the
    LIST, and the replay of a pytest suite's plan said ``reproduced 0 of 2`` (CI)."""
    trace = [
        Record(1, 0.0, "op/GET cm", "GET cm step", None, None, 1, 2, "run", None),
        Record(2, 0.0, "main", "main step", None, None, 1, 2, "choose", None),
        Record(3, 0.0, "op/POST s", "POST s step", None, None, 1, 2, "run", None),
    ]
    choices = [1, 1, 1]
    inside = PlanReplayChooser((), choices, trace)
    assert inside.schedule(_identified("op/GET cm", "op/POST s"), 0.0, False) == 0  # the plan's (canonical) pick
    assert inside.choose(3, _identified("main")[0]) == 0
    outside = PlanReplayChooser((), choices, trace)
    moved = _identified("main", "op/POST s", "op/GET cm")
    assert not outside.awaits(moved)
    assert outside.schedule(moved, 0.0, False) == 2  # the recorded GET where it stands, not the plan's first
    assert outside.choose(3, _identified("main")[0]) == 1  # the recorded value
    late = _identified("main", "op/GET cm")
    assert outside.awaits(late)  # the recorded POST has not arrived: the world waits for it
    assert outside.schedule(_identified("op/GET cm", "op/POST s"), 0.0, False) == 1


def test_replay_follows_the_recorded_action_where_arrivals_moved_it() -> None:
    """A replay of a run with a process outside the world: which of its requests have arrived by a decision is the
    OS's timing, so the recorded position may now hold another action. Given the trace, the replay takes the recorded
    action where it stands now, says it waits for one not arrived yet, and keeps data choices and faults positional;
    without the trace it replays positions alone."""
    trace = [
        Record(1, 0.0, "op/GET cm", "GET cm step", None, None, 1, 2, "run", None),
        Record(2, 0.0, "main", "main step", None, None, 1, 2, "choose", None),
        Record(3, 0.0, "op/POST s", "POST s step", None, None, 0, 1, "run", None),
        Record(4, 0.0, "op/PUT cm", "PUT cm step", None, None, 0, 2, "run", None),
    ]
    choices = [1, 1, 0]  # (the step of one option made no decision)
    follows = ReplayChooser(choices, trace)
    assert follows.wants_identities
    # an earlier arrival took position 1: the recorded request stands at 2 now
    assert follows.schedule(_offered("main", "op/POST s", "op/GET cm"), 0.0, False) == 2 and follows.followed == 1
    assert follows.choose(3, Option("main", "main step", None)) == 1  # a data choice is a value
    only = _offered("op/POST s")
    assert not follows.awaits(only) and follows.schedule(only, 0.0, False) == 0
    late = _offered("main")
    assert follows.awaits(late)  # the recorded PUT has not arrived: the world waits for it
    assert follows.awaits(_offered("main", "op/GET cm"))
    assert not follows.awaits(_offered("main", "op/PUT cm"))
    positional = ReplayChooser(choices)
    assert not getattr(positional, "wants_identities", False)
    assert positional.schedule(_offered("main", "op/POST s", "op/GET cm"), 0.0, False) == 1
    assert not positional.awaits(late)
