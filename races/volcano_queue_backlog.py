"""Volcano: queue-controller conflict retries pile up in the workqueue ("memory leak").

Upstream: volcano-sh/volcano#3597 "The volcano controller may have memory leak
issues in large-scale clusters" (v1.8.2; 20k short-lived pods per batch). Fixed
by PR #3751 "feature: Add podgroups statistics" (commit ``f14999ca``, merge
``da761e2c``, first tag v1.11.0; design in PR #3750). Code read at
``da761e2c^1`` (buggy) and ``da761e2c`` (fixed):

* ``pkg/controllers/queue/queue_controller.go``: ``Initialize`` (the queue is
  ``NewRateLimitingQueue(DefaultControllerRateLimiter())``, ``maxRequeueNum``
  from ``--max-requeue-num``, default 15), ``Run`` (wait for the caches, start
  ``--worker-threads-for-queue`` workers, default 5), ``processNextWorkItem``
  (``Get``; ``handleQueue``; ``handleQueueErr``; deferred ``Done``),
  ``handleQueue`` (``queueLister.Get``, then ``queuestate.NewState(queue).Execute``,
  whose open state runs ``syncQueue``) and ``handleQueueErr`` (error:
  ``NumRequeues < maxRequeueNum`` -> ``AddRateLimited``, else event + ``Forget``).
* ``pkg/controllers/queue/queue_controller_handler.go``: ``addQueue``,
  ``addPodGroup``, ``updatePodGroup`` (only when the phase changed) and
  ``deletePodGroup`` each enqueue ``&apis.Request{...}``: a **new pointer** every
  time, so the workqueue never deduplicates two requests for the same queue.
* ``pkg/controllers/queue/queue_controller_action.go`` ``syncQueue``: count the
  queue's PodGroups per phase from ``pgLister``, copy ``Status.Allocated`` from
  the lister's Queue and, if the status differs, ``UpdateStatus`` the lister copy
  (RV-checked: a stale lister copy gets 409 Conflict).
* ``pkg/scheduler/framework/session.go`` ``updateQueueStatus`` (at every session
  close, 1 s) -> ``cache.UpdateQueueStatus`` -> ``defaultStatusUpdater.UpdateQueueStatus``:
  ``UpdateStatus`` of the scheduler's cached Queue with the new ``allocated``
  (RV-checked; an error is only logged).

The bug is a load-induced positive feedback loop, not a rare interleaving: every
PodGroup phase change becomes a distinct request, most requests write the Queue
status from a lister copy that the previous write (20 ms of cache lag) or the
scheduler has already made stale, every 409 costs a token of the *global*
10/s bucket of the default rate limiter, and once conflicts outrun 10/s the
bucket delay and the waiting heap grow linearly (the bucket of
:class:`~harness.kube.BucketRateLimiter`). So the **canonical run of the buggy variant already
violates the backlog bound** (at t=10.8 s; the backlog grows by about 19
items/s): the minimal
counterexample has 0 deviations, and the exhaustive referee proves 0 minimal.

The fix (#3751): the per-phase counts become controller metrics
(``pkg/controllers/metrics/queue.go`` ``UpdateQueueMetrics``), and ``syncQueue``
writes status only when ``State`` changes, with server-side apply
(``ApplyStatus``, field manager ``queue-controller``, no RV precondition).
PodGroup churn then causes no API writes, no 409s, no ``AddRateLimited``.

Two scenarios:

* :func:`queue_backlog` (the registered race): the overload of the spec's
  section 5. One Queue ``q1``; PodGroup phase changes evenly spaced at
  ``rate * scale`` per second (16 PodGroup slots, each cycling
  ADDED Pending -> Inqueue -> Running -> Completed -> DELETED); 5 workers;
  API latency 5 ms (a sleep between the lister read and the request); lister
  delay 20 ms (``Informer(latency=...)``); a scheduler session every second.
  Oracles: backlog (queued + processing + waiting) <= 200 (``world.bound``);
  at the end, the least-squares slope of the backlog (sampled every virtual
  second) over the last 300 s < 0.1 items/s; no 409 from queue-controller
  status writes; the newest bucket reservation delay stayed < 1 s.
* :func:`queue_status_conflict`: the reusable core, one conflict. Two
  PodGroup changes give two distinct requests; worker B's ``UpdateStatus``
  from a lister copy that worker A's write has already made stale gets 409 and
  is re-queued with ``AddRateLimited``. Needs one deviation; the fix has no
  write to conflict.

Modelling choices (and why):

* PodGroups are not written through the apiserver: nothing contends on them in
  this race, so one PodGroup informer delivery (store update + handler) is one
  timer step labelled like the kube informer's (``informer/PodGroup deliver
  MODIFIED default/pg-3-0 Pending->Inqueue``). That saves two steps per event
  (the writer's request and a separate delivery). :func:`queue_status_conflict`
  keeps real PodGroup objects and informer.
* Idle workers are woken in FIFO order (:class:`Cond`), as the workqueue's
  ``sync.Cond.Signal`` wakes the longest waiter. The five workers are
  interchangeable, so "which idle worker takes the item" is a symmetric
  choice; leaving it to the scheduler would add a decision point per request
  that only permutes workers, and a random run would then need as many
  shrinking runs. Workers are also started one after the other.
* Latencies are chosen off the rate limiter's 5 ms grid (API latency 4.7 ms
  +-10 % by a deterministic low-discrepancy sequence, lister delays 21.3 ms
  and 18.7 ms, offsets on the periodic timers) so that two actions rarely fall
  on exactly the same virtual instant: ties are decision points, and decision
  points among unrelated actions only make random runs longer to shrink. The
  canonical buggy run has 3 decision points, all during start-up.
* ``Informer(latency=...)`` delivers one event per ``latency`` (one pending
  delivery per informer), so the lister delay also caps the Queue informer at
  about 47 events/s; successful Queue writes stay near 20/s in the buggy run,
  below that cap.

Cost: the buggy canonical run stops at the bound after about 4,000 steps
(0.15 s); the fixed run covers 600 virtual seconds in about 93,000 steps
(about 3 s). ``scale`` multiplies the event rate; ``duration`` shortens runs
(the slope oracle then looks at the last half of the run).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from harness.kube import (
    ApiError,
    APIServer,
    BucketRateLimiter,
    Conflict,
    Informer,
    ItemExponentialFailureRateLimiter,
    KubeObject,
    MaxOfRateLimiter,
    WorkQueue,
)
from harness.sim import Event, World

from ._registry import Race

QUEUE_NAME = "q1"
CONTROLLER = "queue-controller"
#: PodGroup phases counted by syncQueue before the fix (no Completed case at da761e2c^1)
COUNTED = {"Pending": "pending", "Running": "running", "Unknown": "unknown", "Inqueue": "inqueue"}
#: the lifecycle each PodGroup slot cycles through; None = absent (DELETED / next ADDED)
LIFECYCLE = ("Pending", "Inqueue", "Running", "Completed", None)


class Request:
    """``apis.Request{QueueName, Event: OutOfSync, Action: SyncQueue}``, enqueued as a pointer.

    Keeps ``object.__eq__``/``__hash__``: two requests are equal only if they
    are the same object, as Go compares pointers, so the workqueue never
    deduplicates them. ``key`` only names it in trace labels (``<Request q1 #7>``).
    """

    __slots__ = ("action", "event", "key", "queue_name")

    def __init__(self, queue_name: str, serial: int, event: str = "OutOfSync", action: str = "SyncQueue") -> None:
        self.queue_name = queue_name
        self.event = event
        self.action = action
        self.key = f"{queue_name} #{serial}"


def _jitter(n: int) -> float:
    """A factor in [0.9, 1.1) for the n-th API request: a low-discrepancy sequence, no RNG.

    Without jitter, "read at x, request at x+L, retry 5 ms later" and "retry ready
    at x+5 ms, request L later" land on the same virtual instant, and every such
    tie is a decision point between unrelated actions.
    """
    return 0.9 + 0.2 * ((n * 0.6180339887498949) % 1.0)


class SignallingWorkQueue(WorkQueue[Request]):
    """The client-go queue whose ``Add`` also signals the ``cond`` (``q.cond.Signal()`` in ``queue.go``).

    Overrides ``add`` (the delay timer's re-add goes through it too) and ``done``
    (which may re-queue a dirty item) to signal :class:`Cond`.
    """

    def __init__(self, world: World, name: str, rate_limiter: MaxOfRateLimiter) -> None:
        super().__init__(world, name, rate_limiter)
        self.cond = Cond(world, self)

    def add(self, item: Request) -> None:
        super().add(item)
        self.cond.signal()

    def done(self, item: Request) -> None:
        super().done(item)
        self.cond.signal()


class Cond:
    """The workqueue's ``sync.Cond``: idle workers wait in FIFO order; each ``Add`` wakes the longest waiter.

    Go's ``notifyList`` hands ``Signal`` to the goroutine with the oldest ticket.
    Only woken workers (and workers that find the queue non-empty) call the
    harness ``get``, so "which of five interchangeable idle workers takes the
    item" is not left to the scheduler: leaving it there would add a decision
    point per request that only permutes workers, and a random run would need
    as many shrinking runs.
    """

    def __init__(self, world: World, queue: WorkQueue[Request]) -> None:
        self._world = world
        self._queue = queue
        self._waiters: deque[Event] = deque()
        #: workers woken or already inside ``get``: each will take one queued item
        self.claimed = 0

    async def wait_for_item(self, name: str) -> None:
        """``for q.queue.Len() == 0 { q.cond.Wait() }``: take an unclaimed item at once, else wait in line."""
        if self._queue.queued > self.claimed:
            self.claimed += 1
            return
        ev = self._world.Event()
        self._waiters.append(ev)
        await ev.wait(f"{name} woken by Add", idle=True)  # signal() claimed an item for us

    def got(self) -> None:
        self.claimed -= 1

    def signal(self) -> None:
        while self._waiters and self._queue.queued > self.claimed:
            self.claimed += 1
            self._waiters.popleft().set()


class PodGroupCache:
    """The PodGroup informer's store as the queue controller reads it: key -> ``status.phase``."""

    def __init__(self) -> None:
        self.phase: dict[str, str] = {}

    def get_phase(self, key: str) -> str | None:
        return self.phase.get(key)


class QueueController:
    """``pkg/controllers/queue``: handlers, workers, ``syncQueue``; ``fixed`` switches #3751."""

    def __init__(
        self,
        world: World,
        api: APIServer,
        pg_phase: Callable[[str], str | None],
        *,
        fixed: bool,
        workers: int = 5,
        max_requeue_num: int = 15,
        api_latency: float = 0.0047,
        lister_delay: float = 0.0213,
    ) -> None:
        self.world = world
        self.api = api
        self.fixed = fixed
        self.workers = workers
        self.max_requeue_num = max_requeue_num
        self.api_latency = api_latency
        # DefaultControllerRateLimiter(), with a handle on the bucket for the reservation-delay oracle
        self.bucket = BucketRateLimiter(world, 10.0, 100)
        self.queue = SignallingWorkQueue(
            world, CONTROLLER, MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0), self.bucket)
        )
        self.queue_informer = Informer(world, api, "Queue", name=f"{CONTROLLER}/informer/Queue", latency=lister_delay)
        self.queue_informer.add_event_handler(on_add=self.add_queue)
        #: pgLister.PodGroups(ns).Get(name).Status.Phase, or None when not found
        self.pg_phase = pg_phase
        #: c.podGroups: queue name -> PodGroup keys (insertion-ordered, as a set)
        self.pod_groups: dict[str, dict[str, None]] = {}
        self._serial = 0
        self._requests = 0
        # counters the oracles read
        self.conflicts = 0
        self.first_conflict = ""
        self.requeued = 0
        self.dropped = 0
        self.newest_delay = 0.0
        self.max_delay = 0.0
        self.status_writes = 0
        self.metrics: dict[str, int] = {}

    # ------------------------------------------------------------ handlers
    def enqueue(self, queue_name: str) -> None:
        self._serial += 1
        self.queue.add(Request(queue_name, self._serial))

    def add_queue(self, obj: KubeObject) -> None:
        self.enqueue(obj.name)

    def add_pod_group(self, key: str, queue_name: str) -> None:
        self.pod_groups.setdefault(queue_name, {})[key] = None
        self.enqueue(queue_name)

    def update_pod_group(self, key: str, queue_name: str, old_phase: str, new_phase: str) -> None:
        if old_phase != new_phase:
            self.add_pod_group(key, queue_name)

    def delete_pod_group(self, key: str, queue_name: str) -> None:
        self.pod_groups.get(queue_name, {}).pop(key, None)
        self.enqueue(queue_name)

    # ------------------------------------------------------------- workers
    async def run(self) -> None:
        """``Run``: start the informer, wait for its cache, start the workers."""
        self.queue_informer.start()
        await self.queue_informer.wait_for_cache_sync()
        self.world.spawn(f"{CONTROLLER}/worker-1", self.worker, 1, daemon=True)

    async def worker(self, index: int) -> None:
        # Each worker starts the next one: five "start" steps enabled at once would be
        # four decision points that only permute interchangeable workers.
        name = f"{CONTROLLER}/worker-{index}"
        if index < self.workers:
            self.world.spawn(f"{CONTROLLER}/worker-{index + 1}", self.worker, index + 1, daemon=True)
        while True:
            await self.queue.cond.wait_for_item(name)
            await self.process_next_work_item()

    async def process_next_work_item(self) -> None:
        req = await self.queue.get()
        self.queue.cond.got()
        err: ApiError | None = None
        try:
            await self.handle_queue(req)
        except ApiError as exc:
            err = exc
        self.handle_queue_err(err, req)
        self.queue.done(req)

    async def handle_queue(self, req: Request) -> None:
        queue = self.queue_informer.lister.try_get("", req.queue_name)
        if queue is None:
            return  # "Queue has been deleted"
        # queuestate.NewState(queue).Execute(SyncQueue): the open state syncs with State=Open
        await self.sync_queue(queue)

    def handle_queue_err(self, err: ApiError | None, req: Request) -> None:
        if err is None:
            self.queue.forget(req)
            return
        if self.max_requeue_num == -1 or self.queue.num_requeues(req) < self.max_requeue_num:
            self.queue.add_rate_limited(req)
            self.requeued += 1
            self.newest_delay = max(0.0, -self.bucket.tokens / self.bucket.qps)
            if self.newest_delay > self.max_delay:
                self.max_delay = self.newest_delay
            return
        # recordEventsForQueue(Warning, "SyncQueue queue failed for ...") and drop
        self.dropped += 1
        self.queue.forget(req)

    def count_pod_groups(self, queue_name: str) -> dict[str, int]:
        counts = {"pending": 0, "running": 0, "unknown": 0, "inqueue": 0}
        if self.fixed:
            counts["completed"] = 0
        keys = self.pod_groups.get(queue_name, {})
        for key in list(keys):
            phase = self.pg_phase(key)
            if phase is None:
                del keys[key]  # "podGroup not found, skip it and continue to sync cache"
                continue
            field = COUNTED.get(phase) or ("completed" if self.fixed and phase == "Completed" else None)
            if field is not None:
                counts[field] += 1
        return counts

    async def sync_queue(self, queue: KubeObject) -> None:
        counts = self.count_pod_groups(queue.name)
        state = "Open"  # openState: an empty or Open state syncs to Open
        allocated = dict(queue.status.get("allocated") or {})
        if self.fixed:
            # #3751: the counts are metrics; status is applied only when State changes
            self.metrics = counts
            if state != queue.status.get("state"):
                await self._before_request()
                self.status_writes += 1
                await self.api.apply_status(
                    "Queue", "", queue.name, {"state": state, "allocated": allocated}, field_manager=CONTROLLER
                )
            return
        status: dict[str, Any] = {"state": state, "allocated": allocated, **counts}
        if status == queue.status:
            return  # "ignore update when status does not change"
        queue.status = status
        await self._before_request()
        self.status_writes += 1
        try:
            await self.api.update_status(queue)  # RV-checked against the lister copy
        except Conflict:
            self.conflicts += 1
            if not self.first_conflict:
                cur = self.api.peek("Queue", "", queue.name)
                self.first_conflict = (
                    f"at t={self.world.now:.3f} the queue controller's UpdateStatus of Queue {queue.name} from its "
                    f"lister copy (rv={queue.resource_version}; the apiserver has rv="
                    f"{cur.resource_version if cur else '?'}) got 409 Conflict"
                )
            raise

    async def _before_request(self) -> None:
        # the request travels to the apiserver; its RV check happens on arrival
        if self.api_latency > 0:
            self._requests += 1
            await self.world.sleep(self.api_latency * _jitter(self._requests), f"{CONTROLLER} request in flight")


