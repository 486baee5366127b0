"""WorkQueue and rate limiters: the guarantees of section 0.1-0.3, one test each."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kube_support import clean, run

from harness.kube import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)
from harness.sim import World

PROPERTY = settings(derandomize=True, database=None, max_examples=50, deadline=None)


class Ref:
    """An item with Go pointer semantics: default object equality, i.e. identity."""

    def __init__(self, key: str) -> None:
        self.key = key


def test_value_items_are_deduplicated() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        for _ in range(3):
            q.add("default/a")
        q.add("default/b")
        box["len"] = len(q)
        box["got"] = [await q.get(), await q.get()]

    clean(run(scenario))
    assert box == {"len": 2, "got": ["default/a", "default/b"]}


def test_identity_items_are_not_deduplicated() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[Ref] = WorkQueue(world, "q")
        a1, a2 = Ref("default/a"), Ref("default/a")
        q.add(a1)
        q.add(a2)
        q.add(a1)  # the same pointer again: deduplicated
        box["len"] = len(q)
        box["got"] = [await q.get(), await q.get()]
        box["expected"] = [a1, a2]

    clean(run(scenario))
    assert box["len"] == 2
    assert box["got"][0] is box["expected"][0] and box["got"][1] is box["expected"][1]


def test_adds_while_processing_give_one_more_processing() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("x")
        item = await q.get()
        for _ in range(5):
            q.add(item)
        box["len_while_processing"] = len(q)  # parked in dirty, not queued
        q.done(item)
        box["len_after_done"] = len(q)
        again = await q.get()
        q.done(again)
        box["len_at_end"] = len(q)

    clean(run(scenario))
    assert box == {"len_while_processing": 0, "len_after_done": 1, "len_at_end": 0}


def test_item_is_never_handed_to_two_workers() -> None:
    box: dict[str, Any] = {"gets": []}

    async def worker(world: World, q: WorkQueue[str], me: str) -> None:
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            box["gets"].append((me, item))
            q.add(item)  # re-added while processing: must wait for done
            await world.step(f"{me} process {item}")
            q.done(item)
            if len(box["gets"]) >= 4:
                q.shut_down()

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("x")
        world.spawn("w1", worker, world, q, "w1", daemon=True)
        world.spawn("w2", worker, world, q, "w2", daemon=True)

    for seed in range(20):
        box["gets"] = []
        clean(run(scenario, seed=seed))
        assert len(box["gets"]) >= 4


def test_len_excludes_processing_and_waiting() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("processing")
        q.add("queued")
        await q.get()
        q.add_after("waiting", 5.0)
        box["len"] = len(q)
        box["metrics"] = (q.queued, q.processing, q.waiting, q.backlog)
        q.shut_down()

    clean(run(scenario))
    assert box == {"len": 1, "metrics": (1, 1, 1, 3)}


def test_add_after_only_moves_earlier() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add_after("x", 10.0)
        q.add_after("x", 20.0)  # later: ignored
        box["after_later"] = q.ready_at("x")
        q.add_after("x", 3.0)  # earlier: moves
        box["after_earlier"] = q.ready_at("x")
        await q.get()
        box["got_at"] = world.now
        box["waiting_after"] = q.waiting

    clean(run(scenario))
    assert box == {"after_later": 10.0, "after_earlier": 3.0, "got_at": 3.0, "waiting_after": 0}


def test_forget_does_not_cancel_waiting_entry() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add_rate_limited("x")
        q.add_rate_limited("x")
        box["requeues"] = q.num_requeues("x")
        q.forget("x")
        box["requeues_after_forget"] = q.num_requeues("x")
        box["still_waiting"] = q.is_waiting("x")
        await q.get()
        box["delivered"] = True

    clean(run(scenario))
    assert box == {"requeues": 2, "requeues_after_forget": 0, "still_waiting": True, "delivered": True}


def test_add_does_not_cancel_waiting_entry() -> None:
    box: dict[str, Any] = {"gets": []}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add_after("x", 5.0)
        q.add("x")
        box["still_waiting"] = q.is_waiting("x")
        item = await q.get()
        box["gets"].append(world.now)
        q.done(item)
        item = await q.get()  # the delayed re-add still fires
        box["gets"].append(world.now)
        q.done(item)

    clean(run(scenario))
    assert box == {"still_waiting": True, "gets": [0.0, 5.0]}


def test_ready_waiting_item_is_deduplicated_against_queue() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("x")
        q.add_after("x", 1.0)
        await world.sleep(2.0)
        box["len"] = len(q)
        box["waiting"] = q.waiting

    clean(run(scenario))
    assert box == {"len": 1, "waiting": 0}


def test_shut_down_drains_then_raises() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("a")
        q.add_after("b", 1.0)
        q.shut_down()
        q.add("c")  # dropped
        box["first"] = await q.get()
        try:
            await q.get()
        except ShutDown:
            box["raised"] = True
        box["waiting"] = q.waiting

    clean(run(scenario))
    assert box == {"first": "a", "raised": True, "waiting": 0}


def test_shut_down_wakes_idle_workers() -> None:
    box: dict[str, Any] = {"exited": 0}

    async def worker(q: WorkQueue[str]) -> None:
        try:
            await q.get()
        except ShutDown:
            box["exited"] += 1

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        for i in range(3):
            world.spawn(f"w{i}", worker, q, daemon=True)
        await world.sleep(1.0)
        q.shut_down()

    clean(run(scenario))
    assert box["exited"] == 3


def test_shutdown_with_drain_waits_for_processing() -> None:
    """``ShutDownWithDrain`` returns only once every item in processing is done; ``ShutDown`` cuts the wait short.

    Upstream: client-go ``util/workqueue/queue.go`` ``ShutDownWithDrain`` and ``queue_test.go``
    ``TestQueueDrainageUsingShutDownWithDrain`` (two items taken, the drain waits for both ``Done``),
    ``TestForceQueueShutdownUsingShutDown`` (``ShutDown`` after it returns at once) and
    ``TestQueueDrainageUsingShutDownWithDrainWithDirtyItem`` (an item added while processing is handed out
    again after ``Done``, then ``Get`` says shutdown).
    """
    log: list[tuple[str, float]] = []

    async def drainer(world: World, q: WorkQueue[str], name: str) -> None:
        await q.shut_down_with_drain()
        log.append((name, world.now))

    async def drain(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("foo")
        q.add("bar")
        first, second = await q.get(), await q.get()
        world.spawn("drainer", drainer, world, q, "drained")
        await world.sleep(1.0)
        q.add("late")  # dropped: the queue is shutting down
        try:
            await q.get()
        except ShutDown:
            log.append(("get says shutdown", world.now))
        assert not log[1:]  # the drain still waits: both items are in processing
        q.done(first)
        await world.sleep(1.0)
        assert [n for n, _ in log] == ["get says shutdown"]
        q.done(second)
        await world.sleep(1.0)

    clean(run(drain))
    assert log == [("get says shutdown", 1.0), ("drained", 2.0)]

    log.clear()

    async def force(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("foo")
        await q.get()
        world.spawn("drainer", drainer, world, q, "forced")
        await world.sleep(1.0)
        q.shut_down()  # "safe to call ShutDown after ShutDownWithDrain": the drain stops waiting
        await world.sleep(1.0)

    clean(run(force))
    assert log == [("forced", 1.0)]

    log.clear()

    async def dirty(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("foo")
        gotten = await q.get()
        q.add("foo")  # dirty while processing
        world.spawn("drainer", drainer, world, q, "drained")
        await world.sleep(1.0)
        q.done(gotten)
        again = await q.get()  # Done put it back: handed out, not "shutdown"
        q.done(again)
        try:
            await q.get()
        except ShutDown:
            log.append(("then shutdown", world.now))
        await world.sleep(1.0)

    clean(run(dirty))
    assert ("then shutdown", 1.0) in log and ("drained", 1.0) in log

    log.clear()

    async def idle(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        await q.shut_down_with_drain()  # nothing in processing: returns at once
        log.append(("idle", world.now))

    clean(run(idle))
    assert log == [("idle", 0.0)]


def test_shutdown_with_drain_blocks_for_ever_without_done() -> None:
    """Upstream's requirement ("if that is not the case: this will block indefinitely") is a deadlock verdict."""
    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        q.add("foo")
        await q.get()
        await q.shut_down_with_drain()

    out = run(scenario)
    assert out.violation is not None and out.violation.kind == "deadlock", out.violation


