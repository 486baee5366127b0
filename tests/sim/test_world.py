"""The runtime's contract: one actor at a time, virtual time, verdicts, isolation."""

from __future__ import annotations

import gc
import warnings
from typing import Any

import pytest
import trio

import harness as h
from harness.sim import RandomChooser, ReplayChooser, Violation, World, run_once


def canonical(scenario, **params) -> h.sim.RunOutcome:  # type: ignore[no-untyped-def]
    return run_once(scenario, ReplayChooser([]), params=params)


# ------------------------------------------------------------------ scheduling
def test_only_one_actor_runs_between_yield_points() -> None:
    inside: list[str] = []

    async def scenario(world: World) -> None:
        async def actor(name: str) -> None:
            for _ in range(20):
                await world.step("enter")
                inside.append(name)
                assert len(inside) == 1, f"two actors inside at once: {inside}"
                await trio.lowlevel.checkpoint()  # a raw Trio checkpoint must not let another actor in
                inside.pop()

        for n in "abc":
            world.spawn(n, actor, n)

    for seed in range(30):
        out = run_once(scenario, RandomChooser(seed))
        assert out.violation is None, out.violation


def test_canonical_order_is_oldest_waiting_first() -> None:
    async def scenario(world: World) -> None:
        async def actor(i: int) -> None:
            for j in range(2):
                await world.step(f"a{i} step {j}")

        for i in range(3):
            world.spawn(f"a{i}", actor, i)

    labels = [r.label for r in canonical(scenario).trace]
    assert labels == [
        "start main",
        "start a0",
        "start a1",
        "start a2",
        "a0 step 0",
        "a1 step 0",
        "a2 step 0",
        "a0 step 1",
        "a1 step 1",
        "a2 step 1",
    ]


def test_single_enabled_action_draws_no_choice() -> None:
    calls: list[int] = []

    class Counting:
        wants_options = False

        def choose(self, n: int, options: object, label: str) -> int:
            calls.append(n)
            return 0

    async def scenario(world: World) -> None:
        for i in range(5):
            await world.step(f"alone {i}")

    run_once(scenario, Counting())
    assert calls == []


def test_choice_is_an_absolute_index_into_the_enabled_set() -> None:
    async def scenario(world: World) -> None:
        async def actor(i: int) -> None:
            await world.step(f"a{i}")

        for i in range(3):
            world.spawn(f"a{i}", actor, i)

    # after main and the starts, three 'aN' steps are enabled; choice 2 picks the newest
    out = run_once(scenario, ReplayChooser([0, 0, 0, 2]))
    firsts = [r for r in out.trace if r.label.startswith("a") and not r.label.startswith("start")]
    assert firsts[0].label == "a2" and firsts[0].choice == 2 and firsts[0].enabled == 3
    assert firsts[0].instead == "a0: a0"


def test_world_choose_defaults_to_zero_and_is_recorded() -> None:
    seen: list[int] = []

    async def scenario(world: World) -> None:
        seen.append(world.choose("fault: drop watch", 2))

    out = canonical(scenario)
    assert seen == [0]
    rec = [r for r in out.trace if r.kind == "choose"]
    assert rec and rec[0].label == "fault: drop watch" and rec[0].enabled == 2
    seen.clear()
    run_once(scenario, ReplayChooser([1]))
    assert seen == [1]


# ------------------------------------------------------------------ virtual time
def test_sleep_moves_virtual_time_only_when_nothing_is_enabled() -> None:
    times: dict[str, float] = {}

    async def scenario(world: World) -> None:
        async def sleeper() -> None:
            await world.sleep(300)
            times["sleeper"] = world.now

        async def busy() -> None:
            for _ in range(50):
                await world.step("work")
            times["busy"] = world.now

        world.spawn("sleeper", sleeper)
        world.spawn("busy", busy)

    out = canonical(scenario)
    assert times == {"busy": 0.0, "sleeper": 300.0}
    assert out.end_time == 300.0


def test_trio_current_time_is_virtual() -> None:
    seen: list[float] = []

    async def scenario(world: World) -> None:
        await world.sleep(12.5)
        seen.append(trio.current_time())

    canonical(scenario)
    assert seen == [12.5]


def test_call_later_fires_as_a_scheduled_action() -> None:
    fired: list[float] = []

    async def scenario(world: World) -> None:
        world.call_later(1.0, lambda: fired.append(world.now), label="timer fires", actor="clock")

    out = canonical(scenario)
    assert fired == [1.0]
    assert next(r for r in out.trace if r.kind == "timer").actor == "clock"


