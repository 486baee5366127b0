"""Volcano's scheduler cache: ``JobInfo``/``TaskInfo`` and the Pod/PodGroup event handlers.

Shared by both Volcano scheduler-cache races, :mod:`races.volcano_deleted_jobs`
(volcano-sh/volcano#3374, modelled at ``2832dfe1^``, fix PR #3375 = ``2832dfe1``) and
:mod:`races.volcano_gang_close` (volcano-sh/volcano#4011, modelled at ``15ebb45e^``).
What the two races do differently is a parameter or a hook here; their schedulers,
oracles and scenarios stay in the race modules.

Modelled from volcano-sh/volcano (read at ``2832dfe1^`` and ``15ebb45e^``):

* ``pkg/scheduler/api/job_info.go`` ``JobInfo`` (``SetPodGroup``, ``UnsetPodGroup``,
  ``AddTaskInfo``, ``DeleteTaskInfo``, ``Clone``, ``IsReady``, ``ReadyTaskNum``,
  ``FitError``) -> :class:`JobInfo`; ``TaskInfo`` -> :class:`TaskInfo`;
  ``helpers.go`` ``getTaskStatus``, ``JobTerminated`` -> :func:`task_status`,
  :func:`job_terminated`;
* ``pkg/scheduler/cache/event_handlers.go`` ``getOrCreateJob``, ``addTask``, ``addPod``,
  ``updatePod`` (``deletePod(old)`` then ``addPod(new)``), ``deleteTask``, ``deletePod``
  (``deleteTask``, then ``deleteJob`` only if ``JobTerminated``), ``setPodGroup``,
  ``addPodGroup``/``updatePodGroup``/``deletePodGroup`` (``UnsetPodGroup`` + ``deleteJob``)
  -> the same names on :class:`SchedulerCache`;
* ``pkg/scheduler/cache/cache.go`` ``deleteJob``/``retryDeleteJob``, the rate-limited
  ``DeletedJobs`` queue of ``*JobInfo``, ``processCleanupJob`` (one goroutine) and
  ``Snapshot`` -> :class:`SchedulerCache`.

``fixed_3375`` switches ``processCleanupJob`` to the PgUID check of volcano#3375 (commit
``2832dfe1``, "fix podgroup retry"): ``JobInfo.PgUID`` is set by ``SetPodGroup``, kept by
``UnsetPodGroup``, and the cleanup deletes ``sc.Jobs[key]`` only when its ``PgUID`` equals
the queued job's. At ``15ebb45e^`` (2025) that fix is already upstream, so the gang race
runs the cache with ``fixed_3375=True``; the deleted-jobs race toggles it.

``fixed_4753`` is the later rework, volcano-sh/volcano PR #4753 (commit ``b41b700e``, first
in v1.14.0-alpha.1, read in ``cache.go`` ``deleteJob``, ``processCleanupJob``,
``generateDeletedJobsKey``): ``DeletedJobs`` holds string keys ``<namespace/name>/<PgUID>``
instead of pointers, and the cleanup judges ``JobTerminated`` on the job **now** in
``sc.Jobs``, deleting it only if its ``PgUID`` matches the key's. #3375 alone compares
``PgUID`` strings, and a job created by a pod before its PodGroup's ADDED reached the
scheduler has an empty one, so a stale retry of one such job can delete another; #4753
never deletes a job that still has a task or a PodGroup.
"""

from __future__ import annotations

from harness.kube import DeletedFinalStateUnknown, Informer, KubeObject, WorkQueue
from harness.sim import World

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"  # scheduling.KubeGroupNameAnnotationKey
POD_GROUP_NOT_READY = "pod group is not ready"  # scheduling.PodGroupNotReady

#: task statuses (pkg/scheduler/api/types.go) that ``ReadyTaskNum`` counts
READY_STATUSES = ("Bound", "Binding", "Running", "Allocated", "Succeeded")
#: ``AllocatedStatus``
ALLOCATED_STATUSES = ("Bound", "Binding", "Running", "Allocated")


# ----------------------------------------------------------------- api types
def task_status(pod: KubeObject) -> str:
    """``getTaskStatus`` (``pkg/scheduler/api/helpers.go``) for the phases the models use."""
    phase = pod.status.get("phase", "Pending")
    if pod.deletion_timestamp is not None and phase in ("Pending", "Running"):
        return "Releasing"
    if phase == "Pending":
        return "Bound" if pod.spec.get("nodeName") else "Pending"
    return str(phase)


