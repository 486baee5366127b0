"""kueue's queueing, as the race needs it: ``pkg/workload``, ``pkg/queue`` (the manager, the cluster
queue's heap, the second-pass queue of #5587). Part of :mod:`races.kueue_second_pass`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.kube import (
    APIServer,
    Informer,
    KubeObject,
)
from harness.sim import World

CQ_NAME = "cluster-queue"
LQ_NAME = "local-queue"
NS_A = "test-a"
NS_B = "test-b"
NODES = ("x1", "x2")
NODE_TO_REPLACE = "kueue.x-k8s.io/node-to-replace"
#: ``QueueSecondPassIfNeeded``'s ``clock.AfterFunc(time.Second, ...)``
SECOND_PASS_DELAY = 1.0
#: gomega ``util.Interval`` and ``util.Timeout`` of the integration tests
POLL_INTERVAL = 0.25
TIMEOUT = 10.0
#: ``constants.UpdatesBatchPeriod``: the TAS flavor controller batches node events this long
UPDATES_BATCH_PERIOD = 1.0
TAS_FLAVOR = "tas-flavor"
#: ``pkg/util/wait`` speedy backoff
INITIAL_BACKOFF = 0.001
MAX_BACKOFF = 0.1

REQUEUE_GENERIC = "Generic"
REQUEUE_FAILED_AFTER_NOMINATION = "FailedAfterNomination"
REQUEUE_PENDING_PREEMPTION = "PendingPreemption"


# --------------------------------------------------------------- oracle
class StaleTracker:
    """The safety oracle: no deleted workload key is served by ``Heads()`` or targeted for preemption."""

    def __init__(self, world: World, api: APIServer) -> None:
        self.world = world
        self.api = api
        self.deleted_at: dict[str, float] = {}
        self.violations: list[str] = []

    def observed_delete(self, w: KubeObject) -> None:
        self.deleted_at[key_of(w)] = self.world.now

    def served(self, how: str, keys: list[str]) -> None:
        for key in keys:
            if key not in self.deleted_at:
                continue
            ns, _, name = key.partition("/")
            if self.api.peek("Workload", ns, name) is not None:
                continue  # re-created under the same key
            self.violations.append(
                f"{how} workload {key} at t={self.world.now:.3f}, after the queue manager observed its DELETE at "
                f"t={self.deleted_at[key]:.3f}: a deleted workload outlives its delete in the second-pass queue"
            )

    def check(self) -> str | None:
        return self.violations[0] if self.violations else None



# ----------------------------------------------------------- pkg/workload
def key_of(w: KubeObject) -> str:
    """``workload.Key``: ``namespace/name``."""
    return f"{w.namespace}/{w.name}"


def has_quota_reservation(w: KubeObject) -> bool:
    return w.status.get("admission") is not None


def is_evicted(w: KubeObject) -> bool:
    return bool(w.status.get("evicted"))


def is_finished(w: KubeObject) -> bool:
    return bool(w.status.get("finished"))


def has_topology_assignment_with_node_to_replace(w: KubeObject) -> bool:
    """``HasTopologyAssignmentWithNodeToReplace``: admitted and the failed node is in its topology."""
    failed = w.annotations.get(NODE_TO_REPLACE)
    if failed is None or not has_quota_reservation(w):
        return False
    return failed in w.status["admission"]["topology"]


def needs_second_pass(w: KubeObject) -> bool:
    """``NeedsSecondPass``: quota reserved, not finished or evicted, and a node to replace."""
    if is_finished(w) or is_evicted(w) or not has_quota_reservation(w):
        return False
    return has_topology_assignment_with_node_to_replace(w)


def status_of(w: KubeObject) -> str:
    """``workload.Status``: Finished, Admitted (no admission checks here) or Pending."""
    if is_finished(w):
        return "Finished"
    return "Admitted" if has_quota_reservation(w) else "Pending"


@dataclass
class Info:
    """``workload.Info``: the object and, once it reserves quota, its ClusterQueue *name*."""

    obj: KubeObject
    cluster_queue: str = ""

    @property
    def key(self) -> str:
        return key_of(self.obj)

    @property
    def priority(self) -> int:
        return int(self.obj.spec.get("priority", 0))

    @property
    def pods(self) -> int:
        return int(self.obj.spec["pods"])


def new_info(w: KubeObject) -> Info:
    """``NewInfo``: ``ClusterQueue`` comes from ``status.admission`` of *this* object."""
    admission = w.status.get("admission")
    return Info(w, admission["clusterQueue"] if admission else "")


def _order(info: Info) -> tuple[int, float, str]:
    return (-info.priority, info.obj.creation_timestamp, info.key)


# ------------------------------------------------- pkg/queue/second_pass_queue.go
class SecondPassQueue:
    """``secondPassQueue``; ``fixed`` adds the ``prequeued`` set of #5587."""

    def __init__(self, fixed: bool) -> None:
        self.fixed = fixed
        self.prequeued: dict[str, None] = {}  # fixed only (a set; dict keeps insertion order)
        self.queued: dict[str, Info] = {}  # buggy: ``state``

    def prequeue(self, obj: KubeObject) -> None:
        self.prequeued[key_of(obj)] = None

    def offer(self, info: Info) -> None:
        """Buggy: insert whatever the timer captured."""
        self.queued[info.key] = info

    def queue(self, info: Info) -> bool:
        """Fixed: only a key still pre-queued (not deleted meanwhile) and still needing a second pass."""
        key = info.key
        enqueued = key in self.prequeued and needs_second_pass(info.obj)
        if enqueued:
            self.queued[key] = info
        self.prequeued.pop(key, None)
        return enqueued

    def delete_by_key(self, key: str) -> None:
        self.queued.pop(key, None)
        if self.fixed:
            self.prequeued.pop(key, None)

    def take_all_ready(self) -> list[Info]:
        out = list(self.queued.values())
        self.queued = {}
        return out


