"""Volcano: a stale deleted-job retry removes a new PodGroup's job from the scheduler cache.

Two races share this model of a Deployment's ReplicaSet scheduled by Volcano:

``volcano_deleted_jobs`` -- volcano-sh/volcano#3374, fix PR #3375, commit ``2832dfe1``
("fix podgroup retry"; cherry-pick #3376).
The scheduler cache queues **pointers** (``*JobInfo``) in its rate-limited
``DeletedJobs`` queue. ``processCleanupJob`` judges ``JobTerminated`` on the queued
pointer but deletes ``sc.Jobs[key]`` by key. A failed cleanup (the PodGroup is gone but
the terminating pod is still a task) leaves a rate-limited re-add waiting; neither the
later successful cleanup nor ``Forget`` cancels it, so it fires after the same key was
re-populated by a new PodGroup and deletes the **new** job: its pod stays Pending.
The fix gives ``JobInfo`` a ``PgUID`` (set by ``SetPodGroup``, kept by
``UnsetPodGroup``) and deletes only when the cached job's ``PgUID`` equals the queued one's.

``volcano_deleted_jobs_api`` -- the API-level form: volcano-sh/volcano#3563, fix PR #3561
(merge ``ed254101``; cherry-picks #3572, #3574). The pg-controller deletes
``podgroup-<rs.UID>`` **by name** on every ReplicaSet event with ``replicas == 0``; a
stale such event handled after a scale-up deletes the PodGroup the pod worker just
created, and the pod (already annotated with the group name) is never given a new one.
The upstream fix does *not* add a delete precondition: on a ReplicaSet event with
``replicas > 0`` it lists the ReplicaSet's pods and calls ``createNormalPodPGIfNotExist``
for the first one, which consults the (possibly stale) PodGroup lister.

Modelled from volcano-sh/volcano at ``2832dfe1^`` (and ``ed254101`` for #3561), read there:

* ``pkg/scheduler/cache/cache.go`` ``deleteJob``/``retryDeleteJob``/``processCleanupJob``
  (one goroutine), ``Snapshot``, and ``event_handlers.go`` ``getOrCreateJob``, ``addTask``,
  ``addPod``, ``updatePod`` (``deletePod(old)`` then ``addPod(new)``), ``deletePod``,
  ``deleteTask``, ``setPodGroup``, ``deletePodGroup``; ``pkg/scheduler/api/job_info.go``
  ``JobInfo``, ``SetPodGroup``, ``UnsetPodGroup``; ``helpers.go`` ``JobTerminated``,
  ``getTaskStatus`` -> the scheduler-cache model shared with ``volcano_gang_close`` in
  :mod:`races._volcano_cache` (``fixed`` here is its ``fixed_3375``); this module's
  :class:`SchedulerCache` only adds the cleanup oracle's hook;
* ``cache.go`` ``Bind`` -> :class:`Scheduler`;
* ``pkg/controllers/podgroup/pg_controller.go`` ``processNextReq`` and
  ``pg_controller_handler.go`` ``addPod``, ``addReplicaSet``/``updateReplicaSet``,
  ``createNormalPodPGIfNotExist``, ``updatePodAnnotations`` -> :class:`PodGroupController`.

Not Volcano, simplified: the ReplicaSet controller (:class:`ReplicaSetController`, 5
workers as ``--concurrent-replicaset-syncs``) watches only ReplicaSets and reads the
ReplicaSet and its pods with live GET/LIST instead of listers plus expectations;
the scheduler's session only binds pending tasks of jobs that have a PodGroup (no
plugins, no PodGroup status writes); binding is a patch of ``spec.nodeName``; the pod's
container ignores SIGTERM, so the kubelet removes it when the grace period expires.

The user's operations are methods of :class:`Cluster` (``scale_to``, ``wait``,
``wait_until_bound``, ``wait_until_pods_gone``, ``delete_pod``) so that a stateful
machine can drive them; :func:`scenario` is the issue's fixed sequence 1 -> 0 -> 1.

Where the nondeterminism of volcano#3374 lies: with a graceful pod deletion the
PodGroup's DELETED always reaches the scheduler long before the pod's, so a failed
cleanup and a waiting rate-limited retry of the old ``*JobInfo`` are certain; the bug
needs the scale-up (and the new JobInfo) to land *before that retry fires*, i.e. it is a
race between the user's timing and the retry backoff (about 11 s after a 30 s grace
period here), not between two controller steps. :func:`scenario` therefore draws the
user's pause as a data choice: 0 (canonical) waits 20 s and every retry has drained;
1 scales up as soon as ``kubectl wait`` sees the pod gone. Scheduling choices do not
matter for the minimal counterexample (1 deviation: the pause).

A residual race the #3375 fix leaves, closed upstream by PR #4753 (``b41b700e``, v1.14.0):
#3375 compares ``PgUID`` strings, and a ``JobInfo`` made by a pod before the scheduler's
PodGroup informer delivered its PodGroup has an empty one. With ``pause=9`` (8-10.5 s; a
5 s ``grace`` does it too) the random search finds, in 3 deviations (the PodGroup
informer's first LIST 3 s late, the new PodGroup's ADDED held until a stale retry of an
empty-``PgUID`` job fires, the 9 s pause), the cleanup comparing "" with "" and deleting
the new job with its pod's task. Upstream has the same gap from ``2832dfe1`` through
release-1.13, read there; #4753 queues ``<key>/<PgUID>`` strings and judges
``JobTerminated`` on the job now cached, so it never deletes one with a task or a
PodGroup. ``fixed_4753=True`` models it, clean where #3375 is not
(``test_the_3375_fix_leaves_a_residual_race_that_4753_closes``). It is registered as its own
race, ``volcano_deleted_jobs_3375_residual`` (:func:`scenario_3375_residual`): buggy is #3375,
fixed is #4753, and the oracle is the upstream symptom (the new pod is never bound), since
#4753 changes what the cleanup may delete. The 9 s pause is the user's, one of the pauses
that land in the retry's window (8, 8.5 and 10 s find it too). ``volcano_deleted_jobs`` keeps
#3375 as its fixed variant at the pauses the issue describes (20 s, none).

The API-level race (:func:`scenario_api`) needs no timing: the pg-controller's
ReplicaSet handler is a single listener that makes one DELETE per ``replicas == 0``
event, so during a rolling upgrade of several Deployments (``others`` ReplicaSets
ahead of ours) it falls behind the pod path in the canonical order. Buggy: the stale
event deletes the PodGroup just created for the new pod (0 deviations). Fixed (#3561):
the ``replicas == 1`` event re-creates the PodGroup only if the pg-controller's
PodGroup lister says NotFound; one deviation (the handler runs before the lister sees
the PodGroup's DELETED) leaves the pod annotated with a group that does not exist, so
the race is ``known_open`` (compare the still-open volcano#5972 for StatefulSets). A
delete with a UID precondition taken from that same lister would not close it either:
the lister may already hold the new PodGroup, whose UID the precondition then matches.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.kube import (
    AlreadyExists,
    ApiError,
    APIServer,
    Conflict,
    Controller,
    Informer,
    KubeObject,
    NotFound,
    WatchEvent,
    WorkQueue,
    controller_ref,
)
from harness.sim import World
from harness.stateful import RaceMachine, integers, rule, sampled_from
from races import _volcano_cache
from races._registry import Race
from races._volcano_cache import GROUP_NAME_ANNOTATION as GROUP_NAME_ANNOTATION
from races._volcano_cache import JobInfo as JobInfo
from races._volcano_cache import TaskInfo as TaskInfo
from races._volcano_cache import job_terminated as job_terminated

NAMESPACE = "default"
RS_NAME = "rs1"
SCHEDULER_NAME = "volcano"
NODE = "node-1"
PODGROUP_NAME_PREFIX = "podgroup-"  # batchv1alpha1.PodgroupNamePrefix


# -------------------------------------------------------- the scheduler cache
class SchedulerCache(_volcano_cache.SchedulerCache):
    """The shared scheduler cache (:mod:`races._volcano_cache`) with this race's oracle hook.

    ``fixed`` is volcano#3375 (``fixed_3375``). :attr:`wrong_deletions` records every
    removal of a ``sc.Jobs`` entry the cleanup should not have made.
    """

    def __init__(
        self, world: World, pods: Informer, pod_groups: Informer, *, fixed: bool, fixed_4753: bool = False
    ) -> None:
        super().__init__(world, pods, pod_groups, fixed_3375=fixed, fixed_4753=fixed_4753)
        #: oracle food: every removal of a sc.Jobs entry the cleanup should not have made
        self.wrong_deletions: list[str] = []

    def on_cleanup_delete(self, queued: JobInfo | None, cached: JobInfo) -> None:
        if queued is None:  # #4753 queues keys: a wrong deletion is one that loses a task or a PodGroup
            wrong, what = bool(cached.tasks) or cached.pod_group is not None, ""
        else:
            wrong, what = cached is not queued or cached.pod_group is not None, f"dequeued {queued} but "
        if wrong:
            self.wrong_deletions.append(
                f"processCleanupJob {what}deleted sc.Jobs[{cached.uid}] = {cached} "
                f"(PodGroup {'set' if cached.pod_group is not None else 'nil'}, {len(cached.tasks)} task(s)) "
                "at t={:g}".format(self._world.now)
            )


class Scheduler:
    """``runOnce`` every ``period``: snapshot, then bind every pending task of a gang-valid job."""

    def __init__(self, world: World, api: APIServer, cache: SchedulerCache, period: float = 1.0) -> None:
        self._world = world
        self.api = api
        self.cache = cache
        self.period = period

    async def run(self) -> None:
        await self.cache.wait_for_cache_sync()  # scheduler.Run: cache.Run, then WaitForCacheSync
        while True:
            # the wake-up is the yield point before the snapshot (one step per idle session)
            await self._world.sleep(self.period, label="schedule period elapsed: open session")
            await self.run_once()

    async def run_once(self) -> None:
        for job in self.cache.snapshot().values():
            pending = [t for t in job.tasks.values() if t.status == "Pending"]
            if not pending or len(job.tasks) < job.min_available:
                continue
            for task in pending:
                await self.bind(job, task)

    async def bind(self, job: JobInfo, task: TaskInfo) -> None:
        cached = self.cache.jobs.get(job.uid)
        if cached is not None and task.uid in cached.tasks:
            cached.tasks[task.uid].status = "Binding"  # cache.AddBindTask
        try:
            await self.api.patch("Pod", task.namespace, task.name, {"spec": {"nodeName": NODE}})
        except NotFound:
            pass
        except ApiError:  # a failed bind: cache.resyncTask puts the task back, the next session retries
            if cached is not None and task.uid in cached.tasks:
                cached.tasks[task.uid].status = "Pending"


# ------------------------------------------------------------ pg-controller
class PodGroupController:
    """``pgcontroller`` for normal pods. ``fixed_3561`` switches ``addReplicaSet`` to PR #3561."""

    def __init__(self, world: World, api: APIServer, *, fixed_3561: bool) -> None:
        self._world = world
        self.api = api
        self.fixed_3561 = fixed_3561
        self.pods = Informer(world, api, "Pod", name="pg-controller/informer/Pod")
        self.replica_sets = Informer(world, api, "ReplicaSet", name="pg-controller/informer/ReplicaSet")
        self.pod_groups = Informer(world, api, "PodGroup", name="pg-controller/informer/PodGroup")
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue(world, "pg-controller")
        # The ReplicaSet handler calls the apiserver, so it blocks its listener goroutine:
        # model the listener as an actor draining the notifications in order.
        self.rs_events = world.Queue()
        self.pods.add_event_handler(self.add_pod, None, None)
        self.replica_sets.add_event_handler(self.rs_events.put_nowait, lambda _o, n: self.rs_events.put_nowait(n))

    def start(self) -> None:
        for inf in (self.pods, self.replica_sets, self.pod_groups):
            inf.start()
        self._world.spawn("pg-controller/worker", self.worker, daemon=True)
        self._world.spawn("pg-controller/rs-handler", self.rs_handler, daemon=True)

    def add_pod(self, pod: KubeObject) -> None:
        self.queue.add((pod.namespace, pod.name))

    async def rs_handler(self) -> None:
        while True:
            rs = await self.rs_events.get("pg-controller/rs-handler wait for ReplicaSet event")
            await self.add_replica_set(rs)

    async def add_replica_set(self, rs: KubeObject) -> None:
        """``addReplicaSet`` (``updateReplicaSet`` calls it with the new object)."""
        replicas = int(rs.spec.get("replicas", 1))
        pg_name = PODGROUP_NAME_PREFIX + rs.uid
        if replicas == 0:
            try:
                await self.api.delete("PodGroup", rs.namespace, pg_name)  # by name: no preconditions
            except ApiError:  # `if err != nil && !IsNotFound(err) { klog.Errorf(...) }`: logged, not retried
                pass
        if self.fixed_3561 and replicas > 0:
            # PR #3561: "the addReplicaSet(replicas=0) event may be received before the
            # updateReplicaSet(replicas=1) event": list the pods and create the PodGroup if missing.
            pods = await self.api.list("Pod", rs.namespace, rs.spec.get("selector"))
            if pods:
                try:
                    await self.create_normal_pod_pg_if_not_exist(pods[0])
                except ApiError:
                    pass

    async def worker(self) -> None:
        while True:
            req = await self.queue.get()
            try:
                await self.process_next_req(req)
            finally:
                self.queue.done(req)

    async def process_next_req(self, req: tuple[str, str]) -> None:
        pod = self.pods.lister.try_get(*req)
        if pod is None or pod.spec.get("schedulerName") != SCHEDULER_NAME:
            return
        if pod.annotations.get(GROUP_NAME_ANNOTATION):
            return  # "has created podgroup"
        try:
            await self.create_normal_pod_pg_if_not_exist(pod)
        except ApiError:
            self.queue.add_rate_limited(req)
            return
        self.queue.forget(req)

    async def create_normal_pod_pg_if_not_exist(self, pod: KubeObject) -> None:
        owner = pod.controller_owner()
        pg_name = PODGROUP_NAME_PREFIX + (owner.uid if owner is not None else pod.uid)  # GeneratePodgroupName
        if self.pod_groups.lister.try_get(pod.namespace, pg_name) is None:
            pg = KubeObject(
                "PodGroup",
                pod.namespace,
                pg_name,
                owner_references=list(pod.owner_references) or [controller_ref(pod)],
                spec={"minMember": 1},
                status={"phase": "Pending"},
            )
            try:
                await self.api.create(pg)
            except AlreadyExists:
                pass
        await self.update_pod_annotations(pod, pg_name)

    async def update_pod_annotations(self, pod: KubeObject, pg_name: str) -> None:
        if not pod.annotations.get(GROUP_NAME_ANNOTATION):
            await self.api.patch(
                "Pod", pod.namespace, pod.name, {"metadata": {"annotations": {GROUP_NAME_ANNOTATION: pg_name}}}
            )