class Scheduler:
    """The scheduler's ``updateQueueStatus`` at each session close: RV-checked ``UpdateStatus`` of ``allocated``."""

    def __init__(self, world: World, api: APIServer, *, period: float, offset: float, lister_delay: float) -> None:
        self.world = world
        self.api = api
        self.period = period
        self.offset = offset
        self.cache = Informer(world, api, "Queue", name="scheduler/informer/Queue", latency=lister_delay)
        self.sessions = 0
        self.conflicts = 0

    async def run(self) -> None:
        self.cache.start()
        await self.cache.wait_for_cache_sync()
        await self.world.sleep(self.offset, "scheduler first session")
        while True:
            await self.world.sleep(self.period, "scheduler session")
            self.sessions += 1
            await self.update_queue_status()

    async def update_queue_status(self) -> None:
        queue = self.cache.lister.try_get("", QUEUE_NAME)
        if queue is None:
            return
        # running pods come and go (pods exit after a minute): allocated changes every session
        allocated = {"cpu": 1000 + 7 * (self.sessions % 5)}
        if queue.status.get("allocated") == allocated:
            return
        queue.status["allocated"] = allocated
        try:
            await self.api.update_status(queue)
        except Conflict:
            self.conflicts += 1  # klog.Errorf("failed to update queue status"); next session retries


