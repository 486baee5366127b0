"""Issue 47: an operator as written (its own main, task groups, anyio waits, a client from the environment) runs
unmodified under the world, as a process the search may crash and restart."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import trio
from lightkube import ApiError, AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap

import harness as h
from harness.explore._runner import model_error_of
from harness.kube import APIServer, KubeObject
from harness.operators import Operator
from harness.sim import RandomChooser, ReplayChooser, run_once
from harness.sim._choosers import FaultPlacement

ROOT = Path(__file__).resolve().parents[2]
log = logging.getLogger("cm-operator")


async def copier(copies: int = 1) -> None:
    """A production-shaped operator: a client from the environment, a watch loop and ``copies`` workers in its own
    task group, an ``anyio.Event`` for 'synced', a backoff sleep; each worker copies the ConfigMap 'a' once."""
    client = AsyncClient()
    synced = anyio.Event()
    seen: dict[str, Any] = {}

    async def watch() -> None:
        async for event, obj in client.watch(ConfigMap, namespace="default"):
            seen[obj.metadata.name] = obj
            log.info("saw %s %s", event, obj.metadata.name)
            synced.set()

    async def worker(n: int) -> None:
        await synced.wait()
        await anyio.sleep(2)
        try:
            await client.create(ConfigMap(metadata=ObjectMeta(name=f"copy-{n}", namespace="default"),
                                          data={"from": seen["a"].metadata.resourceVersion}))
        except ApiError as err:
            if err.status.code != 409:  # AlreadyExists: made before a restart
                raise
        log.info("copied a as copy-%d", n)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        for n in range(copies):
            tg.start_soon(worker, n)


async def copier_scenario(world: h.World, *, copies: int = 1, crash: bool = False) -> None:
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "a", extra={"data": {"x": "1"}}))
    Operator(api, "cm-operator", copier, copies, crash_faults=crash).start()
    await world.sleep(10)


def _digest(out: h.sim.RunOutcome) -> str:  # type: ignore[name-defined]
    return str(out.trace.digest())


def test_operator_task_groups_are_actors() -> None:
    out = run_once(copier_scenario, ReplayChooser([]), params={"copies": 2})
    assert out.violation is None, out.violation
    actors = {r.actor for r in out.trace}
    # each task of the operator's task group is an actor named after its parent and its function, counted
    assert {"cm-operator", "cm-operator/watch", "cm-operator/worker", "cm-operator/worker#2"} <= actors
    creates = [r for r in out.trace if r.label.startswith("create ConfigMap default/copy-")]
    assert [r.actor for r in creates] == ["cm-operator/worker", "cm-operator/worker#2"]
    # the order of the two workers is the search's choice: some seed runs worker#2 first
    firsts = set()
    for seed in range(30):
        run = run_once(copier_scenario, RandomChooser(seed), params={"copies": 2})
        firsts.add(next(r.actor for r in run.trace if r.label.startswith("create ConfigMap default/copy-")))
    assert firsts == {"cm-operator/worker", "cm-operator/worker#2"}


_DIGESTS = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from tests.kube.test_operator import copier_scenario
    from harness.sim import RandomChooser, run_once
    print(json.dumps([str(run_once(copier_scenario, RandomChooser(s), params={{"copies": 2}}).trace.digest())
                      for s in range(4)]))
""")


def test_operator_runs_are_deterministic_across_processes_and_hash_seeds() -> None:
    code = _DIGESTS.format(root=str(ROOT))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PYTHONHASHSEED=seed), check=True).stdout for seed in ("1", "2")]
    assert runs[0] == runs[1]
    here = [_digest(run_once(copier_scenario, RandomChooser(s), params={"copies": 2})) for s in range(4)]
    assert json.loads(runs[0]) == here
    assert len(set(here)) > 1  # the seeds do choose different orders


async def _primitives(world: h.World) -> None:
    """Every trio/anyio primitive an operator waits on, in an actor's own task group, on the virtual clock."""
    at: dict[str, float] = world.state.setdefault("at", {})

    async def operator() -> None:
        lock = anyio.Lock()
        sem = anyio.Semaphore(1)
        cond = anyio.Condition()
        send, receive = anyio.create_memory_object_stream[int](math.inf)
        ready = trio.Event()

        async def producer() -> None:
            await anyio.sleep(1.5)
            at["slept"] = world.now
            async with lock, sem:
                await trio.sleep(0.5)
            at["locked"] = world.now
            await send.send(1)
            async with cond:
                cond.notify_all()
            ready.set()

        async def consumer() -> None:
            assert await receive.receive() == 1
            at["received"] = world.now
            await ready.wait()
            with anyio.move_on_after(3) as scope:
                await anyio.sleep(100)
            at["moved on"] = world.now if scope.cancelled_caught else -1
            try:
                with anyio.fail_after(1):
                    await trio.sleep_forever()
            except TimeoutError:
                at["failed after"] = world.now

        async with send, receive, anyio.create_task_group() as tg:
            tg.start_soon(producer)
            tg.start_soon(consumer)
        at["joined"] = world.now

    world.spawn("operator", operator)


