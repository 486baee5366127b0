"""Volcano: the gang plugin writes PodGroup conditions for task-less jobs (volcano-sh/volcano#4011).

Upstream: issue volcano-sh/volcano#4011 "Boundary Condition Considerations in Gang
Plugin's OnSessionClose"; fix PR #4012, commit ``15ebb45e`` ("skip unavailable jobs
during the close session step").

Modelled from volcano-sh/volcano at ``15ebb45e^`` (read there):

* ``pkg/scheduler/plugins/gang/gang.go`` ``(*gangPlugin).OnSessionClose``
  -> :meth:`GangPlugin.on_session_close` (the fix: ``if len(job.Tasks) == 0 { continue }``);
* ``pkg/scheduler/framework/session.go`` ``openSession``, ``UpdatePodGroupCondition``,
  ``jobStatus`` -> :func:`open_session`, :meth:`Session.update_pod_group_condition`,
  :func:`job_status`; ``framework.go`` ``CloseSession``/``closeSession`` -> :func:`close_session`;
* ``pkg/scheduler/framework/job_updater.go`` ``updateJob``, ``isPodGroupStatusUpdated``,
  ``isPodGroupConditionsUpdated`` -> :func:`update_job`, :func:`is_pod_group_status_updated`;
* ``pkg/scheduler/cache/cache.go`` ``UpdateJobStatus`` + ``defaultStatusUpdater.UpdatePodGroup``
  (a full, RV-checked ``PodGroups(ns).Update``) -> :func:`update_job`;
* ``pkg/scheduler/cache/cache.go`` ``Snapshot`` (keeps 0-task jobs, skips ``PodGroup == nil``),
  ``deleteJob``/``retryDeleteJob``/``processCleanupJob``; ``event_handlers.go`` ``deletePod``
  (``deleteTask``, then ``deleteJob`` only if ``JobTerminated``), ``deletePodGroup``
  (``UnsetPodGroup`` + ``deleteJob``), ``setPodGroup``, ``addPod``/``updatePod``/``getOrCreateJob``;
  ``pkg/scheduler/api/job_info.go`` ``JobInfo``, ``IsReady``, ``ReadyTaskNum``, ``FitError``;
  ``helpers.go`` ``JobTerminated`` -> the scheduler-cache model shared with
  ``volcano_deleted_jobs`` in :mod:`races._volcano_cache`, used with ``fixed_3375=True``
  (at ``15ebb45e^`` the PgUID check of volcano#3375, ``2832dfe1``, is already upstream).

The world: a vcjob ``j1`` (minAvailable 1) that never ran: its pod is Pending (no node
fits, so the allocate action binds nothing and is not modelled), its PodGroup stays in
phase Pending. The scheduler's first session writes the usual "1/1 tasks in gang
unschedulable" condition; later sessions write nothing. A user deletes the vcjob
(background propagation); the garbage collector deletes the pod and the PodGroup
(both carry controller refs to the vcjob), and the scheduler's Pod and PodGroup
informers deliver the two DELETED events on independent streams.

Timing: sessions run every ``schedule_period`` (``--schedule-period``, 1 s). Nothing is
placed: the user deletes the vcjob mid-period (``delete_at``, 2.5 s) and the scheduler's
watches deliver at their nominal latency (``watch_latency``, 0) or later inside their
windows. In the canonical order both DELETED events are delivered before the next
session takes its snapshot (the job is then skipped: ``PodGroup == nil``). Holding the
PodGroup's DELETED past that session (one deviation) gives a snapshot
with a 0-task job whose PodGroup is still set: the buggy gang plugin turns it into
"1/0 tasks in gang unschedulable", the condition differs from the stored one, and the
job updater sends a PodGroup update for a group that is already gone (404).

Oracle: no PodGroup write for a job with no tasks (the issue's efficiency point), seen
either as a "k/0 tasks" condition persisted at the write's commit or as a write the
scheduler sent (answered 404 after the delete): one oracle for one bug, so the search
converges on one minimal counterexample whichever way it met the write first. The
scheduler opens no session before both caches have synced (``WaitForCacheSync``), so
a lagging initial list cannot fake a job with no tasks. The phase stays Pending in both
variants, so the fixed variant writes nothing (the spec's caveat: a Running group would flip to Pending and be written
even after the fix). Not modelled: the Warning "Unschedulable" event that
``RecordJobStatusEvent`` emits in both variants, per-task pod condition updates,
the enqueue/allocate actions and queue status updates.
"""