class PodGroupChurn:
    """PodGroup phase changes evenly spaced at ``rate`` per second, each one PodGroup-informer delivery.

    ``slots`` PodGroups at a time; event k moves slot ``k % slots`` one stage
    along :data:`LIFECYCLE` (a DELETED slot comes back as a new PodGroup).
    """

    def __init__(
        self, world: World, controller: QueueController, pgs: PodGroupCache, *, rate: float, slots: int, start: float
    ) -> None:
        self.world = world
        self.controller = controller
        self.pgs = pgs
        self.period = 1.0 / rate
        self.slots = slots
        self.stage = [len(LIFECYCLE) - 1] * slots  # every slot starts absent
        self.generation = [-1] * slots
        self.events = 0
        self._schedule(start)

    def _next(self) -> tuple[int, int, str]:
        slot = self.events % self.slots
        stage = (self.stage[slot] + 1) % len(LIFECYCLE)
        gen = self.generation[slot] + (1 if stage == 0 else 0)
        return slot, stage, f"default/pg-{slot}-{gen}"

    def _schedule(self, delay: float) -> None:
        _slot, stage, key = self._next()
        new, old = LIFECYCLE[stage], LIFECYCLE[stage - 1]
        if new is None:
            what = f"DELETED {key}"
        elif old is None:
            what = f"ADDED {key} {new}"
        else:
            what = f"MODIFIED {key} {old}->{new}"
        self.world.call_later(
            delay, self._deliver, label=f"informer/PodGroup deliver {what}", actor="informer/PodGroup", key=f"PodGroup {key}"
        )

    def _deliver(self) -> None:
        slot, stage, key = self._next()
        self.stage[slot] = stage
        if stage == 0:
            self.generation[slot] += 1
        new, old = LIFECYCLE[stage], LIFECYCLE[stage - 1]
        c = self.controller
        # processDeltas: the store first, then the handler
        if new is None:
            self.pgs.phase.pop(key, None)
            c.delete_pod_group(key, QUEUE_NAME)
        elif old is None:
            self.pgs.phase[key] = new
            c.add_pod_group(key, QUEUE_NAME)
        else:
            self.pgs.phase[key] = new
            c.update_pod_group(key, QUEUE_NAME, old, new)
        self.events += 1
        self._schedule(self.period)