class TaskInfo:
    """``api.TaskInfo``: a pod as the scheduler sees it; ``Job`` comes from the group-name annotation."""

    __slots__ = ("job", "name", "namespace", "status", "uid")

    def __init__(self, pod: KubeObject) -> None:
        self.uid = pod.uid
        self.name = pod.name
        self.namespace = pod.namespace
        group = pod.annotations.get(GROUP_NAME_ANNOTATION, "")
        self.job = f"{pod.namespace}/{group}" if group else ""
        self.status = task_status(pod)


class JobInfo:
    """``api.JobInfo``. A plain class: equality and hashing are by identity, like the
    ``*JobInfo`` pointers in ``DeletedJobs`` (two incarnations never deduplicate)."""

    def __init__(self, uid: str) -> None:
        self.uid = uid  # JobID = namespace/podgroup-name: reused across scale cycles
        self.pg_uid = ""  # volcano#3375: set by SetPodGroup, kept by UnsetPodGroup
        self.pod_group: KubeObject | None = None
        self.min_available = 0
        self.tasks: dict[str, TaskInfo] = {}

    @property
    def key(self) -> str:
        return self.uid

    def __str__(self) -> str:  # the work-queue trace label; identity stays the default
        return f"JobInfo {self.uid} (PgUID {self.pg_uid or '-'})"

    def set_pod_group(self, pg: KubeObject) -> None:
        self.min_available = int(pg.spec.get("minMember", 0))
        self.pg_uid = pg.uid
        self.pod_group = pg

    def unset_pod_group(self) -> None:
        self.pod_group = None

    def add_task_info(self, ti: TaskInfo) -> None:
        self.tasks[ti.uid] = ti

    def delete_task_info(self, ti: TaskInfo) -> None:
        self.tasks.pop(ti.uid, None)

    def count(self, *statuses: str) -> int:
        return sum(1 for t in self.tasks.values() if t.status in statuses)

    def ready_task_num(self) -> int:
        return self.count(*READY_STATUSES)

    def is_ready(self) -> bool:
        return self.ready_task_num() >= self.min_available

    def fit_error(self) -> str:
        """``FitError``: a histogram of task statuses plus minAvailable, then pending reasons."""
        reasons: dict[str, int] = {}
        for t in self.tasks.values():
            reasons[t.status] = reasons.get(t.status, 0) + 1
        reasons["minAvailable"] = self.min_available
        msg = f"{POD_GROUP_NOT_READY}, " + ", ".join(sorted(f"{v} {k}" for k, v in reasons.items()))
        pending = self.count("Pending")
        if pending:
            msg += f"; Pending: {pending} Unschedulable"
        return msg

    def clone(self) -> JobInfo:
        """``Clone``: the PodGroup is deep-copied (``PodGroup.Clone()``), the tasks map copied."""
        out = JobInfo(self.uid)
        out.pg_uid = self.pg_uid
        out.min_available = self.min_available
        out.pod_group = None if self.pod_group is None else self.pod_group.deepcopy()
        out.tasks = dict(self.tasks)
        return out


def job_terminated(job: JobInfo) -> bool:
    """``JobTerminated``: ``PodGroup == nil && len(Tasks) == 0``."""
    return job.pod_group is None and not job.tasks