# ---------------------------------------------------- ReplicaSet controller
class ReplicaSetController:
    """kube-controller-manager's ReplicaSet controller, reduced to what the race needs.

    ``status_updates`` writes ``status.replicas`` after each sync, as upstream does;
    each write is one more ReplicaSet MODIFIED event carrying the current spec.
    """

    def __init__(self, world: World, api: APIServer, *, grace: int, status_updates: bool, workers: int) -> None:
        self._world = world
        self.api = api
        self.grace = grace
        self.status_updates = status_updates
        self.replica_sets = Informer(world, api, "ReplicaSet", name="replicaset-controller/informer/ReplicaSet")
        self.controller: Controller[str] = Controller(
            world, "replicaset-controller", self.sync_replica_set, workers=workers
        )
        self.replica_sets.add_event_handler(
            lambda rs: self.controller.enqueue(rs.key), lambda _o, rs: self.controller.enqueue(rs.key), None
        )
        self.created = 0

    def start(self) -> None:
        self.replica_sets.start()
        self.controller.start()

    def new_pod(self, rs: KubeObject) -> KubeObject:
        """The pod template: scheduled by Volcano, labelled for the selector, owned by ``rs``."""
        self.created += 1
        return KubeObject(
            "Pod",
            rs.namespace,
            f"{rs.name}-{self.created}",
            labels=dict(rs.spec.get("selector") or {}),
            owner_references=[controller_ref(rs)],
            spec={"schedulerName": SCHEDULER_NAME, "terminationGracePeriodSeconds": self.grace},
            status={"phase": "Pending"},
        )

    async def sync_replica_set(self, key: str) -> None:
        ns, name = key.split("/", 1)
        try:
            rs = await self.api.get("ReplicaSet", ns, name)
        except NotFound:
            return
        pods = await self.api.list("Pod", ns, rs.spec.get("selector"))
        active = [p for p in pods if p.deletion_timestamp is None and _owned_by(p, rs)]
        want = int(rs.spec.get("replicas", 1))
        for _ in range(want - len(active)):
            await self.api.create(self.new_pod(rs))
        for pod in active[want:] if want < len(active) else []:
            try:
                await self.api.delete("Pod", ns, pod.name, uid=pod.uid)
            except (NotFound, Conflict):
                pass
        if self.status_updates and rs.status.get("replicas") != want:
            rs.status["replicas"] = want  # a 409 is an error: the controller re-queues the key
            await self.api.update_status(rs)