def _slope(samples: list[tuple[float, int]]) -> float:
    n = len(samples)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in samples) / n
    my = sum(b for _, b in samples) / n
    sxx = sum((t - mx) ** 2 for t, _ in samples)
    sxy = sum((t - mx) * (b - my) for t, b in samples)
    return sxy / sxx if sxx else 0.0


async def queue_backlog(
    world: World,
    *,
    fixed: bool = False,
    rate: float = 50.0,
    scale: float = 1.0,
    duration: float = 600.0,
    workers: int = 5,
    max_requeue_num: int = 15,
    api_latency: float = 0.0047,
    lister_delay: float = 0.0213,
    session_period: float = 1.0,
    scheduler_lister_delay: float = 0.0187,
    max_backlog: int = 200,
    slope_window: float = 300.0,
    max_slope: float = 0.1,
    slots: int = 16,
    churn_start: float = 0.1007,
    session_offset: float = 0.0311,
) -> None:
    """The overload of spec section 5: PodGroup churn at ``rate * scale``/s against one Queue for ``duration`` s.

    ``churn_start`` and ``session_offset``: when the first PodGroup event comes and how far
    the scheduler's sessions are out of phase with the rest (off the 5 ms grid only to avoid
    ties). They place nothing: the bound is broken whatever they are
    (``test_the_churn_and_session_phases_do_not_place_the_bug``).
    """
    world.horizon = duration
    world.share_memory("metrics", CONTROLLER)  # the sampler reads the controller's work queue
    world.share_memory("scheduler")
    api = APIServer(world)
    await api.create(KubeObject("Queue", "", QUEUE_NAME, spec={"weight": 1}, status={"allocated": {"cpu": 1000}}))
    pgs = PodGroupCache()
    controller = QueueController(
        world,
        api,
        pgs.get_phase,
        fixed=fixed,
        workers=workers,
        max_requeue_num=max_requeue_num,
        api_latency=api_latency,
        lister_delay=lister_delay,
    )
    scheduler = Scheduler(world, api, period=session_period, offset=session_offset, lister_delay=scheduler_lister_delay)
    world.spawn(CONTROLLER, controller.run)
    world.spawn("scheduler", scheduler.run, daemon=True)
    PodGroupChurn(world, controller, pgs, rate=rate * scale, slots=slots, start=churn_start)
    wq = controller.queue
    world.state["controller"] = controller
    world.state["scheduler"] = scheduler

    samples: list[tuple[float, int]] = []
    world.state["samples"] = samples

    def sample() -> None:
        samples.append((world.now, wq.backlog))
        world.call_later(1.0, sample, label="metrics: sample workqueue backlog", actor="metrics")

    world.call_later(1.0 - 0.0173, sample, label="metrics: sample workqueue backlog", actor="metrics")

    world.bound(lambda: wq.backlog, max_backlog, name="queue-controller workqueue backlog (queued + processing + waiting)")

    window = min(slope_window, duration / 2)

    def backlog_flat() -> str | None:
        tail = [s for s in samples if s[0] >= duration - window]
        slope = _slope(tail)
        if slope >= max_slope:
            return (
                f"the queue-controller workqueue backlog grows by {slope:.2f} items/s over the last {window:g} s "
                f"(least-squares slope; limit {max_slope:g} items/s; now {wq.backlog} items)"
            )
        return None

    def no_conflicts() -> str | None:
        if controller.conflicts:
            return (
                f"{controller.conflicts} queue-controller status writes got 409 Conflict "
                f"({controller.requeued} AddRateLimited, {controller.dropped} dropped); first: {controller.first_conflict}"
            )
        return None

    def bucket_delay_small() -> str | None:
        if controller.max_delay >= 1.0:
            return (
                f"the newest rate-limiter bucket reservation was delayed {controller.max_delay:.1f} s "
                "(the global 10/s bucket of DefaultControllerRateLimiter is exhausted; limit 1 s)"
            )
        return None

    world.at_end(backlog_flat, name="workqueue backlog does not grow")
    world.at_end(no_conflicts, name="no 409 from queue-controller status writes")
    world.at_end(bucket_delay_small, name="bucket reservation delay < 1 s")


