"""kueue's cache, snapshot and scheduler cycle (``pkg/cache``, ``pkg/scheduler``), as the race needs them.
Part of :mod:`races.kueue_second_pass`."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.kube import (
    ApiError,
    APIServer,
    Informer,
    KubeObject,
    NotFound,
)
from harness.sim import World
from races._kueue_queue import (
    INITIAL_BACKOFF,
    MAX_BACKOFF,
    NODE_TO_REPLACE,
    REQUEUE_FAILED_AFTER_NOMINATION,
    REQUEUE_GENERIC,
    REQUEUE_PENDING_PREEMPTION,
    Info,
    QueueManager,
    StaleTracker,
    _order,
    has_quota_reservation,
    is_finished,
    key_of,
    needs_second_pass,
    new_info,
)


# ---------------------------------------------------------------- pkg/cache
@dataclass
class CachedClusterQueue:
    name: str
    workloads: dict[str, KubeObject] = field(default_factory=dict)


class Cache:
    """The scheduler cache: workloads reserving quota, per ClusterQueue name, plus assumed ones."""

    def __init__(self, workloads: Informer, nodes: Informer) -> None:
        self.workloads = workloads
        self.nodes = nodes
        self.hm: dict[str, CachedClusterQueue] = {}
        self.assumed_workloads: dict[str, str] = {}

    def add_cluster_queue(self, cq: KubeObject) -> None:
        """Adopts cached workloads whose ``status.admission`` names this CQ."""
        if cq.name in self.hm:
            return
        impl = self.hm[cq.name] = CachedClusterQueue(cq.name)
        for w in self.workloads.lister.list():
            if has_quota_reservation(w) and w.status["admission"]["clusterQueue"] == cq.name and not is_finished(w):
                impl.workloads[key_of(w)] = w

    def delete_cluster_queue(self, name: str) -> None:
        self.hm.pop(name, None)

    def cleanup_assumed_state(self, w: KubeObject) -> None:
        k = key_of(w)
        assumed_cq = self.assumed_workloads.pop(k, None)
        if assumed_cq is not None and has_quota_reservation(w) and assumed_cq != w.status["admission"]["clusterQueue"]:
            cq = self.hm.get(assumed_cq)
            if cq is not None:
                cq.workloads.pop(k, None)

    def add_or_update_workload(self, w: KubeObject) -> bool:
        if not has_quota_reservation(w):
            return False
        cq = self.hm.get(w.status["admission"]["clusterQueue"])
        if cq is None:
            return False
        self.cleanup_assumed_state(w)
        cq.workloads[key_of(w)] = w
        return True

    def update_workload(self, old: KubeObject, new: KubeObject) -> None:
        if has_quota_reservation(old):
            cq = self.hm.get(old.status["admission"]["clusterQueue"])
            if cq is None:
                return
            cq.workloads.pop(key_of(old), None)
        self.cleanup_assumed_state(old)
        if has_quota_reservation(new):
            cq = self.hm.get(new.status["admission"]["clusterQueue"])
            if cq is not None:
                cq.workloads[key_of(new)] = new

    def delete_workload(self, w: KubeObject) -> bool:
        k = key_of(w)
        cq: CachedClusterQueue | None = None
        if has_quota_reservation(w):
            cq = self.hm.get(w.status["admission"]["clusterQueue"])
        else:
            cq = next((c for c in self.hm.values() if k in c.workloads), None)
        if cq is None:
            return False  # ErrCqNotFound
        self.cleanup_assumed_state(w)
        cq.workloads.pop(k, None)
        return True

    def is_assumed_or_admitted_workload(self, info: Info) -> bool:
        if info.key in self.assumed_workloads:
            return True
        cq = self.hm.get(info.cluster_queue)
        return cq is not None and info.key in cq.workloads

    def assume_workload(self, w: KubeObject) -> str | None:
        k = key_of(w)
        if k in self.assumed_workloads:
            return f"the workload is already assumed to ClusterQueue {self.assumed_workloads[k]!r}"
        cq = self.hm.get(w.status["admission"]["clusterQueue"])
        if cq is None:
            return "cluster queue not found"
        cq.workloads[k] = w
        self.assumed_workloads[k] = cq.name
        return None

    def forget_workload(self, w: KubeObject) -> None:
        k = key_of(w)
        if k not in self.assumed_workloads:
            return
        self.cleanup_assumed_state(w)
        cq = self.hm.get(w.status["admission"]["clusterQueue"])
        if cq is not None:
            cq.workloads.pop(k, None)

    def snapshot(self) -> Snapshot:
        cqs = {name: dict(cq.workloads) for name, cq in self.hm.items()}
        ready = [n.name for n in self.nodes.lister.list() if n.status.get("ready", False)]
        return Snapshot(cqs, sorted(ready))


@dataclass
class Snapshot:
    """``cache.Snapshot``: per-CQ workloads reserving quota and the Ready nodes."""

    cluster_queues: dict[str, dict[str, KubeObject]]
    ready_nodes: list[str]

    def node_usage(self, removed: tuple[str, ...] = ()) -> dict[str, int]:
        used = dict.fromkeys(self.ready_nodes, 0)
        for wls in self.cluster_queues.values():
            for k, w in wls.items():
                if k in removed:
                    continue
                for node in w.status["admission"]["topology"]:
                    used[node] = used.get(node, 0) + 1
        return used

    def free_nodes(self, removed: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> list[str]:
        used = self.node_usage(removed)
        return [n for n in self.ready_nodes if used.get(n, 0) == 0 and n not in exclude]


@dataclass
class Entry:
    """``scheduler.entry``."""

    info: Info
    mode: str = ""  # "Fit" | "Preempt" | "NoFit"
    topology: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    status: str = ""  # "" (notNominated) | "nominated" | "skipped" | "assumed"
    inadmissible_msg: str = ""
    requeue_reason: str = REQUEUE_GENERIC


# --------------------------------------------------------------- scheduler
class Scheduler:
    """``scheduler.Scheduler``: one ``schedule`` cycle at a time, admissions applied asynchronously."""

    def __init__(self, world: World, api: APIServer, queues: QueueManager, cache: Cache, tracker: StaleTracker) -> None:
        self.world = world
        self.api = api
        self.queues = queues
        self.cache = cache
        self.tracker = tracker
        self.cycles = 0
        self.preemption_errors: list[str] = []

    def start(self) -> None:
        self.world.spawn("kueue-scheduler", self.until_with_backoff, daemon=True)

    async def until_with_backoff(self) -> None:
        """``wait.UntilWithBackoff``: SlowDown backs off 1 ms doubling to 100 ms; KeepGoing resets."""
        backoff = 0.0
        while True:
            keep_going = await self.schedule()
            if keep_going:
                backoff = 0.0
                continue
            backoff = INITIAL_BACKOFF if backoff == 0 else min(backoff * 2, MAX_BACKOFF)
            await self.world.sleep(backoff, f"scheduler backs off {backoff * 1000:g} ms")

    async def schedule(self) -> bool:
        self.cycles += 1
        heads = await self.queues.heads_blocking()
        snapshot = self.cache.snapshot()
        entries, inadmissible = await self.nominate(heads, snapshot)
        entries.sort(key=lambda e: _order(e.info))
        preempted: dict[str, None] = {}
        for e in entries:
            cq = snapshot.cluster_queues[e.info.cluster_queue]
            if e.mode == "NoFit" or (e.mode == "Preempt" and not e.targets):
                continue
            if any(t in preempted for t in e.targets):
                e.status, e.inadmissible_msg = "skipped", "Workload has overlapping preemption targets"
                continue
            if e.mode == "Fit" and not self.still_fits(e, snapshot):
                e.status, e.inadmissible_msg = "skipped", "Workload no longer fits after processing another workload"
                continue
            preempted.update(dict.fromkeys(e.targets))
            if e.mode == "Preempt":
                self.tracker.served(f"preemption target for {e.info.key}", e.targets)
                n = await self.issue_preemptions(e)
                if n:
                    e.inadmissible_msg += f". Pending the preemption of {n} workload(s)"
                    e.requeue_reason = REQUEUE_PENDING_PREEMPTION
                continue
            e.status = "nominated"
            new = self.admit(e)
            if new is not None:
                cq[e.info.key] = new  # cq.AddUsage
        success = False
        for e in entries:
            if e.status != "assumed":
                self.requeue_and_update(e)
            else:
                success = True
        for e in inadmissible:
            self.requeue_and_update(e)
        return success

    @staticmethod
    def still_fits(e: Entry, snapshot: Snapshot) -> bool:
        """``fits``: the nodes this entry newly takes are still free after earlier entries."""
        admission = e.info.obj.status.get("admission")
        current = admission["topology"] if admission else []
        free = snapshot.free_nodes(removed=(e.info.key,))
        return all(n in free for n in e.topology if n not in current)

    async def nominate(self, workloads: list[Info], snap: Snapshot) -> tuple[list[Entry], list[Entry]]:
        entries: list[Entry] = []
        inadmissible: list[Entry] = []
        for w in workloads:
            e = Entry(w)
            cq = snap.cluster_queues.get(w.cluster_queue)  # looked up by *name*
            if not needs_second_pass(w.obj) and self.cache.is_assumed_or_admitted_workload(w):
                continue
            if cq is None:
                e.inadmissible_msg = f"ClusterQueue {w.cluster_queue} not found"
            else:
                # ``s.client.Get(ctx, namespace)``: the manager's cached client, so the read is served
                # by a Namespace informer's cache (a yield point, never a request that can time out)
                await self.world.step(f"get Namespace {w.obj.namespace} (cached client)")
                if self.api.peek("Namespace", "", w.obj.namespace) is None:  # envtest never deletes one
                    e.inadmissible_msg = f"Could not obtain workload namespace: namespace {w.obj.namespace} not found"
                else:
                    self.get_assignments(e, cq, snap)
                    entries.append(e)
                    continue
            inadmissible.append(e)
        return entries, inadmissible

    def get_assignments(self, e: Entry, cq: dict[str, KubeObject], snap: Snapshot) -> None:
        """Fit on free Ready nodes, else lower-priority targets in the same CQ, else NoFit."""
        w = e.info.obj
        if needs_second_pass(w):
            failed = w.annotations[NODE_TO_REPLACE]
            current = list(w.status["admission"]["topology"])
            kept = [n for n in current if n != failed]
            free = snap.free_nodes(removed=(e.info.key,), exclude=(failed, *kept))
            need = len(current) - len(kept)
            if len(free) >= need:
                e.mode, e.topology = "Fit", kept + free[:need]
            else:
                e.mode, e.inadmissible_msg = "NoFit", f"no replacement for failed node {failed}"
            return
        free = snap.free_nodes()
        if len(free) >= e.info.pods:
            e.mode, e.topology = "Fit", free[: e.info.pods]
            return
        e.mode = "Preempt"
        candidates = sorted(
            (new_info(c) for c in cq.values() if int(c.spec.get("priority", 0)) < e.info.priority),
            key=lambda c: (c.priority, -c.obj.creation_timestamp, c.key),
        )
        removed: tuple[str, ...] = ()
        for c in candidates:
            removed = (*removed, c.key)
            if len(snap.free_nodes(removed=removed)) >= e.info.pods:
                e.targets = list(removed)
                return
        e.inadmissible_msg = "Workload requires preemption, but there are no candidate workloads"

    def admit(self, e: Entry) -> KubeObject | None:
        """``admit``: assume in the cache now, ``applyAdmission`` in its own goroutine."""
        new = e.info.obj.deepcopy()
        new.status["admission"] = {"clusterQueue": e.info.cluster_queue, "topology": list(e.topology)}
        err = self.cache.assume_workload(new)
        if err is not None:
            e.inadmissible_msg = f"Failed to admit workload: {err}"
            return None
        e.status = "assumed"
        self.world.spawn("kueue-scheduler/admission", self.apply_admission, e, new)
        return new

    async def apply_admission(self, e: Entry, new: KubeObject) -> None:
        try:
            await self.api.patch(
                "Workload", new.namespace, new.name, {"status": {"admission": new.status["admission"]}}, subresource="status"
            )
        except NotFound:
            self.cache.forget_workload(new)  # "Workload not admitted because it was deleted"
            return
        except Exception:
            self.cache.forget_workload(new)
            self.requeue_and_update(e)

    async def issue_preemptions(self, e: Entry) -> int:
        """``IssuePreemptions``: evict every target; a failed eviction (a deleted target's 404, a
        timeout) is logged by ``schedule`` ("Failed to preempt workloads") and not counted."""
        done = 0
        for key in e.targets:
            ns, _, name = key.partition("/")
            try:
                evict = {"status": {"admission": None, "evicted": "Preempted"}}
                await self.api.patch("Workload", ns, name, evict, subresource="status")
                done += 1
            except ApiError as err:
                self.preemption_errors.append(f"Failed to preempt workloads: {err}")
        return done

    def requeue_and_update(self, e: Entry) -> None:
        """``requeueAndUpdate``: a second pass is re-armed with the *captured* object first."""
        if e.status and e.requeue_reason == REQUEUE_GENERIC:
            e.requeue_reason = REQUEUE_FAILED_AFTER_NOMINATION
        if self.queues.queue_second_pass_if_needed(e.info.obj):
            return
        self.queues.requeue_workload(e.info, e.requeue_reason)