def _owned_by(pod: KubeObject, owner: KubeObject) -> bool:
    ref = pod.controller_owner()
    return ref is not None and ref.uid == owner.uid


# -------------------------------------------------------------------- cluster
class Cluster:
    """The system under test plus the user's operations (each an async method)."""

    def __init__(
        self,
        world: World,
        *,
        fixed: bool = False,
        fixed_3561: bool = False,
        fixed_4753: bool = False,
        grace: int = 30,
        status_updates: bool = False,
        rs_workers: int = 5,
    ) -> None:
        self.world = world
        # three processes that meet only at the apiserver (the scheduler's is declared by its cache)
        world.share_memory("replicaset-controller")
        world.share_memory("pg-controller")
        self.api = APIServer(world)
        # --concurrent-replicaset-syncs: 5 by default
        self.rs_controller = ReplicaSetController(
            world, self.api, grace=grace, status_updates=status_updates, workers=rs_workers
        )
        self.pg_controller = PodGroupController(world, self.api, fixed_3561=fixed_3561)
        pods = Informer(world, self.api, "Pod", name="scheduler/informer/Pod")
        pod_groups = Informer(world, self.api, "PodGroup", name="scheduler/informer/PodGroup")
        self._scheduler_informers = (pods, pod_groups)
        self.cache = SchedulerCache(world, pods, pod_groups, fixed=fixed, fixed_4753=fixed_4753)
        self.scheduler = Scheduler(world, self.api, self.cache)
        self.rs_uid = ""

    async def start(self, replicas: int = 1) -> None:
        """Create the ReplicaSet in its steady state (pods bound and annotated, the PodGroup
        created by the pg-controller), then start every controller: their initial LISTs
        build the caches, so the runs start from "the workload has been running"."""
        rs = await self.api.create(
            KubeObject(
                "ReplicaSet",
                NAMESPACE,
                RS_NAME,
                spec={"replicas": replicas, "selector": {"app": RS_NAME}},
                status={"replicas": replicas},
            )
        )
        self.rs_uid = rs.uid
        if replicas:
            await self.api.create(
                KubeObject(
                    "PodGroup",
                    NAMESPACE,
                    self.pod_group_name(),
                    owner_references=[controller_ref(rs)],
                    spec={"minMember": 1},
                    status={"phase": "Running"},
                )
            )
        for _ in range(replicas):
            pod = self.rs_controller.new_pod(rs)
            pod.annotations[GROUP_NAME_ANNOTATION] = self.pod_group_name()
            pod.spec["nodeName"] = NODE
            pod.status["phase"] = "Running"
            await self.api.create(pod)
        self.rs_controller.start()
        self.pg_controller.start()
        for inf in self._scheduler_informers:
            inf.start()
        self.world.spawn("scheduler/cleanup-job", self.cache.run_cleanup, daemon=True)
        self.world.spawn("scheduler", self.scheduler.run, daemon=True)

    # ---- the user's operations
    async def scale_to(self, replicas: int) -> None:
        """``kubectl scale rs/rs1 --replicas=N``."""
        await self.api.patch("ReplicaSet", NAMESPACE, RS_NAME, {"spec": {"replicas": replicas}})

    async def wait(self, seconds: float) -> None:
        await self.world.sleep(seconds, label=f"user waits {seconds:g}s")

    async def delete_pod(self, name: str) -> None:
        try:
            await self.api.delete("Pod", NAMESPACE, name)
        except NotFound:
            pass

    async def wait_until(self, check: Callable[[], bool], what: str) -> None:
        """``kubectl wait``: a watch on pods, re-checked at every pod event (one step when it holds)."""
        if check():
            return
        done = self.world.Event()

        def on_event(_ev: WatchEvent) -> None:
            if not done.is_set() and check():
                done.set()
                stop()

        stop = self.api.watch("Pod", on_event)
        await done.wait(f"user: kubectl wait until {what}")

    async def wait_until_bound(self) -> None:
        await self.wait_until(lambda: bool(self.pods()) and all(self.bound(p) for p in self.pods()), "pods bound")

    async def wait_until_pods_gone(self) -> None:
        await self.wait_until(lambda: not self.pods(), "pods gone")

    # ---- observations (no requests: for the user's polling and the oracles)
    def pods(self) -> list[KubeObject]:
        return [p for p in self.api.peek_all("Pod") if p.labels.get("app") == RS_NAME]

    @staticmethod
    def bound(pod: KubeObject) -> bool:
        return bool(pod.spec.get("nodeName"))

    def pod_group_name(self) -> str:
        return PODGROUP_NAME_PREFIX + self.rs_uid

    # ---- oracles
    def check_cleanup(self) -> str | None:
        return self.cache.wrong_deletions[0] if self.cache.wrong_deletions else None

    def check_every_pod_group_cached(self) -> str | None:
        for pg in self.api.peek_all("PodGroup"):
            job = self.cache.jobs.get(pg.key)
            if job is None or job.pg_uid != pg.uid:
                have = "no JobInfo" if job is None else f"{job}"
                return f"PodGroup {pg.key} ({pg.uid}) exists but the scheduler cache has {have} for it"
        return None

    def check_pods_have_pod_groups(self) -> str | None:
        for pod in self.pods():
            group = pod.annotations.get(GROUP_NAME_ANNOTATION)
            if group and self.api.peek("PodGroup", pod.namespace, group) is None:
                return f"Pod {pod.key} is annotated with group {group!r} but that PodGroup does not exist"
        return None

    def expect_bound_within(self, seconds: float) -> None:
        """Liveness: a pod of the ReplicaSet is bound within ``seconds`` of now."""
        since = self.world.now

        def bound() -> str | None:
            pods = self.pods()
            if pods and all(self.bound(p) for p in pods):
                return None
            return f"no pod of ReplicaSet {RS_NAME} bound since the scale-up at t={since:g}"

        self.world.eventually(bound, within=seconds, name=f"pod bound within {seconds:g}s of the scale-up")