from __future__ import annotations

import re
from typing import Any

from harness.kube import (
    ApiError,
    APIServer,
    GarbageCollector,
    Informer,
    KubeObject,
    controller_ref,
    copy_json,
)
from harness.sim import World
from races._registry import Race
from races._volcano_cache import ALLOCATED_STATUSES, GROUP_NAME_ANNOTATION, SchedulerCache
from races._volcano_cache import JobInfo as JobInfo
from races._volcano_cache import job_terminated as job_terminated

NAMESPACE = "default"
POD_GROUP_UNSCHEDULABLE = "Unschedulable"  # scheduling.PodGroupUnschedulableType
POD_GROUP_SCHEDULED = "Scheduled"  # scheduling.PodGroupScheduled
NOT_ENOUGH_RESOURCES = "NotEnoughResources"  # v1beta1.NotEnoughResourcesReason

_TASKLESS_MESSAGE = re.compile(r"^(\d+)/0 tasks in gang unschedulable")


# ------------------------------------------------------------ the framework
class Session:
    """``framework.Session``: the snapshot and the PodGroup statuses seen at open."""

    def __init__(self, uid: str, jobs: dict[str, JobInfo]) -> None:
        self.uid = uid
        self.jobs = jobs
        self.pod_group_status: dict[str, dict[str, Any]] = {
            uid: copy_json(job.pod_group.status) for uid, job in jobs.items() if job.pod_group is not None
        }

    def update_pod_group_condition(self, job: JobInfo, cond: dict[str, Any]) -> None:
        """Replace the condition of the same type, or append it (on the session copy)."""
        assert job.pod_group is not None
        conds: list[dict[str, Any]] = job.pod_group.status.setdefault("conditions", [])
        for i, c in enumerate(conds):
            if c["type"] == cond["type"]:
                conds[i] = cond
                return
        conds.append(cond)


def open_session(cache: SchedulerCache, uid: str) -> Session:
    """``openSession``. Its ``JobValid`` filter runs before the plugins register their
    ``validJobFn``s, so it drops nothing here: the 0-task job stays in ``ssn.Jobs``."""
    return Session(uid, cache.snapshot())


class GangPlugin:
    """``gangPlugin``; ``fixed`` is PR #4012: skip jobs with no tasks."""

    def __init__(self, world: World, fixed: bool) -> None:
        self._world = world
        self.fixed = fixed

    def on_session_close(self, ssn: Session) -> None:
        for job in ssn.jobs.values():
            if self.fixed and not job.tasks:
                continue  # volcano#4012: skip the jobs that have no tasks
            if not job.is_ready():
                # schedulableTaskNum: allocated pending tasks (none: no allocate action) + ReadyTaskNum
                unready = job.min_available - job.ready_task_num()
                cond = {
                    "type": POD_GROUP_UNSCHEDULABLE,
                    "status": "True",
                    "lastTransitionTime": self._world.now,
                    "transitionID": ssn.uid,
                    "reason": NOT_ENOUGH_RESOURCES,
                    "message": f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {job.fit_error()}",
                }
            else:
                cond = {
                    "type": POD_GROUP_SCHEDULED,
                    "status": "True",
                    "lastTransitionTime": self._world.now,
                    "transitionID": ssn.uid,
                    "reason": "tasks in gang are ready to be scheduled",
                    "message": "",
                }
            ssn.update_pod_group_condition(job, cond)