def test_operator_anyio_primitives_run_in_virtual_time() -> None:
    out = run_once(_primitives, ReplayChooser([]))
    assert out.violation is None, out.violation
    seen: dict[str, float] = {}

    async def keep(world: h.World) -> None:
        world.state["at"] = seen
        await _primitives(world)

    assert run_once(keep, ReplayChooser([])).violation is None
    # virtual instants, exact: not a wall clock (the whole run takes milliseconds)
    assert seen == {"slept": 1.5, "locked": 2.0, "received": 2.0, "moved on": 5.0, "failed after": 6.0,
                    "joined": 6.0}
    labels = [r.label for r in out.trace]
    assert any(lb.startswith("wake at test_operator.py:") and "(await anyio.sleep(1.5))" in lb for lb in labels)


def test_operator_main_builds_its_client_from_the_environment() -> None:
    before = os.environ.get("KUBECONFIG")
    out = run_once(copier_scenario, ReplayChooser([]), notes=True)
    assert out.violation is None, out.violation
    assert os.environ.get("KUBECONFIG") == before  # given back when the run ended
    # AsyncClient() read the harness's kubeconfig, and its requests reached the world's apiserver as the operator's
    labels = [(r.actor, r.label) for r in out.trace]
    assert ("cm-operator/watch", "watch ConfigMap default/*") in labels
    assert ("cm-operator/worker", "create ConfigMap default/copy-0") in labels
    assert any("ConfigMap default/copy-0 created" in n.text for n in out.trace.notes)


def test_a_request_outside_the_cluster_is_a_model_error() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            await client.get("https://example.com/")  # the line named

    async def scenario(world: h.World) -> None:
        Operator(APIServer(world), "op", main).start()
        await world.sleep(1)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    said = model_error_of(out.violation)
    assert said is not None and "https://example.com/" in said and "(await client.get(\"https://example.com/\")" in said


def _crash_run(seed: int) -> h.sim.RunOutcome:  # type: ignore[name-defined]
    return run_once(copier_scenario, RandomChooser(seed, faults=FaultPlacement(frozenset({"crash"}), [3])),
                    params={"copies": 2, "crash": True}, notes=True)


def test_operator_crash_cancels_every_task_and_restarts_main() -> None:
    out = _crash_run(0)
    assert out.violation is None, out.violation
    faults = [r for r in out.trace if r.kind == "fault"]
    assert len(faults) == 1 and faults[0].label.startswith("cm-operator crashes before ")
    crashed_at = faults[0].step
    first = {"cm-operator", "cm-operator/watch", "cm-operator/worker", "cm-operator/worker#2"}
    after = {r.actor for r in out.trace if r.step > crashed_at}
    # every task of the first incarnation ends at the crash (each unwinds, none makes a request after it)
    requests_after = [r for r in out.trace if r.step > crashed_at and r.actor in first and r.kind == "run"
                      and not r.label.startswith(("wake at", "cancelled during"))]
    assert requests_after == [], requests_after
    # and main runs again: a second incarnation with its own tasks, which finishes the work
    assert {"cm-operator#2", "cm-operator#2/watch", "cm-operator#2/worker", "cm-operator#2/worker#2"} <= after
    texts = [n.text for n in out.trace.notes]
    assert any("cm-operator crashes (incarnation 1)" in t for t in texts)
    assert any("cm-operator restarts (incarnation 2)" in t for t in texts)
    # the crashed incarnation's watch connection closed with it: only the new one delivers after the restart
    restart = next(n.step for n in out.trace.notes if "restarts (incarnation 2)" in n.text)
    readers = {r.actor for r in out.trace if r.step > restart and "reads watch ConfigMap" in r.label}
    assert readers <= {"cm-operator#2/watch"}
    assert _digest(_crash_run(0)) == _digest(out)