#: how long the user pauses between seeing the old pod gone and scaling back up: index 0
#: (canonical) lets every pending cleanup retry drain; index 1 (``pause``, none by default)
#: scales up sooner.
PAUSES = (20.0, 0.0)


async def scenario(
    world: World,
    *,
    fixed: bool = False,
    grace: int = 30,
    settle: float = 0.5,
    pause: float = PAUSES[1],
    fixed_4753: bool = False,
) -> None:
    """volcano#3374: scale 1 -> 0, wait for the pod to go, scale back to 1.

    ``settle``: how long the user looks at the running job before scaling down.
    It places nothing: the search finds the bug whatever it is
    (``test_the_first_pause_does_not_place_the_bug``). ``pause``: the shorter of the
    two pauses the search may draw before scaling back up. ``fixed_4753``: the
    cleanup of volcano PR #4753 (keys, ``JobTerminated`` on the cached job) instead
    of #3375's; at a ``pause`` of 8-10 s only it is clean (the residual race above).
    """
    world.horizon = 10_000.0
    # one ReplicaSet: one sync at a time
    c = Cluster(world, fixed=fixed or fixed_4753, grace=grace, rs_workers=1, fixed_4753=fixed_4753)
    world.invariant(c.check_cleanup, "cleanup deletes only its own job")
    await _scale_down_and_up(world, c, settle=settle, pause=pause)