# ---------------------------------------------------------------- limiters
def test_item_exponential_backoff_doubles_and_caps() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("x") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[-1] == 1000.0
    assert limiter.num_requeues("x") == 20
    assert limiter.when("y") == 0.005  # per item
    limiter.forget("x")
    assert limiter.num_requeues("x") == 0 and limiter.when("x") == 0.005


def test_bucket_goes_negative() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        bucket = BucketRateLimiter(world, qps=10, burst=100)
        delays = [bucket.when(i) for i in range(120)]
        box["first_100"] = set(delays[:100])
        box["101st"] = delays[100]
        box["120th"] = delays[119]
        box["tokens"] = bucket.tokens
        await world.sleep(1.0)  # 10 tokens back
        box["after_refill"] = bucket.when("z")

    clean(run(scenario))
    assert box["first_100"] == {0.0}
    assert abs(box["101st"] - 0.1) < 1e-9 and abs(box["120th"] - 2.0) < 1e-9
    assert box["tokens"] == -20.0
    assert abs(box["after_refill"] - 1.1) < 1e-9


def test_bucket_refills_only_up_to_burst() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        bucket = BucketRateLimiter(world, qps=10, burst=100)
        bucket.when("a")
        await world.sleep(1000.0)
        box["tokens_after"] = (bucket.when("b"), bucket.tokens)

    clean(run(scenario))
    assert box["tokens_after"] == (0.0, 99.0)