def job_status(ssn: Session, job: JobInfo) -> dict[str, Any]:
    """``jobStatus``: recompute phase and counters from the tasks."""
    assert job.pod_group is not None
    status: dict[str, Any] = copy_json(job.pod_group.status)
    unschedulable = any(
        c["type"] == POD_GROUP_UNSCHEDULABLE and c["status"] == "True" and c["transitionID"] == ssn.uid
        for c in status.get("conditions", [])
    )
    if job.count("Running") and unschedulable:
        status["phase"] = "Unknown"
    else:
        allocated = job.count(*ALLOCATED_STATUSES, "Succeeded", "Failed")
        if allocated >= int(job.pod_group.spec.get("minMember", 0)):
            status["phase"] = "Running"
        elif job.pod_group.status.get("phase") != "Inqueue":
            status["phase"] = "Pending"
    status["running"] = job.count("Running")
    status["failed"] = job.count("Failed")
    status["succeeded"] = job.count("Succeeded")
    return status


_IGNORED = ("lastTransitionTime", "transitionID")


def is_pod_group_conditions_updated(new: list[dict[str, Any]], old: list[dict[str, Any]]) -> bool:
    """``isPodGroupConditionsUpdated``: compare by index, ignoring time and TransitionID."""
    if len(new) != len(old):
        return True
    for n, o in zip(new, old, strict=True):
        if {k: v for k, v in n.items() if k not in _IGNORED} != {k: v for k, v in o.items() if k not in _IGNORED}:
            return True
    return False