async def scenario_3375_residual(world: World, *, fixed: bool = False, pause: float = 9.0, grace: int = 30) -> None:
    """The residual race of #3375: buggy is #3375's cleanup, ``fixed`` is #4753's.

    The same user sequence as :func:`scenario`; the oracle is the upstream symptom alone (the
    new pod is never bound: not within :data:`RESIDUAL_BOUND` of the scale-up), not the cleanup
    invariant, since #4753 changes what the cleanup deletes. ``pause``: the shorter of the user's two pauses
    before scaling back up; the retry backoff decides which pauses land in the window
    (``test_3375_residual_pause_places_nothing``).
    """
    world.horizon = 10_000.0
    c = Cluster(world, fixed=True, grace=grace, rs_workers=1, fixed_4753=fixed)
    await _scale_down_and_up(world, c, settle=0.5, pause=pause, bound=RESIDUAL_BOUND)


#: The residual's liveness bound: the upstream symptom is a pod that is never bound (its job was deleted from
#: the scheduler cache), not one bound late. A pod is bound within a session (1 s) of the scheduler's cache
#: seeing it; a watch that drops or a LIST that fails delays that by the reflector's backoff, which client-go
#: caps at 30 s (reflector.go: NewExponentialBackoffManager(800ms, 30s, ...)), plus each delivery's lag. With
#: a 10 s bound, `--faults all` found the #4753 fix "failing" after two watch drops and a failed LIST (backoffs
#: of 0.8, 1.6 and 3.2 s behind 5 s of lag): late, not never.
RESIDUAL_BOUND = 40.0