def test_cancelled_timer_never_fires() -> None:
    fired: list[int] = []

    async def scenario(world: World) -> None:
        t = world.call_later(1.0, lambda: fired.append(1), label="never")
        await world.sleep(0.5)
        t.cancel()

    canonical(scenario)
    assert fired == []


def test_move_on_after_expires_in_virtual_time() -> None:
    after: list[float] = []

    async def scenario(world: World) -> None:
        never = world.Event()
        with world.move_on_after(7):
            await never.wait()
        after.append(world.now)
        with trio.move_on_after(3):  # a raw Trio deadline expires in virtual time too
            await never.wait()
        after.append(world.now)

    out = canonical(scenario)
    assert out.violation is None
    assert after == [7.0, 10.0]


def test_fail_after_raises_too_slow_in_virtual_time() -> None:
    async def scenario(world: World) -> None:
        with world.fail_after(2):
            await world.sleep(5)

    out = canonical(scenario)
    assert out.violation is not None and "TooSlowError" in out.violation.message
    assert out.violation.time == 2.0


def _deadline_scenario(seen: list[tuple[str, float]]):  # type: ignore[no-untyped-def]
    async def scenario(world: World) -> None:
        async def sleeper(name: str, naps: list[float]) -> None:
            for d in naps:
                await world.sleep(d, f"{name} nap", window=0.5)
                seen.append((name, world.now))

        async def waiter() -> None:
            never = world.Event()
            with world.move_on_after(2.5):  # between two time jumps
                await never.wait()
            seen.append(("w", world.now))
            with trio.move_on_after(1.5):  # at t=4, where s2 wakes too
                await never.wait()
            seen.append(("w", world.now))
            try:
                with world.fail_after(0.25):  # a deadline before a sleep's end
                    await world.sleep(1)
            except trio.TooSlowError:
                seen.append(("w too slow", world.now))
            with world.move_on_after(100):  # a deadline far beyond every jump: never fires
                await world.sleep(1)
            seen.append(("w", world.now))

        world.spawn("s1", sleeper, "s1", [1.0, 1.0, 2.0, 3.0])
        world.spawn("s2", sleeper, "s2", [0.5, 3.5])
        world.spawn("w", waiter)

    return scenario


