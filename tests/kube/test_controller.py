"""controller-runtime reconcileHandler: one test per branch (section 0.3)."""

from __future__ import annotations

from typing import Any

from kube_support import clean, run

from harness.kube import Conflict, Controller, ItemExponentialFailureRateLimiter, Result
from harness.sim import World


def drive(result: Any, *, steps: int = 1) -> dict[str, Any]:
    """Reconcile "ns/a" once with ``result`` (a Result, None, or an exception to raise)."""
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        calls: list[float] = []

        async def reconcile(key: str) -> Result | None:
            calls.append(world.now)
            if len(calls) > steps:
                return None
            if isinstance(result, BaseException):
                raise result
            return result  # type: ignore[no-any-return]

        ctrl: Controller[str] = Controller(
            world, "ctrl", reconcile, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 100.0)
        )
        q = ctrl.queue
        q.add("ns/a")
        item = await q.get()
        q.add_after("ns/a", 50.0)  # a pending delayed re-add that must survive
        q.forget("ns/a")
        q.rate_limiter.when("ns/a")  # one earlier failure on record
        await ctrl.reconcile_handler(item)
        box["requeues"] = q.num_requeues("ns/a")
        box["ready_at"] = q.ready_at("ns/a")
        box["processing"] = q.processing
        box["errors"] = ctrl.errors

    clean(run(scenario))
    return box


def test_reconcile_error_adds_rate_limited() -> None:
    box = drive(Conflict("boom"))
    # failure count 1 -> delay 2 s (moves the 50 s entry earlier), count becomes 2
    assert box == {"requeues": 2, "ready_at": 2.0, "processing": 0, "errors": 1}


def test_requeue_after_forgets_then_adds_after() -> None:
    box = drive(Result(requeue_after=10.0))
    assert box == {"requeues": 0, "ready_at": 10.0, "processing": 0, "errors": 0}


def test_requeue_after_cannot_postpone_an_earlier_entry() -> None:
    box = drive(Result(requeue_after=80.0))
    assert box["ready_at"] == 50.0 and box["requeues"] == 0


def test_requeue_adds_rate_limited() -> None:
    box = drive(Result(requeue=True))
    assert box == {"requeues": 2, "ready_at": 2.0, "processing": 0, "errors": 0}


def test_success_forgets_and_keeps_the_waiting_entry() -> None:
    box = drive(None)
    assert box == {"requeues": 0, "ready_at": 50.0, "processing": 0, "errors": 0}


def test_model_bugs_are_not_retried() -> None:
    async def scenario(world: World) -> None:
        async def reconcile(key: str) -> Result | None:
            raise KeyError(key)

        ctrl: Controller[str] = Controller(world, "ctrl", reconcile)
        ctrl.start()
        ctrl.enqueue("ns/a")

    out = run(scenario)
    assert out.violation is not None and out.violation.actor == "ctrl/worker-1"
    assert "KeyError" in out.violation.message


def test_workers_are_named_daemons_and_reconcile_concurrently() -> None:
    seen: list[tuple[str, float]] = []

    async def scenario(world: World) -> None:
        async def reconcile(key: str) -> Result | None:
            await world.sleep(1.0, f"reconcile {key}")
            seen.append((key, world.now))
            return None

        ctrl: Controller[str] = Controller(world, "ctrl", reconcile, workers=3)
        ctrl.start()
        for k in ("a", "b", "c"):
            ctrl.enqueue(k)

    out = clean(run(scenario))
    assert sorted(seen) == [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    assert {r.actor for r in out.trace if r.actor.startswith("ctrl/")} == {
        "ctrl/worker-1", "ctrl/worker-2", "ctrl/worker-3"
    }