def test_max_of_takes_the_larger_delay() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        limiter = MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(1.0, 1000.0), BucketRateLimiter(world, qps=1, burst=1)
        )
        box["delays"] = [limiter.when("x"), limiter.when("x"), limiter.when("y")]
        box["requeues"] = limiter.num_requeues("x")

    clean(run(scenario))
    # item: 1, 2, 1; bucket: 0, 1, 2 -> max per call
    assert box == {"delays": [1.0, 2.0, 2.0], "requeues": 2}


def test_max_of_calls_every_limiter_and_forget_keeps_the_bucket() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        limiter = default_controller_rate_limiter(world)
        for i in range(150):
            limiter.when(i)
        bucket = limiter.limiters[1]
        assert isinstance(bucket, BucketRateLimiter)
        box["tracked"] = limiter.tracked()
        for i in range(150):
            limiter.forget(i)
        box["tracked_after_forget"] = limiter.tracked()
        box["tokens_after_forget"] = bucket.tokens

    clean(run(scenario))
    assert box == {"tracked": 150, "tracked_after_forget": 0, "tokens_after_forget": -50.0}


def test_overload_law_in_virtual_time() -> None:
    """Section 0.3: at steady r > 10/s from a full bucket, delay(t) = ((r-10)t - 100)/10."""
    rate, horizon = 50.0, 100.0
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        q: WorkQueue[int] = WorkQueue(world, "overload")
        n = int(rate * horizon)
        for i in range(n + 1):
            if i:
                await world.sleep(1.0 / rate)
            q.add_rate_limited(i)
        ready = q.ready_at(n)
        assert ready is not None
        box["t"] = world.now
        box["delay"] = ready - world.now
        box["waiting"] = q.waiting
        box["failures"] = q.failures
        q.shut_down()

    clean(run(scenario))
    t = box["t"]
    law = ((rate - 10) * t - 100) / 10
    assert abs(box["delay"] - law) / law < 0.01
    # the waiting heap holds about (r-10)t - 100 entries (minus the ones whose delay has passed)
    assert box["waiting"] > 0.5 * ((rate - 10) * t - 100)
    assert box["failures"] == int(rate * horizon) + 1


# --------------------------------------------------------------- properties
ops_strategy = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2)), min_size=1, max_size=25)


@PROPERTY
@given(ops=ops_strategy, seed=st.integers(0, 2**16), workers=st.integers(1, 3))
def test_property_never_handed_to_two_workers(ops: list[tuple[str, int]], seed: int, workers: int) -> None:
    async def worker(world: World, q: WorkQueue[str], me: str, held: dict[str, str]) -> None:
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            if item in held:
                world.fail(f"{item} handed to {me} while {held[item]} processes it")
            held[item] = me
            await world.step(f"{me} reconcile {item}", key=item)
            del held[item]
            q.done(item)

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        held: dict[str, str] = {}
        for i in range(workers):
            world.spawn(f"w{i}", worker, world, q, f"w{i}", held, daemon=True)
        for item, pause in ops:
            q.add(item)
            for _ in range(pause):
                await world.step(f"producer pause after adding {item}")

    clean(run(scenario, seed=seed))


@PROPERTY
@given(ops=ops_strategy, seed=st.integers(0, 2**16), workers=st.integers(1, 3))
def test_property_every_add_gives_exactly_one_more_processing(
    ops: list[tuple[str, int]], seed: int, workers: int
) -> None:
    """An add collapses into a pending processing if one is pending, else causes exactly one more."""
    expected: dict[str, int] = {}
    processed: dict[str, int] = {}

    async def worker(world: World, q: WorkQueue[str], pending: dict[str, bool]) -> None:
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            pending[item] = False
            processed[item] = processed.get(item, 0) + 1
            await world.step(f"reconcile {item}", key=item)
            q.done(item)

    async def scenario(world: World) -> None:
        q: WorkQueue[str] = WorkQueue(world, "q")
        pending: dict[str, bool] = {}
        for i in range(workers):
            world.spawn(f"w{i}", worker, world, q, pending, daemon=True)
        for item, pause in ops:
            if not pending.get(item):
                pending[item] = True
                expected[item] = expected.get(item, 0) + 1
            q.add(item)
            for _ in range(pause):
                await world.step(f"producer pause after adding {item}")

    clean(run(scenario, seed=seed))
    assert processed == expected
