"""volcano-sh/volcano#3374 and #3563: stale deletes of a re-created PodGroup (races/volcano_deleted_jobs.py)."""

from __future__ import annotations

import pytest
from race_support import assert_found_then_clean, assert_in_order

import harness
from harness.kube import WorkQueue
from harness.sim import Hold, Pick, PlanChooser, ReplayChooser
from races import REGISTRY
from races.volcano_deleted_jobs import (
    Cluster,
    JobInfo,
    job_terminated,
    scenario,
    scenario_3375_residual,
    scenario_api,
)

RACE = REGISTRY["volcano_deleted_jobs"]
API_RACE = REGISTRY["volcano_deleted_jobs_api"]


@pytest.fixture(scope="module")
def buggy() -> harness.Result:
    return harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=False)


@pytest.fixture(scope="module")
def api_buggy() -> harness.Result:
    return harness.explore(
        scenario_api, strategy="random", budget=API_RACE.budget, seed=0, fixed=False, **API_RACE.params
    )


# ------------------------------------------------------------ volcano#3374
def test_registry_entries() -> None:
    assert RACE.upstream == "volcano-sh/volcano#3374 (fix PR #3375, 2832dfe1)"
    assert not RACE.known_open
    assert API_RACE.upstream == "volcano-sh/volcano#3563 (fix PR #3561, ed254101)"
    assert API_RACE.known_open


def test_buggy_variant_is_found(buggy: harness.Result) -> None:
    assert buggy.verdict == "found" and buggy.counterexample is not None
    assert buggy.counterexample.violation.name == "cleanup deletes only its own job"


def test_counterexample_has_the_key_events_in_order(buggy: harness.Result) -> None:
    assert buggy.counterexample is not None
    assert_in_order([r.label for r in buggy.counterexample.trace], RACE.key_events)


def test_the_only_deviation_is_the_prompt_scale_up(buggy: harness.Result) -> None:
    cx = buggy.counterexample
    assert cx is not None and cx.proved_minimal is True
    [deviation] = [r for r in cx.trace if r.choice]
    assert deviation.kind == "choose" and deviation.label.startswith("user: pause before scaling back up")
    exhaustive = harness.explore(scenario, strategy="exhaustive:1", fixed=False)
    assert exhaustive.counterexample is not None
    assert cx.deviations == exhaustive.counterexample.deviations == 1


def test_stale_retry_fires_after_the_new_job_exists(buggy: harness.Result) -> None:
    cx = buggy.counterexample
    assert cx is not None
    recs = list(cx.trace)
    created = max(r.time for r in recs if r.label.startswith("create PodGroup"))
    gone = next(r.time for r in recs if "deliver DELETED default/rs1-1" in r.label)
    assert created == gone == 30.5  # the user scales up as soon as kubectl wait returns
    last = recs[-2]
    assert last.label.startswith("DeletedJobs ready JobInfo") and last.time > created + 10


def test_oracle_wording_names_both_pod_group_uids(buggy: harness.Result) -> None:
    assert buggy.counterexample is not None
    msg = buggy.counterexample.violation.message
    assert msg.startswith("processCleanupJob dequeued JobInfo default/podgroup-uid-0005 (PgUID uid-0006)")
    assert "but deleted sc.Jobs[default/podgroup-uid-0005] = JobInfo default/podgroup-uid-0005 (PgUID uid-0009)" in msg
    assert "(PodGroup set, 1 task(s))" in msg


@pytest.mark.parametrize("settle", [0.0, 1.7, 3.0])
def test_the_first_pause_does_not_place_the_bug(settle: float) -> None:
    """The user's look at the running job before scaling down is 0.5 s; other lengths find the same bug."""
    assert_found_then_clean(scenario, budget=RACE.budget, violation="cleanup deletes only its own job", settle=settle)