async def queue_status_conflict(world: World, *, fixed: bool = False, workers: int = 2) -> None:
    """The reusable core: two distinct requests; a ``Get`` before the first write reaches the lister gets 409.

    PodGroups go through the apiserver and a real PodGroup informer here (the
    overload scenario short-cuts them for speed). Queue ``q1`` and PodGroups
    ``pg1``, ``pg2`` (Pending) are in sync; at t=0.1 s the job controller moves
    both to Running. Canonically every watch event is delivered before the next
    ``Get``; the race is worker B's ``Get(r2)`` before worker A's write of q1
    reaches B's lister.
    """
    api = APIServer(world)
    status = {"state": "Open", "allocated": {"cpu": 1000}, "pending": 2, "running": 0, "unknown": 0, "inqueue": 0}
    await api.create(KubeObject("Queue", "", QUEUE_NAME, spec={"weight": 1}, status=status))
    for name in ("pg1", "pg2"):
        await api.create(KubeObject("PodGroup", "default", name, spec={"queue": QUEUE_NAME}, status={"phase": "Pending"}))
    pg_informer = Informer(world, api, "PodGroup", name=f"{CONTROLLER}/informer/PodGroup")

    def pg_phase(key: str) -> str | None:
        ns, _, name = key.partition("/")
        obj = pg_informer.lister.try_get(ns, name)
        return None if obj is None else str(obj.status.get("phase", ""))

    controller = QueueController(world, api, pg_phase, fixed=fixed, workers=workers, api_latency=0.0, lister_delay=0.0)
    pg_informer.add_event_handler(
        on_add=lambda pg: controller.add_pod_group(pg.key, str(pg.spec["queue"])),
        on_update=lambda old, new: controller.update_pod_group(
            new.key, str(new.spec["queue"]), str(old.status.get("phase")), str(new.status.get("phase"))
        ),
        on_delete=lambda pg: controller.delete_pod_group(
            pg.key, str((pg if isinstance(pg, KubeObject) else pg.obj).spec["queue"])
        ),
    )
    world.state["controller"] = controller

    async def job_controller() -> None:
        await world.sleep(0.1)
        for name in ("pg1", "pg2"):
            pg = await api.get("PodGroup", "default", name)
            pg.status["phase"] = "Running"
            await api.update_status(pg)

    async def run() -> None:
        pg_informer.start()
        await pg_informer.wait_for_cache_sync()
        await controller.run()

    world.spawn(CONTROLLER, run)
    world.spawn("job-controller", job_controller)

    def no_conflict() -> str | None:
        if controller.conflicts:
            return f"{controller.first_conflict}; the request was re-queued with AddRateLimited"
        return None

    world.invariant(no_conflict, name="no 409 from queue-controller status writes")


RACES = [
    Race(
        name="volcano_queue_backlog",
        title="Volcano queue controller: 409 retries of undeduplicated requests pile up in the workqueue",
        upstream="volcano-sh/volcano#3597 (fix PR #3751, f14999ca)",
        scenario=queue_backlog,
        params={},
        budget=8,  # the buggy run fails in the canonical order; a fixed run is ~3 s of 600 virtual s
        strategy="random",
        known_open=False,
        key_events=(
            "informer/PodGroup deliver ADDED",
            "update_status Queue q1",
            "queue-controller ready <Request q1",
        ),
    )
]
