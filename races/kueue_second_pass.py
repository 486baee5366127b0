"""Kueue: a deleted workload outlives its delete in the second-pass queue (kueue#5511).

Upstream
--------
* Symptom: kubernetes-sigs/kueue#5395 and #5416, the flaky TAS integration test "Preemption
  is enabled within ClusterQueue should preempt the low and mid priority workloads ..."
  (``Not enough workloads are admitted, expected 2 got 1``).
* Root cause: kubernetes-sigs/kueue#5511 "Deleted workload entry outlives cq in scheduler
  cache".
* Fix: PR kubernetes-sigs/kueue#5587 "Fix the second pass entries outliving the workload
  delete", commit ``c5eaee29``: the second-pass queue gains a ``prequeued`` set next to the
  ``queued`` map; ``QueueSecondPassIfNeeded`` pre-queues the key before arming the 1 s timer,
  the timer's ``queueSecondPass`` only queues a key that is still pre-queued (and still
  needs a second pass), and ``deleteByKey`` clears both.
* Final fix: PR kubernetes-sigs/kueue#15571 (merged 2026-09; "re-read the live object; the
  request-time snapshot may be healed or deleted"): the delayed callback no longer captures the
  Workload but its namespaced name, and ``queueSecondPass`` starts with
  ``m.client.Get(ctx, nsName, &w)``; on NotFound it logs "Workload not found when queuing for
  second pass; dropping the request" and calls ``secondPassQueue.deleteByKey``. The manager's
  client is controller-runtime's cached client (as the follow-up #15844 says: "the client is
  cached, the only expected error is NotFound"), so the read is the Workload informer's cache.
  Read in the PR's diff of ``pkg/cache/queue/manager.go``; the merge commit is not in the
  snapshot of kueue read here (its newest commit is #14474), so no hash is cited.
  ``fixed=True`` is #5587 plus #15571; ``only_5587=True`` keeps #5587 alone.

Modelled from ``kubernetes-sigs/kueue`` at ``c5eaee29^`` (fix read at ``c5eaee29``):

* ``pkg/queue/manager.go``: ``QueueSecondPassIfNeeded`` (``clock.AfterFunc(time.Second, ...)``,
  here ``world.call_later``), ``queueSecondPass``, ``DeleteWorkload`` →
  ``deleteWorkloadFromQueueAndClusterQueue`` + ``DeleteSecondPassWithoutLock``,
  ``AddOrUpdateWorkload``, ``RequeueWorkload`` (re-reads the cached object),
  ``QueueAssociatedInadmissibleWorkloadsAfter``, ``Add/DeleteClusterQueue``,
  ``AddLocalQueue``, ``Heads`` (blocks on a ``sync.Cond``) and ``heads`` (``takeAllReady``
  first, then one head per ClusterQueue);
* ``pkg/queue/second_pass_queue.go``: ``offer``/``deleteByKey``/``takeAllReady`` (buggy)
  and ``prequeue``/``queue``/``deleteByKey``/``takeAllReady`` (fixed);
* ``pkg/scheduler/scheduler.go``: ``schedule`` (Heads → snapshot → ``nominate`` → admit or
  ``IssuePreemptions`` → ``requeueAndUpdate``), ``nominate`` (the ClusterQueue is looked up
  **by name** from the entry's ``status.admission``; a second-pass entry skips the
  "already assumed" shortcut; the namespace ``Get``, a cached read), ``admit`` (``AssumeWorkload``, then
  ``applyAdmission`` in its own goroutine; on failure ``ForgetWorkload`` and, unless 404,
  ``requeueAndUpdate``), ``requeueAndUpdate`` (``QueueSecondPassIfNeeded`` with the
  *captured* object first) and ``wait.UntilWithBackoff`` (1 ms doubling to 100 ms);
* ``pkg/cache/cache.go``: ``AddClusterQueue`` (adopts cached workloads reserving quota in a
  CQ of that name), ``AddOrUpdateWorkload``, ``UpdateWorkload``, ``DeleteWorkload``,
  ``AssumeWorkload``, ``ForgetWorkload``, ``IsAssumedOrAdmittedWorkload``;
* ``pkg/workload/workload.go``: ``NewInfo`` (``ClusterQueue`` from ``status.admission``),
  ``NeedsSecondPass`` / ``HasTopologyAssignmentWithNodeToReplace``;
* ``pkg/controller/core/workload_controller.go``: the ``Create``/``Update``/``Delete`` event
  predicates; ``pkg/controller/tas/node_failure_controller.go``:
  ``patchWorkloadsForNodeToReplace``.

Simplified: one resource, pods; every node has one pod slot (the upstream tests put 5-CPU pods
on 5-CPU nodes, so topology, not the 20-CPU quota, binds). A first pass needs free Ready
nodes; a node-replacement second pass needs free Ready nodes only for the pods on the failed
node and keeps the others where they are, while ``AssumeWorkload`` counts the whole
workload. Preemption targets are lower-priority workloads of the same ClusterQueue in the
cache snapshot, lowest priority first. No admission checks, cohorts, flavors or fair sharing;
the Pending-condition status patch of ``requeueAndUpdate`` is not sent. Namespaces are never
deleted, as in envtest.

The race
--------
Test A: ``test-a/wl1`` (2 pods on x1, x2) is admitted; node x1 fails; the node-failure
controller patches ``NodeToReplace=x1``; the Update event calls ``QueueSecondPassIfNeeded``,
which arms a 1 s timer holding the object. Test A's ``AfterEach`` deletes wl1 0.3 s later:
``deleteByKey`` finds nothing (the entry only exists inside the timer). Buggy: the timer
then ``offer``\\s the stale object, ``Heads`` returns a deleted workload, and its
``status.admission`` names ``cluster-queue``, a name test B re-creates. The upstream test
sequence always lands the delete inside the window, so the buggy variant fails in the
canonical order (0 deviations); the flake upstream came from what the phantom did later.

With informer lag explored (not placed), #5587 alone is open at 0.3 s as well: one late
delivery of the DELETED event moves the delete past ``takeAllReady`` into the residual window
below. #15571 closes both: whichever side of ``takeAllReady`` the delete lands, the re-armed
timer re-reads the Workload, finds it gone from the cache and drops the request. The final fix
is proved clean to one plan entry and sampled clean with every fault kind.

The residual window #5587 left open (``kueue_second_pass_residual``: buggy is #5587, fixed is
#15571): with the ``AfterEach`` 1 s after the node failure, the delete can land after
``takeAllReady`` has handed the entry to the scheduler and before ``requeueAndUpdate`` pre-queues
it again; the re-armed timer then queues the captured, stale object. One deviation: the
``AfterEach`` delete request runs just before the timer fires (same instant), so its DELETED
event is delivered while the scheduler reads the namespace in ``nominate``.

Oracles: after the queue manager has observed the DELETE of a workload key, no ``Heads()``
result and no preemption target may be that key (safety); in test B both workloads are
admitted within 10 s (liveness).
"""
from __future__ import annotations

