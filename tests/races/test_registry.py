"""Every registered race through the pytest plugin's ``race`` fixture: buggy found, fixed clean.

These are the tests ``pytest --race-hunt=MINUTES -n auto`` multiplies into
shards to hunt for longer; in a plain run each uses the race's own budget.
"""

from __future__ import annotations

from typing import Any

import pytest

from races import REGISTRY, Race

RACES = list(REGISTRY.values())


@pytest.mark.parametrize("spec", RACES, ids=[r.name for r in RACES])
def test_buggy_variant_is_found(race: Any, spec: Race) -> None:
    # #3375's residual is 3 plan entries; proving it needs level 2's 23,000+ plans (about 80 s): the
    # proof here covers levels 0-1 and says so (a cut proof is "not proved", never "proved minimal")
    proof = {"proof_budget": 300} if spec.name == "volcano_deleted_jobs_3375_residual" else {}
    result = race.explore(
        spec.scenario, expect="violation", budget=spec.budget, strategy=spec.strategy, fixed=False,
        faults=spec.faults, **proof, **spec.params,
    )
    assert result.counterexample is not None and result.counterexample.proved_minimal is not False


@pytest.mark.parametrize("spec", RACES, ids=[r.name for r in RACES])
def test_fixed_variant_is_clean_unless_known_open(race: Any, spec: Race) -> None:
    expect = "violation" if spec.known_open else "clean"
    budget = min(spec.budget, 4) if spec.name == "volcano_queue_backlog" else spec.budget  # ~3 s per 600 s run
    # with the race's own fault kinds: every kind for the races whose fixed code handles them all
    race.explore(
        spec.scenario, expect=expect, budget=budget, strategy=spec.strategy, fixed=True, faults=spec.faults,
        **spec.params,
    )


def test_races_that_place_every_fault_kind() -> None:
    """The fixed variants checked clean (sampled) with every fault kind; the others say why not."""
    assert [r.name for r in RACES if r.faults == "all"] == [
        "kruise_imagepulljob", "kueue_second_pass", "kueue_second_pass_residual", "volcano_gang_close",
    ]


#: the session seeds CI may draw: 50 consecutive ones, and the one that once failed kueue's final fix (issue 37)
SESSION_SEEDS = [*range(50), 2038175901]


@pytest.mark.slow
@pytest.mark.parametrize("spec", RACES, ids=[r.name for r in RACES])
def test_registry_verdicts_hold_under_fifty_session_seeds(spec: Race) -> None:
    """Each race's two tests above, under every session seed of :data:`SESSION_SEEDS`, with the seeds the plugin
    derives for them: CI's verdict must not depend on the luck of ``--race-seed``."""
    import harness as h
    from harness.pytest_plugin._settings import derive_seed

    here = "tests/races/test_registry.py"
    failures = []
    for session in SESSION_SEEDS:
        buggy_seed = derive_seed(session, f"{here}::test_buggy_variant_is_found[{spec.name}]")
        # the search is what a seed decides; the shrink and the proof of what it finds are seed-free
        found = h.explore(spec.scenario, budget=spec.budget, strategy=spec.strategy, seed=buggy_seed, fixed=False,
                          faults=spec.faults, prove_minimal=False, **spec.params)
        if not found.found:
            failures.append(f"session seed {session}: buggy not found: {found.outcome}")
        fixed_seed = derive_seed(session, f"{here}::test_fixed_variant_is_clean_unless_known_open[{spec.name}]")
        budget = min(spec.budget, 4) if spec.name == "volcano_queue_backlog" else spec.budget
        clean = h.explore(spec.scenario, budget=budget, strategy=spec.strategy, seed=fixed_seed, fixed=True,
                          faults=spec.faults, prove_minimal=False, **spec.params)
        if clean.found != spec.known_open:
            failures.append(f"session seed {session}: fixed {'not ' if spec.known_open else ''}found: {clean.outcome}")
    assert not failures, "\n".join(failures)