def test_direct_time_jumps_keep_every_deadline_at_its_instant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Setting the clock directly (no Trio deadline before the target) and moving it through Trio agree."""
    canonical_seen: list[tuple[str, float]] = []
    assert canonical(_deadline_scenario(canonical_seen)).violation is None
    assert [t for n, t in canonical_seen if n.startswith("w")] == [2.5, 4.0, 4.25, 5.25]
    for seed in range(12):  # late wake-ups (windows) move the jumps around the deadlines
        runs = []
        for direct in (True, False):
            monkeypatch.setattr(World, "_direct_time", direct)
            seen: list[tuple[str, float]] = []
            out = run_once(_deadline_scenario(seen), RandomChooser(seed, lag=0.7))
            runs.append((out.trace.digest(), out.violation, seen))
        assert runs[0] == runs[1], seed


def test_time_jumps_enter_trio_only_when_a_deadline_lies_on_the_way(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float] = []
    real = trio.sleep_until

    async def counting(deadline: float) -> None:
        calls.append(deadline)
        await real(deadline)

    monkeypatch.setattr(trio, "sleep_until", counting)

    async def sleepers(world: World) -> None:
        async def nap() -> None:
            with world.move_on_after(1000):  # a deadline beyond every jump
                for _ in range(5):
                    await world.sleep(1)

        world.spawn("a", nap)
        world.spawn("b", nap)

    assert canonical(sleepers).end_time == 5.0 and calls == []

    async def cut_short(world: World) -> None:
        with world.move_on_after(2.5):
            await world.sleep(10)

    assert canonical(cut_short).end_time == 2.5 and calls == [10.0]


def test_queue_get_blocks_until_put() -> None:
    got: list[tuple[str, float]] = []

    async def scenario(world: World) -> None:
        q: h.Queue[str] = world.Queue()

        async def consumer() -> None:
            got.append((await q.get(), world.now))

        world.spawn("consumer", consumer)
        await world.sleep(4)
        q.put_nowait("item")

    canonical(scenario)
    assert got == [("item", 4.0)]


def test_lock_excludes() -> None:
    async def scenario(world: World) -> None:
        lock = world.Lock()
        holders: list[str] = []

        async def actor(name: str) -> None:
            async with lock:
                holders.append(name)
                await world.step("inside")
                assert holders == [name]
                holders.pop()

        for n in "ab":
            world.spawn(n, actor, n)

    for seed in range(20):
        assert run_once(scenario, RandomChooser(seed)).violation is None


# ------------------------------------------------------------------- oracles
def test_invariant_checked_after_every_step() -> None:
    async def scenario(world: World) -> None:
        st = {"x": 0}
        world.invariant(lambda: st["x"] < 3, "x stays below 3")
        for _ in range(5):
            await world.step("inc")
            st["x"] += 1

    out = canonical(scenario)
    assert out.violation is not None and out.violation.name == "x stays below 3"
    assert out.violation.step == 4


def test_eventually_reports_a_late_event_at_its_deadline() -> None:
    async def scenario(world: World) -> None:
        st = {"done": False}

        async def slow() -> None:
            await world.sleep(300)
            st["done"] = True

        world.spawn("slow", slow)
        world.eventually(lambda: st["done"], within=10, name="done within 10 s")

    out = canonical(scenario)
    assert out.violation is not None
    assert out.violation.time == 10.0
    assert "did not happen within 10 virtual seconds" in out.violation.message


def test_eventually_satisfied_in_time_is_discharged() -> None:
    async def scenario(world: World) -> None:
        st = {"done": False}

        async def quick() -> None:
            await world.sleep(5)
            st["done"] = True

        world.spawn("quick", quick)
        world.eventually(lambda: st["done"], within=10, name="done within 10 s")

    assert canonical(scenario).violation is None


def test_bound_reports_peak_and_violation() -> None:
    async def scenario(world: World) -> None:
        st = {"n": 0}
        world.bound(lambda: st["n"], 5, "backlog")
        for _ in range(4):
            await world.step("grow")
            st["n"] += 1

    out = canonical(scenario)
    assert out.violation is None and out.peaks["backlog"] == 4

    async def worse(world: World) -> None:
        st = {"n": 0}
        world.bound(lambda: st["n"], 5, "backlog")
        for _ in range(9):
            await world.step("grow")
            st["n"] += 1

    out = canonical(worse)
    assert out.violation is not None and "bound 'backlog' exceeded: 6 > 5" in out.violation.message


def test_horizon_ends_a_periodic_scenario_normally() -> None:
    ticks: list[float] = []

    async def scenario(world: World) -> None:
        world.horizon = 10

        async def ticker() -> None:
            while True:
                await world.sleep(1)
                ticks.append(world.now)

        world.spawn("ticker", ticker, daemon=True)

    out = canonical(scenario)
    assert out.violation is None
    assert ticks == [float(i) for i in range(1, 10)]


# ------------------------------------------------------------------ verdicts
def _verdict(scenario, **kw) -> Violation:  # type: ignore[no-untyped-def]
    out = run_once(scenario, ReplayChooser([]), **kw)
    assert out.violation is not None
    return out.violation


def test_verdict_deadlock() -> None:
    async def scenario(world: World) -> None:
        never = world.Event()
        await never.wait("wait for the informer to sync")

    v = _verdict(scenario)
    assert v.kind == "deadlock"
    assert "waits for 'wait for the informer to sync'" in v.message and "Make sure every wait has a producer" in v.message


def test_idle_daemons_are_not_a_deadlock() -> None:
    async def scenario(world: World) -> None:
        q: h.Queue[int] = world.Queue()

        async def worker() -> None:
            while True:
                await q.get()

        world.spawn("worker", worker, daemon=True)
        q.put_nowait(1)

    assert canonical(scenario).violation is None


def test_raw_trio_sleep_runs_in_virtual_time() -> None:
    async def scenario(world: World) -> None:
        await trio.sleep(1)  # a raw Trio sleep: a deadline, and the world moves its clock to it
        world.state["woke"] = world.now

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None and out.end_time == 1.0


def test_a_raw_event_nobody_sets_is_a_deadlock_at_its_line() -> None:
    async def scenario(world: World) -> None:
        await trio.Event().wait()  # the line named

    v = _verdict(scenario)
    assert v.kind == "deadlock", v
    assert "test_world.py:" in v.message and "(await trio.Event().wait()" in v.message


def test_real_io_is_a_model_error_at_its_line() -> None:
    async def scenario(world: World) -> None:
        a, _b = trio.socket.socketpair()
        with a, _b:
            await a.recv(1)  # real I/O: its wake-up comes on the real clock

    v = _verdict(scenario)
    assert v.kind == "misuse", v
    assert "real I/O" in v.message and "(await a.recv(1)" in v.message


def test_verdict_runaway_steps() -> None:
    async def scenario(world: World) -> None:
        while True:
            await world.step("spin")

    v = _verdict(scenario, limits=h.Limits(max_steps=500))
    assert v.kind == "runaway" and "more than 500 steps" in v.message and "world.horizon" in v.message


def test_verdict_runaway_time() -> None:
    async def scenario(world: World) -> None:
        while True:
            await world.sleep(100)

    v = _verdict(scenario, limits=h.Limits(max_time=1000))
    assert v.kind == "runaway" and "virtual time passed the limit" in v.message


def test_verdict_actor_raised() -> None:
    async def scenario(world: World) -> None:
        async def broken() -> None:
            await world.step("about to fail")
            raise KeyError("podgroup-1")

        world.spawn("broken", broken)

    v = _verdict(scenario)
    assert v.kind == "actor-raised" and v.actor == "broken"
    assert "raised KeyError" in v.message and "test_world.py" in v.message and "Fix the model" in v.message


def test_keyboard_interrupt_in_an_actor_ends_the_search_keeping_results() -> None:
    async def scenario(world: World) -> None:
        await world.step("before")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_once(scenario, ReplayChooser([]))
    result = h.explore(scenario, strategy="random", budget=50)
    assert result.verdict == "interrupted"
    assert result.runs == 1
    assert "interrupted" in result.outcome


def test_primitive_awaited_outside_a_world_explains_itself() -> None:
    world = World(ReplayChooser([]))

    async def main() -> None:
        await world.step("nowhere")

    with pytest.raises(h.NotInSimulation, match="outside a harness actor"):
        trio.run(main)


# ------------------------------------------------------------------ isolation
def test_many_runs_leave_no_task_and_no_growth() -> None:
    from tests.toys import order_violation

    def harness_objects() -> int:
        # some types built at run time by other libraries have a non-string __module__
        return sum(1 for o in gc.get_objects() if str(getattr(type(o), "__module__", "")).startswith("harness."))

    for seed in range(200):  # warm up caches
        run_once(order_violation, RandomChooser(seed))
    gc.collect()
    before = harness_objects()
    for seed in range(10_000):
        run_once(order_violation, RandomChooser(seed))
    gc.collect()
    after = harness_objects()
    assert after - before <= 5, f"harness objects grew from {before} to {after}"
    with pytest.raises(RuntimeError):
        trio.lowlevel.current_task()  # no Trio run survives


def test_no_state_survives_between_runs() -> None:
    async def scenario(world: World) -> None:
        assert world.state == {}
        world.state["leak"] = True
        world.call_later(5, lambda: None, label="pending timer at the end")
        world.horizon = 1

    for _ in range(3):
        assert canonical(scenario).violation is None


def test_batched_runs_equal_separate_runs() -> None:
    from harness.sim import run_batch
    from tests.toys import order_violation, slow_liveness

    for scenario in (order_violation, slow_liveness):
        separate = [run_once(scenario, RandomChooser(seed)).trace.digest() for seed in range(40)]
        batched: list[str] = []

        def keep(out: h.sim.RunOutcome, into: list[str] = batched) -> bool:
            into.append(out.trace.digest())
            return True

        run_batch(scenario, (RandomChooser(seed) for seed in range(40)), keep)
        assert batched == separate


def test_batch_stops_when_asked() -> None:
    from harness.sim import run_batch
    from tests.toys import lost_update

    seen: list[bool] = []
    run_batch(
        lost_update,
        (RandomChooser(seed) for seed in range(100)),
        lambda out: not seen.append(out.violation is None) and len(seen) < 7,
    )
    assert len(seen) == 7


def test_a_generator_the_run_abandons_is_closed_without_a_warning() -> None:
    """An actor that leaves an ``async for`` mid-stream (a client library's watch when a crash or the run's end
    cancels it) is the harness's doing: Trio still closes the generator in that run, and no ResourceWarning escapes
    to land, at the collector's whim, in whatever test runs next."""
    closed: list[bool] = []

    async def scenario(world: World) -> None:
        async def ticks() -> Any:
            try:
                while True:
                    await world.sleep(1.0)
                    yield world.now
            finally:
                closed.append(True)

        async def watcher() -> None:
            stream = ticks()
            async for _ in stream:
                break  # suspended at its yield, never exhausted
            del stream  # collected here, inside the run
            await world.sleep(5.0)

        world.spawn("watcher", watcher)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = run_once(scenario, RandomChooser(0))
    assert out.violation is None, out.violation
    assert closed, "Trio closes the abandoned generator within the run"
    assert [w for w in seen if issubclass(w.category, ResourceWarning)] == []