# --------------------------------------------------------- pkg/queue/cluster_queue.go
class PendingClusterQueue:
    """The queue manager's per-CQ heap plus its inadmissible set.

    ``pop_cycle`` and ``queue_inadmissible_cycle`` are upstream's ``popCycle`` (incremented by every
    ``Pop``) and ``queueInadmissibleCycle`` (set to ``popCycle`` by ``QueueInadmissibleWorkloads``):
    a workload popped before a ``QueueInadmissibleWorkloads`` call and requeued after it goes back to
    the heap, not to the inadmissible set, since the event that made it admissible came while it was
    being scheduled (``requeueIfNotPresent``, pkg/queue/cluster_queue.go). Without them a node event
    handled during the workload's scheduling attempt left it inadmissible for ever.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.heap: dict[str, Info] = {}
        self.inadmissible: dict[str, Info] = {}
        self.pop_cycle = 0
        self.queue_inadmissible_cycle = -1

    def push_or_update(self, info: Info) -> None:
        self.inadmissible.pop(info.key, None)
        self.heap[info.key] = info

    def delete(self, key: str) -> None:
        self.heap.pop(key, None)
        self.inadmissible.pop(key, None)

    def pop(self) -> Info | None:
        self.pop_cycle += 1
        if not self.heap:
            return None
        best = min(self.heap.values(), key=_order)
        del self.heap[best.key]
        return best

    def requeue_if_not_present(self, info: Info, immediate: bool) -> bool:
        key = info.key
        if immediate or self.queue_inadmissible_cycle >= self.pop_cycle:
            self.inadmissible.pop(key, None)
            if key in self.heap:
                return False
            self.heap[key] = info
            return True
        if key in self.inadmissible or key in self.heap:
            return False
        self.inadmissible[key] = info
        return True

    def queue_inadmissible_workloads(self) -> bool:
        self.queue_inadmissible_cycle = self.pop_cycle
        moved = bool(self.inadmissible)
        for key, info in list(self.inadmissible.items()):
            self.heap.setdefault(key, info)
        self.inadmissible.clear()
        return moved


# ------------------------------------------------------------ pkg/queue/manager.go
class QueueManager:
    """``queue.Manager``: local queues, per-CQ heaps (by CQ **name**), the second-pass queue."""

    def __init__(
        self, world: World, workloads: Informer, tracker: StaleTracker, *, fixed: bool, reread: bool = False
    ) -> None:
        self.world = world
        self.workloads = workloads  # the manager's client is the cached client
        self.tracker = tracker
        self.local_queues: dict[str, str] = {}  # "ns/name" -> ClusterQueue name
        self.hm: dict[str, PendingClusterQueue] = {}
        self.second_pass_queue = SecondPassQueue(fixed)
        self.fixed = fixed
        #: kueue#15571: the delayed callback re-reads the Workload instead of using the captured one
        self.reread = reread
        self._cond = world.Event()

    def broadcast(self) -> None:
        """``cond.Broadcast``: wake every ``Heads`` waiter (a fresh event for the next wait)."""
        cond, self._cond = self._cond, self.world.Event()
        cond.set()

    # ------------------------------------------------ cluster and local queues
    def add_cluster_queue(self, cq: KubeObject) -> None:
        if cq.name in self.hm:
            return
        impl = self.hm[cq.name] = PendingClusterQueue(cq.name)
        added = False
        for lq_key, cq_name in self.local_queues.items():
            if cq_name != cq.name:
                continue
            ns, _, lq = lq_key.partition("/")
            for w in self._pending_in_local_queue(ns, lq):
                impl.push_or_update(new_info(w))
                added = True
        if added:
            self.broadcast()

    def delete_cluster_queue(self, name: str) -> None:
        self.hm.pop(name, None)

    def _pending_in_local_queue(self, ns: str, lq: str) -> list[KubeObject]:
        return [
            w for w in self.workloads.lister.list(ns) if w.spec.get("queueName") == lq and not has_quota_reservation(w)
        ]

    def add_local_queue(self, lq: KubeObject) -> None:
        self.local_queues[lq.key] = lq.spec["clusterQueue"]
        cq = self.hm.get(lq.spec["clusterQueue"])
        added = False
        for w in self._pending_in_local_queue(lq.namespace, lq.name):
            if cq is not None:
                cq.push_or_update(new_info(w))
                added = True
        if added:
            self.broadcast()

    def delete_local_queue(self, lq: KubeObject) -> None:
        cq_name = self.local_queues.pop(lq.key, None)
        cq = self.hm.get(cq_name or "")
        if cq is not None:
            for key in [k for k in [*cq.heap, *cq.inadmissible] if k.startswith(f"{lq.namespace}/")]:
                cq.delete(key)

    # --------------------------------------------------------------- workloads
    def _cq_for(self, w: KubeObject) -> PendingClusterQueue | None:
        cq_name = self.local_queues.get(f"{w.namespace}/{w.spec.get('queueName')}")
        return None if cq_name is None else self.hm.get(cq_name)

    def add_or_update_workload(self, w: KubeObject) -> bool:
        cq = self._cq_for(w)
        if cq is None:
            return False  # ErrLocalQueueDoesNotExistOrInactive / ErrClusterQueueDoesNotExist: ignored
        cq.push_or_update(new_info(w))
        self.broadcast()
        return True

    def requeue_workload(self, info: Info, reason: str) -> bool:
        """``RequeueWorkload``: re-read the cached object; not if gone or reserving quota."""
        cur = self.workloads.lister.try_get(info.obj.namespace, info.obj.name)
        if cur is None or has_quota_reservation(cur):
            return False
        cq = self._cq_for(cur)
        if cq is None:
            return False
        info.obj = cur
        immediate = reason in (REQUEUE_FAILED_AFTER_NOMINATION, REQUEUE_PENDING_PREEMPTION)
        added = cq.requeue_if_not_present(info, immediate)
        if added:
            self.broadcast()
        return added

    def delete_workload(self, w: KubeObject) -> None:
        """``DeleteWorkload``: out of its LQ/CQ, then ``DeleteSecondPassWithoutLock``."""
        cq = self._cq_for(w)
        if cq is not None:
            cq.delete(key_of(w))
        self.delete_second_pass_without_lock(w)

    def delete_second_pass_without_lock(self, w: KubeObject) -> None:
        self.second_pass_queue.delete_by_key(key_of(w))

    def queue_inadmissible_workloads(self, cq_names: list[str]) -> None:
        """``QueueInadmissibleWorkloads``: move the inadmissible workloads of these CQs back to their heaps."""
        queued = False
        for name in cq_names:
            cq = self.hm.get(name)
            if cq is not None and cq.queue_inadmissible_workloads():
                queued = True
        if queued:
            self.broadcast()

    def queue_associated_inadmissible_workloads_after(self, w: KubeObject, action: Callable[[], None] | None) -> None:
        if action is not None:
            action()
        cq = self._cq_for(w)
        if cq is not None and cq.queue_inadmissible_workloads():
            self.broadcast()

    # ------------------------------------------------------------- second pass
    def queue_second_pass_if_needed(self, w: KubeObject) -> bool:
        """``QueueSecondPassIfNeeded``: a 1 s ``AfterFunc`` that captures ``w`` itself (before
        #15571) or only its namespaced name (#15571)."""
        if not needs_second_pass(w):
            return False
        if self.fixed:
            self.second_pass_queue.prequeue(w)
        key = key_of(w)
        self.world.call_later(
            SECOND_PASS_DELAY,
            lambda: self.queue_second_pass(w),
            label=f"AfterFunc(1s) fires: queueSecondPass {key}",
            actor="queue-manager/clock",
            key=f"Workload {key}",
        )
        return True

    def queue_second_pass(self, w: KubeObject) -> None:
        """``queueSecondPass``. With #15571 it starts from ``m.client.Get(ctx, nsName, &w)``: the
        manager's client is controller-runtime's cached client, so the read is the Workload
        informer's cache; on NotFound the request is dropped (``deleteByKey``) and nothing is queued."""
        if self.reread:
            live = self.workloads.lister.try_get(w.namespace, w.name)
            if live is None:  # "Workload not found when queuing for second pass; dropping the request"
                self.second_pass_queue.delete_by_key(key_of(w))
                return
            w = live
        info = new_info(w)
        if self.fixed:
            if self.second_pass_queue.queue(info):
                self.broadcast()
            return
        self.second_pass_queue.offer(info)
        self.broadcast()

    # ------------------------------------------------------------------- heads
    async def heads_blocking(self) -> list[Info]:
        """``Heads``: ``heads()``, or wait on the condition variable and try again."""
        while True:
            workloads = self.heads()
            if workloads:
                self.tracker.served("Heads() returned", [w.key for w in workloads])
                return workloads
            await self._cond.wait("Heads: wait for pending workloads (sync.Cond)", idle=True)

    def heads(self) -> list[Info]:
        """``heads()``: every ready second-pass entry, then one head per ClusterQueue."""
        workloads = self.second_pass_queue.take_all_ready()
        for cq_name in sorted(self.hm):
            info = self.hm[cq_name].pop()
            if info is None:
                continue
            workloads.append(Info(info.obj, cq_name))
        return workloads
