"""Explorations over the kube layer alone: races found by random search, fixes clean."""

from __future__ import annotations

from kube_support import clean, failing_seeds, run

from harness.kube._examples import delete_by_name, stale_status_writers


def test_stale_status_writers_lose_an_update() -> None:
    found = failing_seeds(stale_status_writers, 50)
    assert found, "random search should find the lost update within 50 seeds"
    out = run(stale_status_writers, seed=found[0])
    assert out.violation is not None and out.violation.name == "no lost status update"
    # replaying the recorded choices reproduces it
    replayed = run(stale_status_writers, choices=out.choices)
    assert replayed.violation is not None and replayed.trace.digest() == out.trace.digest()


def test_fresh_reads_with_retry_on_conflict_never_lose_an_update() -> None:
    assert failing_seeds(stale_status_writers, 300, fixed=True) == []


def test_delete_by_name_removes_a_recreated_object_under_some_schedule() -> None:
    found = failing_seeds(delete_by_name, 50)
    assert found
    out = run(delete_by_name, seed=found[0])
    assert out.violation is not None and "re-created" in out.violation.message


def test_delete_with_uid_precondition_never_removes_a_recreated_object() -> None:
    assert failing_seeds(delete_by_name, 300, use_uid=True) == []


def test_same_seed_same_trace_different_seeds_different_traces() -> None:
    a = run(stale_status_writers, seed=7)
    b = run(stale_status_writers, seed=7)
    assert a.trace.digest() == b.trace.digest()
    digests = {run(stale_status_writers, seed=s).trace.digest() for s in range(10)}
    assert len(digests) > 1


def test_canonical_runs() -> None:
    # both writers read their caches before either write is delivered: lost even canonically
    assert run(stale_status_writers).violation is not None
    clean(run(stale_status_writers, fixed=True))
    clean(run(delete_by_name))
    clean(run(delete_by_name, use_uid=True))


def test_exhaustive_exploration_finds_the_races_and_proves_the_fixes() -> None:
    from harness.explore import Budget, explore

    found = explore(delete_by_name, strategy="exhaustive", budget=Budget(runs=2000))
    assert found.counterexample is not None and found.counterexample.deviations == 1
    assert explore(delete_by_name, strategy="exhaustive", budget=Budget(runs=2000), use_uid=True).verdict == (
        "proved-clean"
    )
    assert explore(stale_status_writers, strategy="exhaustive:1", budget=Budget(runs=20000), fixed=True).verdict == (
        "proved-clean"
    )


def test_default_strategy_finds_both_kube_races_at_the_proved_minimum() -> None:
    """Found by the default strategy and shrunk to the minimum the exhaustive referee proves."""
    from harness.explore import Budget, explore

    for scenario in (stale_status_writers, delete_by_name):
        found = explore(scenario, budget=Budget(runs=500), seed=0)
        assert found.counterexample is not None, found.outcome
        assert found.counterexample.proved_minimal is True
        referee = explore(scenario, strategy="exhaustive:2", budget=Budget(runs=5000))
        assert referee.counterexample is not None
        assert found.counterexample.deviations == referee.counterexample.deviations