def test_the_3375_fix_leaves_a_residual_race_that_4753_closes() -> None:
    """At a 9 s pause the #3375 check compares two empty PgUIDs (both JobInfos were made by
    pods before the scheduler saw their PodGroup) and deletes the new job with its pod's
    task; PR #4753 judges the job now cached and keeps it, under the same search."""
    residual = harness.explore(scenario, strategy="random", budget=800, seed=0, fixed=True, pause=9.0,
                               prove_minimal=False)
    assert residual.verdict == "found" and residual.counterexample is not None
    message = residual.counterexample.violation.message
    assert "(PgUID -) but deleted" in message and "(PgUID -) (PodGroup nil, 1 task(s))" in message
    closed = harness.explore(scenario, strategy="random", budget=800, seed=0, fixed_4753=True, pause=9.0)
    assert closed.verdict == "none-found"


def test_3375_residual_is_a_registered_race() -> None:
    """Buggy is #3375's cleanup, fixed is #4753's; the oracle is the symptom: the new pod never bound."""
    residual = REGISTRY["volcano_deleted_jobs_3375_residual"]
    assert residual.scenario is scenario_3375_residual and not residual.known_open
    assert residual.upstream == "volcano-sh/volcano#3374 (buggy: fix PR #3375, 2832dfe1; fixed: PR #4753, b41b700e)"
    found = harness.explore(scenario_3375_residual, strategy=residual.strategy, budget=residual.budget, seed=1,
                            fixed=False, prove_minimal=False)
    cx = found.counterexample
    assert cx is not None and cx.violation.name == "pod bound within 40s of the scale-up"  # never bound, not late
    assert "no pod of ReplicaSet rs1 bound since the scale-up" in cx.violation.message
    assert_in_order([r.label for r in cx.trace], residual.key_events)
    # the plan names the user's shorter pause and holds of the scheduler's PodGroup informer (a late first
    # LIST, the new PodGroup's ADDED held until a stale retry fired): 3 entries from seed 0, 4 from seed 1
    picks = [e for e in cx.plan if isinstance(e, Pick)]
    assert [p.value for p in picks] == [1] and "pause before scaling back up" in picks[0].at.label
    assert any(isinstance(e, Hold) and e.what.actor == "scheduler/informer/PodGroup" for e in cx.plan)
    assert 3 <= cx.deviations <= 4
    clean = harness.explore(scenario_3375_residual, strategy=residual.strategy, budget=1000, seed=1, fixed=True)
    assert clean.verdict == "none-found", clean.outcome


@pytest.mark.parametrize("pause", [8.0, 8.5, 10.0])
def test_3375_residual_pause_places_nothing(pause: float) -> None:
    """The user's 9 s pause is one of many: any pause in the retry's window finds the same race."""
    found = harness.explore(scenario_3375_residual, strategy="random", budget=3000, seed=0, fixed=False,
                            pause=pause, prove_minimal=False, shrink_found=False)
    assert found.counterexample is not None, found.outcome
    assert found.counterexample.violation.name == "pod bound within 40s of the scale-up"


def test_the_residual_race_shows_the_upstream_symptom_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """#4753 never deletes a job with a task, so its clean verdict rests on the symptom oracle:
    without the cleanup invariant, #3375's residual race still fails it (the new pod is never bound)."""
    monkeypatch.setattr(Cluster, "check_cleanup", lambda self: None)
    residual = harness.explore(scenario, strategy="random", budget=800, seed=0, fixed=True, pause=9.0,
                               prove_minimal=False)
    assert residual.counterexample is not None
    assert residual.counterexample.violation.name == "pod bound within 10s of the scale-up"


def test_the_4753_cleanup_queues_keys_and_deletes_the_cached_job_only_if_its_pg_uid_matches() -> None:
    c = Cluster(harness.World(PlanChooser()), fixed_4753=True)
    job = JobInfo("default/podgroup-x")
    c.cache.jobs[job.uid] = job
    c.cache.delete_job(job)
    assert list(c.cache.deleted_jobs._queue) == ["default/podgroup-x/"]  # <namespace/name>/<PgUID>, empty
    c.cache.process_cleanup_job("default/podgroup-x/uid-other")  # another incarnation's key: kept
    assert c.cache.jobs[job.uid] is job
    c.cache.process_cleanup_job("default/podgroup-x/")
    assert job.uid not in c.cache.jobs and not c.cache.wrong_deletions