def is_pod_group_status_updated(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """``isPodGroupStatusUpdated``: any non-condition field, or the conditions."""
    rest_new = {k: v for k, v in new.items() if k != "conditions"}
    rest_old = {k: v for k, v in old.items() if k != "conditions"}
    return rest_new != rest_old or is_pod_group_conditions_updated(new.get("conditions", []), old.get("conditions", []))


class Scheduler:
    """``Scheduler.runOnce`` every ``schedule_period``: open, (no actions), close."""

    def __init__(self, world: World, api: APIServer, cache: SchedulerCache, gang: GangPlugin, period: float) -> None:
        self._world = world
        self.api = api
        self.cache = cache
        self.gang = gang
        self.period = period
        self.sessions = 0
        #: PodGroup writes for jobs that had no tasks in the session, with the condition message sent
        self.taskless_writes: list[str] = []

    async def run(self) -> None:
        await self.cache.wait_for_cache_sync()  # scheduler.Run: cache.Run, then WaitForCacheSync
        while True:
            await self._world.sleep(self.period, label="schedule period elapsed")
            await self.run_once()

    async def run_once(self) -> None:
        self.sessions += 1
        await self._world.step("open session: snapshot the cache")
        ssn = open_session(self.cache, f"session-{self.sessions}")
        # CloseSession: plugins' OnSessionClose, then closeSession -> jobUpdater.UpdateAll
        self.gang.on_session_close(ssn)
        await close_session(self, ssn)


async def close_session(sched: Scheduler, ssn: Session) -> None:
    """``closeSession``: ``jobUpdater.UpdateAll`` (one job at a time; the model has one job)."""
    for job in list(ssn.jobs.values()):
        await update_job(sched, ssn, job)


async def update_job(sched: Scheduler, ssn: Session, job: JobInfo) -> None:
    """``jobUpdater.updateJob`` + ``SchedulerCache.UpdateJobStatus``."""
    assert job.pod_group is not None
    job.pod_group.status = job_status(ssn, job)
    old = ssn.pod_group_status.get(job.uid)
    update_pg = old is None or is_pod_group_status_updated(job.pod_group.status, old)
    if not update_pg:
        return
    # defaultStatusUpdater.UpdatePodGroup: PodGroups(ns).Update of the whole object. The PodGroup CRD
    # has no status subresource (``subresources: {}``), so that PUT writes status and is RV-checked;
    # update_status is the harness call with exactly that effect (the spec is unchanged).
    answer = "200 OK"
    try:
        await sched.api.update_status(job.pod_group)
    except ApiError as err:  # a 404, a 409, a timeout: klog.Errorf("Failed to update job ...") and carry on
        answer = f"{err.code} {err.reason}"
    if not job.tasks:  # the request was sent: record it for the oracle, whatever it returned
        conds = job.pod_group.status.get("conditions", [])
        msgs = [c["message"] for c in conds if c["type"] == POD_GROUP_UNSCHEDULABLE]
        sched.taskless_writes.append(f"condition '{msgs[0] if msgs else ''}', answered {answer}")


# ------------------------------------------------------------------ scenario
async def scenario(
    world: World,
    *,
    fixed: bool = False,
    schedule_period: float = 1.0,
    watch_latency: float = 0.0,
    delete_at: float = 2.5,
) -> None:
    """Delete a Pending vcjob mid-period; the search finds the watch lag that makes it race a session.

    ``delete_at``: when the user deletes the vcjob. It places nothing: the search finds the
    bug whatever it is (``test_the_delete_time_does_not_place_the_bug``).
    """
    api = APIServer(world)
    vcjob = await api.create(KubeObject("Job", NAMESPACE, "j1", spec={"minAvailable": 1}))
    pg_name = f"j1-{vcjob.uid}"
    await api.create(
        KubeObject(
            "PodGroup",
            NAMESPACE,
            pg_name,
            owner_references=[controller_ref(vcjob)],
            spec={"minMember": 1, "queue": "default"},
            # the job controller creates it with Go's zero values: running/failed/succeeded are 0, so a
            # session that computes the same counters compares equal (isPodGroupStatusUpdated) and writes nothing
            status={"phase": "Pending", "conditions": [], "running": 0, "failed": 0, "succeeded": 0},
        )
    )
    await api.create(
        KubeObject(
            "Pod",
            NAMESPACE,
            "j1-worker-0",
            annotations={GROUP_NAME_ANNOTATION: pg_name},
            owner_references=[controller_ref(vcjob)],
            spec={"schedulerName": "volcano"},
            status={"phase": "Pending"},
        )
    )

    gc = GarbageCollector(world, api, ["Job", "Pod", "PodGroup"])
    pods = Informer(world, api, "Pod", name="scheduler/informer/Pod", latency=watch_latency)
    pod_groups = Informer(world, api, "PodGroup", name="scheduler/informer/PodGroup", latency=watch_latency)
    cache = SchedulerCache(world, pods, pod_groups, fixed_3375=True)  # at 15ebb45e^ #3375 is in
    sched = Scheduler(world, api, cache, GangPlugin(world, fixed), schedule_period)
    gc.start()
    pods.start()
    pod_groups.start()
    world.spawn("scheduler/cleanup-job", cache.run_cleanup, daemon=True)
    world.spawn("scheduler", sched.run, daemon=True)

    # Long enough for every window to close: the informers' lag (max_lag) and two more sessions.
    world.horizon = delete_at + 4 * schedule_period + pods.max_lag

    def no_taskless_writes() -> str | None:
        # One oracle for one upstream bug: the write is seen at its commit (a persisted "k/0 tasks"
        # condition) or, when it fails (404 after the delete), once the scheduler has its answer.
        persisted = no_taskless_condition_persisted()
        if persisted is not None:
            return persisted
        if sched.taskless_writes:
            return (
                f"the scheduler sent a PodGroup update for job {NAMESPACE}/{pg_name} while the job had no tasks "
                f"in the session: {sched.taskless_writes[0]} (volcano#4011)"
            )
        return None

    def no_taskless_condition_persisted() -> str | None:
        for pg in api.peek_all("PodGroup"):
            for c in pg.status.get("conditions", []):
                if c["type"] == POD_GROUP_UNSCHEDULABLE and _TASKLESS_MESSAGE.match(c["message"]):
                    return f"PodGroup {pg.key} holds the condition '{c['message']}' computed for a job with no tasks"
        return None

    world.invariant(no_taskless_writes, "no PodGroup write for a job with no tasks")

    await world.sleep(delete_at, label="user waits")
    await api.delete("Job", NAMESPACE, "j1", propagation="Background")


RACES = [
    Race(
        name="volcano_gang_close",
        title="Volcano gang OnSessionClose writes a '1/0 tasks' condition for a job whose pod is gone",
        upstream="volcano-sh/volcano#4011 (fix PR #4012, 15ebb45e)",
        scenario=scenario,
        params={},
        faults="all",  # the fixed variant is clean with every fault kind placed (tests/races/test_registry.py)
        budget=200,
        strategy="random",
        known_open=False,
        key_events=(
            "delete Job default/j1",
            "scheduler/informer/Pod deliver DELETED default/j1-worker-0",
            "open session",
            "update_status PodGroup",
        ),
    ),
]