from harness.kube import (
    APIServer,
    Controller,
    DeletedFinalStateUnknown,
    Informer,
    KubeObject,
    NotFound,
    Result,
)
from harness.sim import World
from harness.stateful import RaceMachine, precondition, rule, sampled_from
from races._kueue_queue import (
    CQ_NAME,
    LQ_NAME,
    NODE_TO_REPLACE,
    NODES,
    NS_A,
    NS_B,
    POLL_INTERVAL,
    TAS_FLAVOR,
    TIMEOUT,
    UPDATES_BATCH_PERIOD,
    QueueManager,
    StaleTracker,
    has_quota_reservation,
    status_of,
)
from races._kueue_scheduler import Cache, Scheduler
from races._registry import Race


# ------------------------------------------------------- kueue-controller-manager
class KueueManager:
    """The informers and event predicates that feed the queue manager and the cache."""

    def __init__(self, world: World, api: APIServer, *, fixed: bool, reread: bool = False) -> None:
        self.world = world
        self.api = api
        self.tracker = StaleTracker(world, api)
        self.workloads = Informer(world, api, "Workload")
        self.cluster_queues = Informer(world, api, "ClusterQueue")
        self.local_queues = Informer(world, api, "LocalQueue")
        self.nodes = Informer(world, api, "Node")
        self.queues = QueueManager(world, self.workloads, self.tracker, fixed=fixed, reread=reread)
        self.cache = Cache(self.workloads, self.nodes)
        self.scheduler = Scheduler(world, api, self.queues, self.cache, self.tracker)
        self.node_failure: Controller[str] = Controller(world, "node-failure-controller", self.reconcile_node)
        self.tas_flavor: Controller[str] = Controller(world, "tas-resource-flavor-controller", self.reconcile_flavor)
        self.workloads.add_event_handler(self.on_workload_create, self.on_workload_update, self.on_workload_delete)
        self.cluster_queues.add_event_handler(self.on_cq_add, None, self.on_cq_delete)
        self.local_queues.add_event_handler(self.queues.add_local_queue, None, self.on_lq_delete)
        self.nodes.add_event_handler(None, self.on_node_update, None)
        # tas/resource_flavor.go nodeHandler: every node event -> AddAfter(flavor, UpdatesBatchPeriod)
        self.nodes.add_event_handler(
            lambda _n: self.queue_reconcile_for_node(),
            lambda _o, _n: self.queue_reconcile_for_node(),
            lambda _n: self.queue_reconcile_for_node(),
        )

    def start(self) -> None:
        for inf in (self.cluster_queues, self.local_queues, self.nodes, self.workloads):
            inf.start()
        self.node_failure.start()
        self.tas_flavor.start()
        self.scheduler.start()

    async def wait_for_cache_sync(self) -> None:
        for inf in (self.cluster_queues, self.local_queues, self.nodes, self.workloads):
            await inf.wait_for_cache_sync()

    # ----------------------------------------------------- CQ / LQ controllers
    def on_cq_add(self, cq: KubeObject) -> None:
        self.cache.add_cluster_queue(cq)
        self.queues.add_cluster_queue(cq)

    def on_cq_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        cq = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.cache.delete_cluster_queue(cq.name)
        self.queues.delete_cluster_queue(cq.name)

    def on_lq_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        self.queues.delete_local_queue(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    # ------------------------------------------------ workload_controller.go
    def on_workload_create(self, w: KubeObject) -> None:
        if status_of(w) == "Finished":
            return
        if not has_quota_reservation(w):
            self.queues.add_or_update_workload(w)
            return
        self.cache.add_or_update_workload(w)
        self.queues.queue_second_pass_if_needed(w)

    def on_workload_update(self, old: KubeObject, new: KubeObject) -> None:
        status, prev = status_of(new), status_of(old)
        if status == "Finished":
            self.queues.delete_workload(new)

            def forget_old() -> None:
                self.cache.delete_workload(old)

            self.queues.queue_associated_inadmissible_workloads_after(new, forget_old)
        elif prev == "Pending" and status == "Pending":
            self.queues.add_or_update_workload(new)
        elif prev == "Pending" and status == "Admitted":
            self.queues.delete_workload(old)
            self.cache.add_or_update_workload(new)
        elif prev == "Admitted" and status == "Pending":

            def action() -> None:
                self.cache.delete_workload(new)
                self.queues.add_or_update_workload(new)
                self.queues.delete_second_pass_without_lock(new)

            self.queues.queue_associated_inadmissible_workloads_after(new, action)
        else:
            self.cache.update_workload(old, new)
        self.queues.queue_second_pass_if_needed(new)

    def on_workload_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        w = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if has_quota_reservation(w) or isinstance(obj, DeletedFinalStateUnknown):

            def forget() -> None:
                self.cache.delete_workload(w)

            self.queues.queue_associated_inadmissible_workloads_after(w, forget)
        self.queues.delete_workload(w)
        self.tracker.observed_delete(w)

    # ---------------------------------------------- tas/resource_flavor.go
    def queue_reconcile_for_node(self) -> None:
        self.tas_flavor.queue.add_after(TAS_FLAVOR, UPDATES_BATCH_PERIOD)

    async def reconcile_flavor(self, _name: str) -> Result:
        """``rfReconciler.Reconcile``: a node change may make inadmissible workloads admissible."""
        self.queues.queue_inadmissible_workloads(sorted(self.cache.hm))
        return Result()

    # ------------------------------------------ tas/node_failure_controller.go
    def on_node_update(self, old: KubeObject, new: KubeObject) -> None:
        if old.status.get("ready") != new.status.get("ready"):
            self.node_failure.enqueue(new.name)

    async def reconcile_node(self, node_name: str) -> Result:
        """``patchWorkloadsForNodeToReplace``: annotate admitted workloads running on a NotReady node."""
        node = self.nodes.lister.try_get("", node_name)
        if node is None or node.status.get("ready", False):
            return Result()
        for w in self.workloads.lister.list():
            on_node = has_quota_reservation(w) and node_name in w.status["admission"]["topology"]
            if on_node and w.annotations.get(NODE_TO_REPLACE) != node_name:
                patch = {"metadata": {"annotations": {NODE_TO_REPLACE: node_name}}}
                await self.api.patch("Workload", w.namespace, w.name, patch)
        return Result()


# --------------------------------------------------------- the test suite's actions
class TestEnv:
    """The envtest suite's operations, one async method each (future stateful rules call them)."""

    __test__ = False  # not a pytest class

    def __init__(self, world: World, *, fixed: bool, reread: bool | None = None) -> None:
        self.world = world
        self.api = APIServer(world)
        # the registered fix is the final one: #5587's prequeue plus #15571's re-read
        self.kueue = KueueManager(world, self.api, fixed=fixed, reread=fixed if reread is None else reread)

    async def open(self, namespaces: tuple[str, ...] = (NS_A, NS_B)) -> None:
        """Start kueue and wait for its caches; create the test namespaces (never deleted in envtest)."""
        for ns in namespaces:
            await self.api.create(KubeObject("Namespace", "", ns))
        self.kueue.start()
        await self.kueue.wait_for_cache_sync()
        self.world.invariant(self.kueue.tracker.check, "no Heads() result or preemption target for a deleted workload")

    # ------------------------------------------------------------- objects
    async def create_nodes(self, *names: str) -> None:
        for name in names:
            await self.api.create(KubeObject("Node", "", name, status={"ready": True}))

    async def delete_nodes(self, *names: str) -> None:
        for name in names:
            await self.api.delete("Node", "", name)

    async def fail_node(self, name: str) -> None:
        """``SetNodeCondition(Ready=False)``; kueue's node-failure controller patches NodeToReplace."""
        node = await self.api.get("Node", "", name)
        node.status["ready"] = False
        await self.api.update_status(node)

    async def create_cluster_queue(self, name: str = CQ_NAME) -> None:
        await self.api.create(KubeObject("ClusterQueue", "", name, spec={"preemption": "LowerPriority"}))

    async def delete_cluster_queue(self, name: str = CQ_NAME) -> None:
        await self.api.delete("ClusterQueue", "", name)

    async def create_local_queue(self, ns: str, cq: str = CQ_NAME) -> None:
        await self.api.create(KubeObject("LocalQueue", ns, LQ_NAME, spec={"clusterQueue": cq}))

    async def delete_local_queue(self, ns: str) -> None:
        await self.api.delete("LocalQueue", ns, LQ_NAME)

    async def create_workload(self, ns: str, name: str, *, pods: int, priority: int) -> None:
        await self.api.create(
            KubeObject("Workload", ns, name, spec={"queueName": LQ_NAME, "priority": priority, "pods": pods})
        )

    async def delete_workload(self, ns: str, name: str) -> None:
        try:
            await self.api.delete("Workload", ns, name)
        except NotFound:
            pass

    # --------------------------------------------------------- test phases
    async def before_each(self, ns: str, cq: str = CQ_NAME) -> None:
        """``BeforeEach``: nodes x1, x2, the ClusterQueue (same name in every case), a LocalQueue."""
        await self.create_nodes(*NODES)
        await self.create_cluster_queue(cq)
        await self.create_local_queue(ns, cq)

    async def after_each(self, ns: str, workloads: tuple[str, ...], cq: str = CQ_NAME) -> None:
        """``AfterEach``: delete the workloads, the LocalQueue, the ClusterQueue and the nodes."""
        for name in workloads:
            await self.delete_workload(ns, name)
        await self.delete_local_queue(ns)
        await self.delete_cluster_queue(cq)
        await self.delete_nodes(*NODES)

    def admitted(self, ns: str, names: tuple[str, ...]) -> int:
        return sum(1 for n in names if (w := self.api.peek("Workload", ns, n)) is not None and has_quota_reservation(w))

    async def expect_admitted(self, ns: str, *names: str, timeout: float = TIMEOUT) -> bool:
        """``util.ExpectWorkloadsToBeAdmitted``: poll the apiserver every 250 ms."""
        deadline = self.world.now + timeout
        while True:
            await self.world.step(f"{ns}: Eventually({', '.join(names)} admitted)")
            if self.admitted(ns, names) == len(names):
                return True
            if self.world.now >= deadline:
                return False
            await self.world.sleep(POLL_INTERVAL, f"{ns}: poll again in {POLL_INTERVAL * 1000:g} ms")

    def expect_eventually_admitted(self, ns: str, *names: str, within: float = TIMEOUT) -> None:
        """The liveness oracle: every named workload reserves quota within ``within`` seconds."""
        self.world.eventually(
            lambda: self.admitted(ns, names) == len(names),
            within=within,
            name=f"{ns}: all of {', '.join(names)} admitted within {within:g} s",
        )


# --------------------------------------------------------------------- scenario
async def scenario(
    world: World, *, fixed: bool = False, teardown_after: float = 0.3, only_5587: bool = False
) -> None:
    """Test A (a node-failure second pass, then teardown) followed by test B on the same CQ name.

    ``fixed``: upstream's final fix (#5587's prequeue and #15571's re-read of the Workload);
    ``only_5587`` leaves the re-read out, the code between the two PRs.

    ``teardown_after``: seconds between the node failure and test A's ``AfterEach`` (0.3:
    inside the 1 s ``AfterFunc`` window; 1.0: the residual window of #5587). It places
    nothing in the buggy variant: the failed node re-arms the 1 s timer every second, so any
    delete lands in a window (``test_the_teardown_delay_does_not_place_the_bug``).
    """
    # one kueue manager process: its informers, scheduler, queue manager and controllers share memory
    world.share_memory(
        "informer", "kueue-scheduler", "queue-manager", "node-failure-controller", "tas-resource-flavor-controller"
    )
    env = TestEnv(world, fixed=fixed, reread=fixed and not only_5587)
    await env.open()

    # Test A: a TAS workload on x1, x2; x1 fails; the suite tears down.
    await env.before_each(NS_A)
    await env.create_workload(NS_A, "wl1", pods=2, priority=0)
    await env.expect_admitted(NS_A, "wl1")
    await env.fail_node("x1")
    await world.sleep(teardown_after, "test A ends; AfterEach starts")
    await env.after_each(NS_A, ("wl1",))

    # Test B: same ClusterQueue name; a low then a mid priority workload must both be admitted.
    await env.before_each(NS_B)
    env.expect_eventually_admitted(NS_B, "wl1", "wl2")
    await env.create_workload(NS_B, "wl1", pods=1, priority=1)
    await env.expect_admitted(NS_B, "wl1")
    await env.create_workload(NS_B, "wl2", pods=1, priority=2)
    await env.expect_admitted(NS_B, "wl1", "wl2")
    # The suite ends here; the controllers would run on forever (a workload evicted by a late
    # node event retries its second pass every second), so the run ends one timeout later.
    world.horizon = world.now + TIMEOUT + 2.0


async def scenario_after_5587(world: World, *, fixed: bool = False, teardown_after: float = 1.0) -> None:
    """The same suite from #5587 on: buggy is #5587 alone, ``fixed`` adds #15571's re-read.

    ``teardown_after`` defaults to 1 s, the residual window's upstream shape (the delete
    just before the timer fires); 0.3 s reaches it too once a DELETED delivery is late.
    """
    await scenario(world, fixed=True, teardown_after=teardown_after, only_5587=not fixed)


RACES = [
    Race(
        name="kueue_second_pass",
        title="A deleted workload outlives its delete in the second-pass queue (1 s AfterFunc)",
        upstream="kubernetes-sigs/kueue#5511 (fix PR #5587, c5eaee29; final fix PR #15571)",
        scenario=scenario,
        params={},
        budget=3000,
        strategy="random",
        known_open=False,
        # the final fix was sampled clean with every fault kind (3,000 runs, seeds 0 and 1)
        faults="all",
        key_events=(
            "patch Workload test-a/wl1",
            "delete Workload test-a/wl1",
            "informer/Workload deliver DELETED test-a/wl1",
            "AfterFunc(1s) fires: queueSecondPass test-a/wl1",
            "Heads: wait for pending workloads",
        ),
    ),
    Race(
        name="kueue_second_pass_residual",
        title="Residual window of #5587: a delete between takeAllReady and requeueAndUpdate",
        upstream="kubernetes-sigs/kueue#5511 (buggy: fix PR #5587, c5eaee29; fixed: PR #15571)",
        scenario=scenario_after_5587,
        params={},
        budget=300,
        strategy="random",
        known_open=False,
        faults="all",
        key_events=(
            "AfterFunc(1s) fires: queueSecondPass test-a/wl1",
            "Heads: wait for pending workloads",
            "informer/Workload deliver DELETED test-a/wl1",
            "get Namespace test-a",
            "AfterFunc(1s) fires: queueSecondPass test-a/wl1",
            "Heads: wait for pending workloads",
        ),
    ),
]


# --------------------------------------------------------------------- machine
class TestSuiteMachine(RaceMachine):
    """kueue#5511 as a stateful test: the envtest suite's operations as rules.

    Test A has admitted ``wl1`` on nodes x1, x2. The rules are what a test body
    and its ``AfterEach`` do: fail a node, wait, and end the test case (delete
    its workload, LocalQueue, ClusterQueue and nodes) and start the next one on
    a ClusterQueue of the **same name** with two workloads that must both be
    admitted. The shrunk program is the flaky test of #5395: a node fails and
    the test case ends within the 1 s ``AfterFunc`` window.
    """

    __test__ = False  # a RaceMachine, not a pytest class
    max_rules = 3
    budget = 300

    async def setup(self) -> None:
        self.env = TestEnv(self.world, fixed=self.fixed)
        await self.env.open()
        self.ns = NS_A
        await self.env.before_each(NS_A)
        await self.env.create_workload(NS_A, "wl1", pods=2, priority=0)
        await self.env.expect_admitted(NS_A, "wl1")

    @rule(node=sampled_from(NODES))
    @precondition(lambda self: self.ns == NS_A)  # test B's oracle assumes both nodes stay up
    async def fail_node(self, node: str) -> None:
        await self.env.fail_node(node)

    @rule()
    @precondition(lambda self: self.ns == NS_A)  # the model has two namespaces: one next test case
    async def next_test_case(self) -> None:
        await self.env.after_each(NS_A, ("wl1",))
        self.ns = NS_B
        await self.env.before_each(NS_B)
        self.env.expect_eventually_admitted(NS_B, "wl1", "wl2")
        await self.env.create_workload(NS_B, "wl1", pods=1, priority=1)
        await self.env.create_workload(NS_B, "wl2", pods=1, priority=2)

    @rule(seconds=sampled_from([2.0, 0.3]))
    async def pause(self, seconds: float) -> None:
        await self.world.sleep(seconds, f"test body waits {seconds:g}s")

    async def teardown(self) -> None:
        # a failed node keeps a workload re-arming its second pass every second
        # (upstream behaviour): end the run once the liveness window has passed
        self.world.horizon = self.world.now + TIMEOUT + 2.0