async def _scale_down_and_up(
    world: World, c: Cluster, *, settle: float, pause: float, bound: float = 10.0
) -> None:
    """volcano#3374's user: scale 1 -> 0, wait for the pod to go, pause (a choice), scale back to 1."""
    world.at_end(c.check_every_pod_group_cached, "every PodGroup has its JobInfo")
    await c.start(replicas=1)
    await c.wait(settle)
    await c.scale_to(0)
    await c.wait_until_pods_gone()
    pauses = (PAUSES[0], pause)
    label = f"user: pause before scaling back up (0: {PAUSES[0]:g} s, 1: {f'{pause:g} s' if pause else 'none'})"
    wait = pauses[world.choose(label, len(pauses))]
    if wait:
        await c.wait(wait)
    await c.scale_to(1)
    c.expect_bound_within(bound)
    world.horizon = world.now + bound + 2.0


async def scenario_api(world: World, *, fixed: bool = False, others: int = 2) -> None:
    """volcano#3563: a rolling upgrade of several Deployments.

    Each Deployment's new ReplicaSet is created with ``replicas: 0`` and scaled to 1
    right after. The pg-controller's ReplicaSet handler deletes ``podgroup-<uid>`` for
    every ``replicas == 0`` event, one API call per event, so with ``others`` other
    ReplicaSets ahead of ours it runs behind the pod path (RS controller creates the
    pod, the pg-controller creates the PodGroup and annotates the pod); if our stale
    ADD(replicas=0) is handled after that, it deletes the new PodGroup.
    """
    world.horizon = 10_000.0
    c = Cluster(world, fixed=True, fixed_3561=fixed)
    world.at_end(c.check_pods_have_pod_groups, "every pod's PodGroup exists")
    for i in range(others):
        await c.api.create(
            KubeObject("ReplicaSet", NAMESPACE, f"other-{i}", spec={"replicas": 0, "selector": {"app": f"other-{i}"}})
        )
    await c.start(replicas=0)
    await c.scale_to(1)
    c.expect_bound_within(10.0)
    world.horizon = world.now + 12.0


