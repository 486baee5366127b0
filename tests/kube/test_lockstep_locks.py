"""Issue 60, item 3: lockstep threads hand off on each other's locks (``harness.sim._handoff``).

Two sync calls of an operator (as kopf runs two sync handlers at once) share a
``threading.Lock``, a ``queue.Queue`` or a ``threading.Condition``; one holds it
across an operation of the world (a request through the official client, a
``time.sleep``), the other blocks on it. Under the world one thread runs at a
time, so the blocked one parks its actor in the world, and which thread goes on
is the world's choice: the seed's, never the OS's.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

import harness as h
from harness.explore._runner import model_error_of
from harness.kube import APIServer, KubeObject
from harness.operators import Operator
from harness.sim import RandomChooser, ReplayChooser, run_once

ROOT = Path(__file__).resolve().parents[2]

Shared = dict[str, Any]


def _api() -> Any:
    config.load_kube_config()
    return client.CoreV1Api()


# --------------------------------------------------------------------------- the threads, as an operator writes them
def locked_writer(shared: Shared, name: str) -> None:
    """Hold the shared lock across a request and a sleep (a critical section around the apiserver)."""
    v1 = _api()
    with shared["lock"]:
        shared["order"].append(f"{name} in")
        v1.create_namespaced_config_map("default", {"metadata": {"name": name}})
        time.sleep(1)
        shared["order"].append(f"{name} out")


def producer(shared: Shared, name: str) -> None:
    """Make a ConfigMap, then hand its name to the consumer (a bounded queue: the second put waits for room)."""
    _api().create_namespaced_config_map("default", {"metadata": {"name": name}})
    shared["queue"].put(name)


def consumer(shared: Shared, count: int) -> None:
    """Take ``count`` names off the queue, waiting for each (the queue is empty when it starts)."""
    v1 = _api()
    for _ in range(count):
        name = shared["queue"].get()
        shared["order"].append(name)
        v1.read_namespaced_config_map(name, "default")


def notifier(shared: Shared) -> None:
    """After a second, under the condition's lock: a request, the flag, notify_all."""
    v1 = _api()
    time.sleep(1)
    with shared["cond"]:
        v1.create_namespaced_config_map("default", {"metadata": {"name": "ready"}})
        shared["ready"] = True
        shared["cond"].notify_all()


def cond_waiter(shared: Shared, name: str) -> None:
    """Wait on the condition for the flag, then note its turn while holding the condition's lock across a request."""
    v1 = _api()
    with shared["cond"]:
        while not shared.get("ready"):
            shared["cond"].wait()
        shared["order"].append(name)
        v1.read_namespaced_config_map("ready", "default")


async def in_threads(*calls: tuple[Callable[..., None], tuple[Any, ...]]) -> None:
    """An asyncio operator's main: each call in the loop's executor (as kopf runs a sync handler), all at once."""
    loop = asyncio.get_running_loop()
    await asyncio.gather(*(loop.run_in_executor(None, fn, *args) for fn, args in calls))


def _calls(case: str, shared: Shared) -> tuple[tuple[Callable[..., None], tuple[Any, ...]], ...]:
    if case == "lock":
        return (locked_writer, (shared, "a")), (locked_writer, (shared, "b"))
    if case == "queue":
        return (consumer, (shared, 2)), (producer, (shared, "a")), (producer, (shared, "b"))
    return (cond_waiter, (shared, "a")), (cond_waiter, (shared, "b")), (notifier, (shared,))


def _primitives(case: str) -> Shared:
    """The shared primitive, made once the world's loop is ready for lockstep threads (as an operator's module is
    imported after the loop is made)."""
    if case == "lock":
        return {"lock": threading.Lock()}
    if case == "queue":
        return {"queue": queue.Queue(maxsize=1)}
    return {"cond": threading.Condition()}


def _run(case: str, seed: int) -> tuple[h.sim.RunOutcome, list[str]]:  # type: ignore[name-defined]
    shared: Shared = {"order": []}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        op = Operator(api, "op", in_threads, *_calls(case, shared), asyncio=True)
        shared.update(_primitives(case))
        op.start()
        await world.sleep(10)

    return run_once(scenario, RandomChooser(seed)), shared["order"]


def case_digest(case: str, seed: int) -> str:
    return str(_run(case, seed)[0].trace.digest())


def test_lockstep_threads_hand_off_on_each_others_locks() -> None:
    expected = {"lock": {("a in", "a out", "b in", "b out"), ("b in", "b out", "a in", "a out")},
                "queue": {("a", "b"), ("b", "a")}, "condition": {("a", "b"), ("b", "a")}}
    for case, orders in expected.items():
        seen: set[tuple[str, ...]] = set()
        for seed in range(12):
            out, order = _run(case, seed)
            assert out.violation is None, (case, seed, out.violation)
            seen.add(tuple(order))
            if seed == 0:
                # the blocked thread's wait is the world's, labelled where it waits
                waits = {r.label for r in out.trace if r.label.startswith("wait for ")}
                assert waits and all("test_lockstep_locks.py:" in w for w in waits), (case, waits)
                assert str(_run(case, seed)[0].trace.digest()) == str(out.trace.digest())  # same seed, same run
            if seen == orders:
                break
        # both orders, each a world's choice (never both threads at once: a lock's holders never interleave)
        assert seen == orders, (case, seen)


def test_lockstep_waits_are_labelled_by_what_they_wait_for() -> None:
    labels = {case: {r.label.split(" at ")[0] for r in _run(case, 0)[0].trace if r.label.startswith("wait for ")}
              for case in ("lock", "queue", "condition")}
    assert labels["lock"] == {"wait for a lock"}
    assert "wait for an item of a queue" in labels["queue"]
    assert "wait for a condition" in labels["condition"]