async def _lister(world: h.World, *, rv: str | None = "0") -> None:
    """An operator that lists through a raw httpx client built from the environment (``KUBECONFIG``)."""
    api = APIServer(world)
    for n in range(3):
        await api.create(KubeObject("ConfigMap", "default", f"c{n}"))

    async def main() -> None:
        async with httpx.AsyncClient(base_url="https://kube-apiserver.harness.invalid", verify=False) as client:
            query = {} if rv is None else {"resourceVersion": rv}
            body = (await client.get("/api/v1/namespaces/default/configmaps", params=query)).json()
            world.state["listed"] = [i["metadata"]["name"] for i in body["items"]]
            await lightkube_list()

    async def lightkube_list() -> None:
        client = AsyncClient()
        world.state["lightkube"] = [c.metadata.name async for c in client.list(ConfigMap, namespace="default")]

    Operator(api, "op", main).start()
    await world.sleep(1)


def test_transport_clients_have_stale_read_points() -> None:
    stale = frozenset({"stale_read"})
    out = run_once(_lister, ReplayChooser([]), params={"rv": "0"}, faults=stale)
    assert out.violation is None, out.violation
    # a LIST at resourceVersion=0 may be served by a lagging watch cache: a stale_read point (staging/src/k8s.io/
    # apiserver/pkg/storage/cacher/cacher.go serves rv=0 from the cache); lightkube's list sends no resourceVersion,
    # a consistent read (served from etcd, or from the cache once it caught up: ConsistentListFromCache) with none
    assert out.fault_points.get("stale_read", 0) >= 1, out.fault_points  # (one per older revision it may serve)
    assert run_once(_lister, ReplayChooser([]), params={"rv": None}, faults=stale).fault_points.get("stale_read") is None
    # with the point taken, the operator's LIST is served from an older revision: fewer ConfigMaps
    seen = set()
    for target in range(1, 2):
        plan = FaultPlacement(frozenset({"stale_read"}), [target])
        for seed in range(20):

            async def keep(world: h.World) -> None:
                await _lister(world)
                seen.add(tuple(world.state.get("listed", ())))

            run_once(keep, RandomChooser(seed, faults=plan), faults=stale)
    assert ("c0", "c1", "c2") in seen and any(len(s) < 3 for s in seen), seen


async def _uses_asyncio(world: h.World) -> None:
    async def main() -> None:
        await asyncio.sleep(1)  # the line the error names

    Operator(APIServer(world), "op", main).start()
    await world.sleep(5)


def test_operator_misuse_is_a_model_error_at_its_line(tmp_path: Path) -> None:
    out = run_once(_uses_asyncio, ReplayChooser([]))
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    said = model_error_of(out.violation)
    assert said is not None and "test_operator.py:" in said and "(await asyncio.sleep(1)" in said
    assert "ExceptionGroup" not in said
    # the command line says it as a model error, exit 1, with the file and line
    scenario = tmp_path / "asyncio_operator.py"
    scenario.write_text(textwrap.dedent('''
        import asyncio
        import harness as h
        from harness.kube import APIServer
        from harness.operators import Operator


        async def main() -> None:
            await asyncio.sleep(1)


        @h.scenario
        async def scenario(world: h.World, *, fixed: bool = False) -> None:
            Operator(APIServer(world), "op", main).start()
            await world.sleep(5)
    '''))
    done = subprocess.run([sys.executable, "-m", "harness", "hunt", f"{scenario}:scenario", "--budget", "20"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    text = done.stdout + done.stderr
    assert "model error" in text and "asyncio_operator.py:9" in text and "Traceback" not in text


def test_operator_logging_becomes_notes(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_once(copier_scenario, ReplayChooser([]), notes=True)
    logs = [(n.step, n.text) for n in out.trace.notes if n.kind == "log"]
    texts = [t for _s, t in logs]
    assert "cm-operator: INFO: saw ADDED a" in texts and "cm-operator: INFO: copied a as copy-0" in texts
    # each note belongs to the step that logged it: the copy's line to the worker's create
    step = next(s for s, t in logs if t.endswith("copied a as copy-0"))
    record = next(r for r in out.trace if r.step == step)
    assert record.actor == "cm-operator/worker"
    # httpx's per-request INFO lines are not the operator's words; nothing reached the terminal
    assert not any("HTTP Request" in t for t in texts)
    captured = capsys.readouterr()
    assert "saw ADDED" not in captured.out + captured.err
    # and the root logger is given back as it was
    assert not any(type(handler).__name__ == "_NoteHandler" for handler in logging.getLogger().handlers)


def test_a_run_with_an_operator_settles_with_its_tasks_waiting() -> None:
    out = run_once(copier_scenario, ReplayChooser([]))
    assert out.violation is None and out.end_time == 10.0  # the operator's tasks wait for ever: daemons