RACES = [
    Race(
        name="volcano_deleted_jobs",
        title="Volcano: a stale DeletedJobs retry deletes the new PodGroup's job from the scheduler cache",
        upstream="volcano-sh/volcano#3374 (fix PR #3375, 2832dfe1)",
        scenario=scenario,
        params={},
        # Not every kind: with a watch end and several late deliveries stacked (7 plan entries), the
        # fixed variant's first bind after the scale-up misses the 10 s liveness bound. That is lag
        # adding up against a tight bound, not the cleanup bug; the bound would need to grow with it.
        budget=200,
        strategy="random",
        known_open=False,
        key_events=(
            "delete PodGroup default/podgroup-",
            "scheduler/informer/PodGroup deliver DELETED",
            "DeletedJobs ready JobInfo",
            "grace period of Pod default/rs1-1 expired",
            "user: pause before scaling back up",
            "scheduler/informer/Pod deliver DELETED default/rs1-1",
            "create PodGroup default/podgroup-",
            "scheduler/informer/PodGroup deliver ADDED",
            "DeletedJobs ready JobInfo",
        ),
    ),
    Race(
        name="volcano_deleted_jobs_3375_residual",
        title="Volcano #3375's residual: two empty PgUIDs match, so a stale retry deletes the new job",
        upstream="volcano-sh/volcano#3374 (buggy: fix PR #3375, 2832dfe1; fixed: PR #4753, b41b700e)",
        scenario=scenario_3375_residual,
        params={},
        # A random run meets it about once in 600 (51 seeds: median 365 runs, 2 beyond 3,000: at 3,235 and 5,968),
        # so 3,000 runs missed it under about one session seed in a hundred; 6,000 leaves about e**-10.
        budget=6000,
        strategy="random",
        known_open=False,
        key_events=(
            "scheduler/informer/PodGroup",
            "DeletedJobs ready JobInfo",
            "user: pause before scaling back up",
            "create PodGroup default/podgroup-",
            "DeletedJobs ready JobInfo",
        ),
    ),
    Race(
        name="volcano_deleted_jobs_api",
        title="Volcano pg-controller: a stale replicas=0 ReplicaSet event deletes the new PodGroup by name",
        upstream="volcano-sh/volcano#3563 (fix PR #3561, ed254101)",
        scenario=scenario_api,
        params={"others": 2},
        budget=300,
        # The referee, not a random walk: its known-open fixed variant fails in 1 plan entry, which the referee
        # meets at run 57 whatever the seed; a random walk missed it in 300 runs under 2 of 51 session seeds
        # (tests/races/test_registry.py, the fifty-seed test), so CI's verdict hung on the seed.
        strategy="exhaustive",
        known_open=True,
        key_events=(
            "deliver ADDED default/rs1-1",
            "create PodGroup default/podgroup-",
            "delete PodGroup default/podgroup-",
        ),
    ),
]