# ---------------------------------------------------------------- the cache
class SchedulerCache:
    """``SchedulerCache``: ``Jobs`` from the Pod and PodGroup informers, and ``DeletedJobs``.

    Handlers run under ``sc.Mutex`` upstream; here each runs inside one scheduled step,
    which is the same atomicity. ``fixed_3375`` switches ``processCleanupJob`` to
    volcano#3375. :meth:`on_cleanup_delete` is a no-op hook for a race's oracle.
    """

    def __init__(
        self, world: World, pods: Informer, pod_groups: Informer, *, fixed_3375: bool, fixed_4753: bool = False
    ) -> None:
        self._world = world
        self.fixed_3375 = fixed_3375
        self.fixed_4753 = fixed_4753
        self.jobs: dict[str, JobInfo] = {}
        # workqueue.NewRateLimitingQueue(DefaultControllerRateLimiter()) of *JobInfo (#4753: of keys)
        self.deleted_jobs: WorkQueue[JobInfo | str] = WorkQueue(world, "DeletedJobs")
        world.share_memory("DeletedJobs", "scheduler")  # the queue's delay timers live in the scheduler
        self.informers = (pods, pod_groups)
        pods.add_event_handler(self.add_pod, self.update_pod, self.delete_pod)
        pod_groups.add_event_handler(self.add_pod_group, self.update_pod_group, self.delete_pod_group)

    async def wait_for_cache_sync(self) -> None:
        """``SchedulerCache.WaitForCacheSync``: the scheduler opens no session before every informer listed."""
        for informer in self.informers:
            await informer.wait_for_cache_sync()

    # ---- event_handlers.go: pods
    def get_or_create_job(self, ti: TaskInfo) -> JobInfo | None:
        if not ti.job:
            return None  # no group-name annotation (yet)
        if ti.job not in self.jobs:
            self.jobs[ti.job] = JobInfo(ti.job)
        return self.jobs[ti.job]

    def add_task(self, ti: TaskInfo) -> None:
        job = self.get_or_create_job(ti)
        if job is not None:
            job.add_task_info(ti)

    def add_pod(self, pod: KubeObject) -> None:
        self.add_task(TaskInfo(pod))

    def update_pod(self, old: KubeObject, new: KubeObject) -> None:
        """``updatePod``: ``deletePod(old)`` (which may queue the job!) then ``addPod(new)``."""
        self._delete_pod(old)
        self.add_pod(new)

    def delete_task(self, ti: TaskInfo) -> None:
        job = self.jobs.get(ti.job) if ti.job else None
        if job is not None:
            job.delete_task_info(ti)

    def _delete_pod(self, pod: KubeObject) -> None:
        ti = TaskInfo(pod)
        self.delete_task(ti)
        job = self.jobs.get(ti.job)
        if job is not None and job_terminated(job):
            self.delete_job(job)

    def delete_pod(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        self._delete_pod(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    # ---- event_handlers.go: pod groups
    def set_pod_group(self, pg: KubeObject) -> None:
        """``setPodGroup``: a **new** JobInfo whenever the key is absent."""
        job_id = f"{pg.namespace}/{pg.name}"
        if job_id not in self.jobs:
            self.jobs[job_id] = JobInfo(job_id)
        self.jobs[job_id].set_pod_group(pg)

    def add_pod_group(self, pg: KubeObject) -> None:
        self.set_pod_group(pg)

    def update_pod_group(self, old: KubeObject, new: KubeObject) -> None:
        if old.resource_version != new.resource_version:
            self.set_pod_group(new)

    def delete_pod_group(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        pg = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        job = self.jobs.get(f"{pg.namespace}/{pg.name}")
        if job is None:
            return  # "can not found job"
        job.unset_pod_group()
        self.delete_job(job)

    # ---- cache.go: DeletedJobs
    def delete_job(self, job: JobInfo) -> None:
        self.deleted_jobs.add(f"{job.uid}/{job.pg_uid}" if self.fixed_4753 else job)  # generateDeletedJobsKey

    def retry_delete_job(self, job: JobInfo | str) -> None:
        self.deleted_jobs.add_rate_limited(job)

    async def run_cleanup(self) -> None:
        """``wait.Until(sc.processCleanupJob, 0, stopCh)``: one goroutine."""
        while True:
            job = await self.deleted_jobs.get()
            self.process_cleanup_job(job)

    def process_cleanup_job(self, job: JobInfo | str) -> None:
        """``processCleanupJob``: judges ``JobTerminated`` on the queued pointer, deletes by key."""
        if isinstance(job, str):
            self._process_cleanup_key(job)
            return
        try:
            if not job_terminated(job):
                self.retry_delete_job(job)
                return
            cur = self.jobs.get(job.uid)
            if cur is None:
                self.deleted_jobs.forget(job)
                return
            if self.fixed_3375 and cur.pg_uid != job.pg_uid:
                # volcano#3375: "Just add pguid:<new>, try to delete pguid:<old>": keep the new job
                self.deleted_jobs.forget(job)
                return
            self.on_cleanup_delete(job, cur)
            del self.jobs[job.uid]
            self.deleted_jobs.forget(job)
        finally:
            self.deleted_jobs.done(job)

    def _process_cleanup_key(self, key: str) -> None:
        """``processCleanupJob`` after #4753: judges ``JobTerminated`` on the job now cached."""
        try:
            uid, _, pg_uid = key.rpartition("/")  # parseDeletedJobsKey: the last '/'
            cur = self.jobs.get(uid)
            if cur is None:
                self.deleted_jobs.forget(key)
                return
            if not job_terminated(cur):
                self.retry_delete_job(key)
                return
            if cur.pg_uid == pg_uid:
                self.on_cleanup_delete(None, cur)
                del self.jobs[uid]
            self.deleted_jobs.forget(key)
        finally:
            self.deleted_jobs.done(key)

    def on_cleanup_delete(self, queued: JobInfo | None, cached: JobInfo) -> None:
        """Called just before ``processCleanupJob`` deletes ``sc.Jobs[key]`` (= ``cached``);
        ``queued`` is the dequeued pointer (None: the queue holds keys, #4753)."""

    def snapshot(self) -> dict[str, JobInfo]:
        """``Snapshot``: clones every job that has a PodGroup (the others are skipped:
        "scheduling spec is nil"), **including jobs with 0 tasks**."""
        return {uid: job.clone() for uid, job in self.jobs.items() if job.pod_group is not None}