def test_lockstep_acquire_timeout_is_virtual_time() -> None:
    seen: dict[str, Any] = {}

    def holder(shared: Shared) -> None:
        with shared["lock"]:
            _api().create_namespaced_config_map("default", {"metadata": {"name": "held"}})
            time.sleep(5)

    def impatient(shared: Shared, world: h.World) -> None:
        got = shared["lock"].acquire(timeout=2)
        seen["first"] = (got, world.now)
        got = shared["lock"].acquire(timeout=10)
        seen["second"] = (got, world.now)

    async def scenario(world: h.World) -> None:
        shared: Shared = {}
        op = Operator(APIServer(world), "op", in_threads, (holder, (shared,)), (impatient, (shared, world)),
                      asyncio=True)
        shared["lock"] = threading.Lock()
        op.start()
        await world.sleep(10)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert seen == {"first": (False, 2.0), "second": (True, 5.0)}


def test_lockstep_thread_waiting_on_a_lock_nobody_releases_is_a_model_error() -> None:
    def forgets(shared: Shared) -> None:
        _api().create_namespaced_config_map("default", {"metadata": {"name": "x"}})
        shared["lock"].acquire()  # and never released

    def blocked(shared: Shared) -> None:
        time.sleep(1)
        with shared["lock"]:
            pass

    async def scenario(world: h.World) -> None:
        shared: Shared = {}
        op = Operator(APIServer(world), "op", in_threads, (forgets, (shared,)), (blocked, (shared,)), asyncio=True)
        shared["lock"] = threading.Lock()
        op.start()
        await world.sleep(5)

    out = run_once(scenario, ReplayChooser([]))
    said = model_error_of(out.violation)
    assert said is not None and out.violation is not None and out.violation.actor == "op/blocked", out.violation
    assert "waits for a lock at test_lockstep_locks.py:" in said and "in blocked" in said, said
    assert "no thread of the world releases it" in said and "Release what a thread acquires" in said


def test_lockstep_holder_past_the_horizon_is_no_model_error() -> None:
    """The run ends while the holder still sleeps with the lock: it could release it, so the waiter is no misuse."""

    def holder(shared: Shared) -> None:
        with shared["lock"]:
            _api().create_namespaced_config_map("default", {"metadata": {"name": "held"}})
            time.sleep(100)

    def waiter(shared: Shared) -> None:
        with shared["lock"]:
            pass

    async def scenario(world: h.World) -> None:
        world.horizon = 20
        shared: Shared = {}
        op = Operator(APIServer(world), "op", in_threads, (holder, (shared,)), (waiter, (shared,)), asyncio=True)
        shared["lock"] = threading.Lock()
        op.start()

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert out.end_time == 20.0


def test_kopf_sync_handlers_share_a_module_level_lock(tmp_path: Path) -> None:
    """A module-level ``threading.Lock()`` in kopf handlers: imported after the world's loop is made, it hands off."""
    handlers = tmp_path / "locked_handlers.py"
    handlers.write_text(textwrap.dedent('''
        import threading
        import time
        import kopf
        import kubernetes

        LOCK = threading.Lock()

        @kopf.on.create("configmaps", labels={"app": "demo"})
        def created(name, namespace, logger, **_):
            kubernetes.config.load_kube_config()
            v1 = kubernetes.client.CoreV1Api()
            with LOCK:
                time.sleep(2)
                v1.create_namespaced_secret(namespace, {"metadata": {"name": f"{name}-child"}})
    '''))
    from harness.operators import kopf_operator

    made: dict[str, float] = {}

    async def scenario(world: h.World) -> None:
        world.horizon = 60
        api = APIServer(world)
        kopf_operator(api, "kopf-op", str(handlers)).start()
        await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "demo"}))
        await api.create(KubeObject("ConfigMap", "default", "b", labels={"app": "demo"}))
        await world.sleep(20)
        made.update({s.name: s.creation_timestamp for s in api.snapshot("Secret")[0]})

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert sorted(made.values()) == [2.0, 4.0], made  # one after the other: the lock held across the sleep
    assert any(r.label.startswith("wait for a lock at locked_handlers.py:") for r in out.trace)


# --------------------------------------------------------------------------- determinism under load
_DIGESTS = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from tests.kube.test_sync_client import _digest
    from tests.kube.test_lockstep_locks import case_digest
    print(json.dumps([_digest(s) for s in range(4)] + [case_digest(c, s) for c in ("lock", "queue", "condition")
                                                       for s in range(2)]))
""")


@contextmanager
def _spinning(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes beside the test, each in a session of its own, killed however the test ends."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
             for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            proc.wait()


def _digests_under_load(rounds: int) -> None:
    code = _DIGESTS.format(root=str(ROOT))
    runs = []
    with _spinning(2):
        for _ in range(rounds):
            procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=dict(os.environ, PYTHONHASHSEED=seed))
                     for seed in ("1", "2")]  # (side by side, beside the spinning ones)
            for proc in procs:
                out, err = proc.communicate(timeout=600)
                assert proc.returncode == 0, err
                runs.append(out)
    assert len(set(runs)) == 1, runs  # every process, every round: the same traces byte for byte
    digests = json.loads(runs[0])
    assert len(set(digests[:4])) > 1  # and the seeds do choose different orders


def test_lockstep_threads_deterministic_under_load() -> None:
    _digests_under_load(rounds=2)


@pytest.mark.slow
def test_lockstep_threads_deterministic_under_long_load() -> None:
    _digests_under_load(rounds=5)