def test_fixed_variant_is_clean_under_the_same_budget() -> None:
    result = harness.explore(scenario, strategy="random", budget=RACE.budget, seed=0, fixed=True)
    assert result.verdict == "none-found"


def test_fixed_variant_is_proved_clean_up_to_one_deviation() -> None:
    assert harness.explore(scenario, strategy="exhaustive:1", fixed=True).verdict == "proved-clean"


@pytest.mark.slow
def test_fixed_variant_is_proved_clean_up_to_two_deviations() -> None:  # 87,146 runs, about 13 min
    result = harness.explore(scenario, strategy="exhaustive:2", budget=100_000, fixed=True)
    assert result.verdict == "proved-clean"


def test_canonical_run_lets_the_retry_drain_before_the_scale_up() -> None:
    out = harness.run_once(scenario, ReplayChooser([]), params={"fixed": False})
    assert out.violation is None
    recs = list(out.trace)
    scale_up = [r.time for r in recs if r.label == "patch ReplicaSet default/rs1"][-1]
    last_retry = max(r.time for r in recs if r.label.startswith("DeletedJobs ready"))
    assert last_retry == pytest.approx(41.445)
    assert scale_up == 50.5 > last_retry
    assert any(r.label == "patch Pod default/rs1-2" and r.time == 51.0 for r in recs)  # the new pod is bound


def test_job_info_is_an_identity_queue_item() -> None:
    async def check(world: harness.World) -> None:
        q: WorkQueue[JobInfo] = WorkQueue(world, "DeletedJobs")
        old, new = JobInfo("default/podgroup-x"), JobInfo("default/podgroup-x")
        q.add(old)
        q.add(new)
        q.add(old)
        assert len(q) == 2  # same key, two incarnations: never deduplicated
        assert job_terminated(old)

    assert harness.run_once(check, ReplayChooser([])).violation is None


def test_cluster_operations_drive_a_full_cycle() -> None:
    async def cycle(world: harness.World) -> None:
        c = Cluster(world, fixed=True, rs_workers=1)
        world.at_end(c.check_every_pod_group_cached, "every PodGroup has its JobInfo")
        await c.start(replicas=1)
        await c.scale_to(0)
        await c.wait_until_pods_gone()
        await c.scale_to(1)
        c.expect_bound_within(10.0)
        await c.wait_until_bound()
        world.horizon = world.now + 15.0

    out = harness.run_once(cycle, ReplayChooser([]))
    assert out.violation is None


# ------------------------------------------------------ volcano#3563 (API)
def test_api_buggy_variant_fails_in_canonical_order(api_buggy: harness.Result) -> None:
    cx = api_buggy.counterexample
    assert cx is not None and cx.deviations == 0 and cx.proved_minimal is True
    assert_in_order([r.label for r in cx.trace], API_RACE.key_events)
    assert cx.violation.message.startswith("'pod bound within 10s of the scale-up' did not happen")
    out = harness.run_once(scenario_api, ReplayChooser([]), params={"fixed": False, **API_RACE.params})
    assert out.violation is not None and out.violation.same_bug(cx.violation)


def test_api_stale_event_deletes_the_pod_group_the_worker_created(api_buggy: harness.Result) -> None:
    cx = api_buggy.counterexample
    assert cx is not None
    created = next(r for r in cx.trace if r.label.startswith("create PodGroup"))
    assert created.actor == "pg-controller/worker"
    deleted = [r for r in cx.trace if r.label == f"delete {created.key}"]
    assert deleted and deleted[0].actor == "pg-controller/rs-handler" and deleted[0].step > created.step


def test_api_upstream_fix_is_known_open() -> None:
    """PR #3561 re-creates the PodGroup only when its (stale) lister says NotFound."""
    result = harness.explore(scenario_api, strategy="exhaustive:1", fixed=True, **API_RACE.params)
    assert result.verdict == "found" and result.counterexample is not None
    assert result.counterexample.deviations == 1
    assert result.counterexample.violation.name == "pod bound within 10s of the scale-up"
    assert harness.run_once(
        scenario_api, ReplayChooser([]), params={"fixed": True, **API_RACE.params}
    ).violation is None