# -------------------------------------------------------------------- machine
class ScaleChurnMachine(RaceMachine):
    """volcano#3374 as a stateful test: the user scales ReplicaSet ``rs1`` up and down.

    The rules are the user operations of the issue ("a Deployment scaled 1->0->1
    repeatedly"); Hypothesis picks their order, arguments and the pauses, and
    the harness the interleavings. The shrunk program is the upstream report:
    ``scale_to(0)`` (waiting for the pod to go), then ``scale_to(1)`` promptly.
    """

    max_rules = 4
    budget = 400

    async def setup(self) -> None:
        self.world.horizon = 10_000.0
        self.c = Cluster(self.world, fixed=self.fixed, grace=30, rs_workers=1)
        self.world.invariant(self.c.check_cleanup, "cleanup deletes only its own job")
        self.world.at_end(self.c.check_every_pod_group_cached, "every PodGroup has its JobInfo")
        self.replicas = 1
        await self.c.start(replicas=1)
        await self.c.wait(0.5)  # between two session ticks

    @rule(replicas=integers(0, 1))
    async def scale_to(self, replicas: int) -> None:
        """``kubectl scale --replicas=N``, then (scaling to 0) ``kubectl wait`` until the pods are gone."""
        self.replicas = replicas
        await self.c.scale_to(replicas)
        if replicas == 0:
            await self.c.wait_until_pods_gone()

    @rule(seconds=sampled_from([20.0, 5.0]))
    async def pause(self, seconds: float) -> None:
        await self.c.wait(seconds)

    async def teardown(self) -> None:
        if self.replicas:
            self.c.expect_bound_within(10.0)
        self.world.horizon = self.world.now + 60.0
