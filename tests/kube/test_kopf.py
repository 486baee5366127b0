"""Issue 48: kopf operators, asyncio and aiohttp run unmodified and deterministically in process, under the world."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import aiohttp

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import Operator, kopf_operator
from harness.sim import RandomChooser, ReplayChooser, run_once
from harness.sim._choosers import FaultPlacement

ROOT = Path(__file__).resolve().parents[2]

HANDLERS = textwrap.dedent('''
    import asyncio, os
    import kopf

    @kopf.on.create("configmaps", labels={"app": "demo"})
    async def created(name, patch, logger, **_):
        logger.info("created %s", name)
        patch.setdefault("metadata", {}).setdefault("annotations", {})["seen"] = os.environ.get("MARK", "yes")
        return {"ok": 1}

    @kopf.on.delete("configmaps", labels={"app": "demo"})
    async def deleted(body, name, logger, **_):
        kopf.info(body, reason="Cleanup", message=f"cleaning up after {name}")
        logger.info("deleted %s", name)

    @kopf.timer("configmaps", labels={"app": "timed"}, interval=10)
    async def tick(name, memo, **_):
        memo.setdefault("ticks", []).append(asyncio.get_running_loop().time())
        TICKS.append(asyncio.get_running_loop().time())

    @kopf.daemon("configmaps", labels={"app": "timed"})
    async def watchman(name, stopped, **_):
        while not stopped:
            await asyncio.sleep(7)
            NAPS.append(asyncio.get_running_loop().time())

    TICKS = []
    NAPS = []
''')


def _handlers(tmp: Path) -> str:
    path = tmp / "handlers.py"
    path.write_text(HANDLERS)
    return str(path)


async def _kopf_scenario(world: h.World, *, handlers: str, labels: str = "demo", delete: bool = True,
                         crash: bool = False) -> None:
    world.horizon = 60
    api = APIServer(world)
    kopf_operator(api, "kopf-op", handlers, env={"MARK": "marked"}, crash_faults=crash).start()
    await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": labels}, extra={"data": {"x": "1"}}))
    await world.sleep(10)
    cm = api.peek("ConfigMap", "default", "a")
    assert cm is not None
    world.state["after_create"] = {"annotations": dict(cm.annotations), "finalizers": list(cm.finalizers),
                                   "status": getattr(cm, "status", None) or cm.extra.get("status")}
    if delete:
        await api.delete("ConfigMap", "default", "a")
        await world.sleep(10)
        world.state["gone"] = api.peek("ConfigMap", "default", "a") is None
        world.state["events"] = [(e.extra.get("reason"), e.extra.get("message")) for e in api.peek_all("Event")]


def _run(scenario: Any, seed: int | None = None, **params: Any) -> tuple[h.sim.RunOutcome, dict[str, Any]]:  # type: ignore[name-defined]
    box: dict[str, Any] = {}

    async def wrapped(world: h.World) -> None:
        await scenario(world, **params)
        box.update(world.state)

    chooser = ReplayChooser([]) if seed is None else RandomChooser(seed)
    return run_once(wrapped, chooser, notes=True), box


def test_kopf_operator_runs_unmodified_in_process(tmp_path: Path) -> None:
    out, state = _run(_kopf_scenario, handlers=_handlers(tmp_path), delete=False)
    assert out.violation is None, out.violation
    actors = {r.actor for r in out.trace}
    # kopf's tasks that talk to the apiserver are actors, named as kopf names them; its per-object worker patches
    assert {"kopf-op", "kopf-op/watcher-for-configmaps.v1@default", "kopf-op/namespace-observer"} <= actors
    patches = [r.actor for r in out.trace if r.label == "patch ConfigMap default/a"]
    assert patches and all(a.startswith("kopf-op/worker-for-(configmaps.v1,") for a in patches), patches
    # the handler ran, its patch and its result landed (progress storage in annotations, the result in status),
    # and the module was imported with the scenario's environment
    assert state["after_create"]["annotations"]["seen"] == "marked"
    assert state["after_create"]["status"] == {"created": {"ok": 1}}
    notes = [n.text for n in out.trace.notes]
    assert any("Handler 'created' succeeded" in t for t in notes)


def test_kopf_handlers_finalizers_status_and_events(tmp_path: Path) -> None:
    out, state = _run(_kopf_scenario, handlers=_handlers(tmp_path))
    assert out.violation is None, out.violation
    # a deletion handler puts kopf's finalizer on the object, which holds its deletion until the handler ran
    assert "kopf.zalando.org/KopfFinalizerMarker" in state["after_create"]["finalizers"]
    assert state["gone"] is True
    assert ("Cleanup", "cleaning up after a") in state["events"]
    labels = [r.label for r in out.trace]
    assert any(lbl.startswith("patch ConfigMap default/a") for lbl in labels)


def test_kopf_timers_and_daemons_run_in_virtual_time(tmp_path: Path) -> None:
    handlers = _handlers(tmp_path)
    out, _state = _run(_kopf_scenario, handlers=handlers, labels="timed", delete=False)
    assert out.violation is None, out.violation
    # a 60 s horizon of virtual time: the daemon's 7 s naps and the 10 s timer ran at their virtual instants
    naps = sorted({r.time for r in out.trace if r.label.endswith("(await asyncio.sleep(7))")})
    assert naps[:4] == [7.0, 14.0, 21.0, 28.0] and len(naps) >= 7, naps
    ticks = [n for n in out.trace.notes if "Timer 'tick' succeeded" in n.text]
    assert len(ticks) >= 4, ticks


_DIGESTS = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from examples.kopf_child_secret import scenario
    from harness.sim import RandomChooser, run_once
    print(json.dumps([str(run_once(scenario, RandomChooser(s)).trace.digest()) for s in range(3)]))
""")


def test_kopf_run_is_deterministic_across_processes() -> None:
    code = _DIGESTS.format(root=str(ROOT))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PYTHONHASHSEED=seed), check=True).stdout for seed in ("1", "2")]
    assert runs[0] == runs[1]
    from examples.kopf_child_secret import scenario

    here = [str(run_once(scenario, RandomChooser(s)).trace.digest()) for s in range(3)]
    assert json.loads(runs[0]) == here
    assert len(set(here)) > 1  # the seeds do choose different orders


def test_kopf_operator_crash_and_restart(tmp_path: Path) -> None:
    handlers = _handlers(tmp_path)
    box: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        await _kopf_scenario(world, handlers=handlers, delete=False, crash=True)
        box.update(world.state)

    def crashed_at(point: int) -> tuple[h.sim.RunOutcome, list[Any]]:  # type: ignore[name-defined]
        box.clear()
        out = run_once(scenario, RandomChooser(0, faults=FaultPlacement(frozenset({"crash"}), [point])), notes=True)
        return out, [r for r in out.trace if r.label.startswith("kopf-op crashes before ")]

    # the crash point right before the response of the handler's patch: the patch committed, the process died
    out, crashes = next(run for k in range(1, 20) if (run := crashed_at(k))[1]
                        and run[1][0].label == "kopf-op crashes before response patch ConfigMap default/a")
    assert out.violation is None, out.violation
    assert len(crashes) == 1
    after = {r.actor for r in out.trace if r.step > crashes[0].step}
    # the restarted incarnation is kopf again, from its start: its login, its watches
    assert "kopf-op#2/watcher-for-configmaps.v1@default" in after
    # what kopf kept on the object (the handler's progress and result) survived the crash: the new incarnation
    # reads it and does not run the handler again
    assert box["after_create"]["annotations"]["seen"] == "marked"
    invoked = [n for n in out.trace.notes if "Handler 'created' succeeded" in n.text]
    assert len(invoked) == 1, invoked


async def _aiohttp_main(seen: list[str]) -> None:
    url = "https://kube-apiserver.harness.invalid"
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{url}/api/v1/namespaces/default/configmaps/a", ssl=False) as r:
            seen.append(f"get {r.status} rv={(await r.json())['metadata']['resourceVersion']}")
        async with session.post(f"{url}/api/v1/namespaces/default/configmaps", ssl=False,
                                json={"metadata": {"name": "b"}}) as r:
            seen.append(f"create {r.status}")
        async with session.get(f"{url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0",
                               ssl=False) as r:
            async for line in r.content:
                event = json.loads(line)
                seen.append(f"{event['type']} {event['object']['metadata']['name']}")
                if len(seen) == 5:
                    return


def test_asyncio_operator_with_aiohttp_client() -> None:
    seen: list[str] = []

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "a"))
        op = Operator(api, "aio-op", _aiohttp_main, seen, asyncio=True).start()
        await world.sleep(5)
        await api.create(KubeObject("ConfigMap", "default", "c"))
        await world.sleep(5)
        world.state["ended"] = op.ended

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert seen == ["get 200 rv=5", "create 201", "ADDED a", "ADDED b", "ADDED c"]
    labels = [(r.actor, r.label) for r in out.trace]
    assert ("aio-op/_aiohttp_main", "get ConfigMap default/a") in labels
    # a watch delivery is the stream's own step, then the reading task wakes as its own choice
    assert any(a == "aio-op/watch/ConfigMap" and lbl.startswith("aio-op/watch/ConfigMap deliver ADDED default/c")
               for a, lbl in labels)
    # the orders are the world's: seeds differ, each replays to the same digest
    digests = {str(run_once(scenario, RandomChooser(s)).trace.digest()) for s in range(6)}
    assert len(digests) > 1


def test_a_raw_socket_in_an_asyncio_operator_is_a_model_error() -> None:
    async def main() -> None:
        async with aiohttp.ClientSession() as session, session.get("https://example.com/") as r:
            await r.read()

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        Operator(api, "aio-op", main, asyncio=True).start()
        await world.sleep(5)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    assert "example.com" in out.violation.message and "does not serve" in out.violation.message


def test_lightkube_operator_on_asyncio() -> None:
    """A lightkube operator started the usual way (``anyio.run(main)``: asyncio) runs on the world's loop: its
    httpx requests and watch reads are its tasks' actors' steps, its anyio waits the loop's."""
    from tests.kube.test_operator import copier

    box: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "a", extra={"data": {"x": "1"}}))
        Operator(api, "cm-operator", copier, 2, asyncio=True).start()
        await world.sleep(10)
        box["names"] = sorted(o.name for o in api.peek_all("ConfigMap"))

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert box["names"] == ["a", "copy-0", "copy-1"]
    creates = [(r.actor, r.time) for r in out.trace if r.label.startswith("create ConfigMap default/copy-")]
    # anyio's task group tasks on asyncio, named after their functions; anyio.sleep(2) ran on the virtual clock
    assert creates == [("cm-operator/worker", 2.0), ("cm-operator/worker#2", 2.0)]
    firsts = {next(r.actor for r in run_once(scenario, RandomChooser(s)).trace
                   if r.label.startswith("create ConfigMap default/copy-")) for s in range(20)}
    assert firsts == {"cm-operator/worker", "cm-operator/worker#2"}


async def _k8s_asyncio_main(seen: list[str]) -> None:
    """An operator on kubernetes_asyncio as its users write one: config from KUBECONFIG, a watch, a write per event."""
    from kubernetes_asyncio import client, config, watch

    await config.load_kube_config()
    async with client.ApiClient() as api_client:
        core = client.CoreV1Api(api_client)
        stream = watch.Watch().stream(core.list_namespaced_config_map, "default", timeout_seconds=30)
        async for event in stream:
            name = event["object"].metadata.name
            seen.append(f"{event['type']} {name}")
            if not name.endswith("-copy"):
                body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"{name}-copy"), data={"from": name})
                try:
                    await core.create_namespaced_config_map("default", body)
                except client.ApiException as err:
                    if err.status != 409:
                        raise


def test_kubernetes_asyncio_operator() -> None:
    seen: list[str] = []
    box: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "a"))
        Operator(api, "k8s-op", _k8s_asyncio_main, seen, asyncio=True).start()
        await world.sleep(5)
        await api.create(KubeObject("ConfigMap", "default", "b"))
        await world.sleep(5)
        box["names"] = sorted(o.name for o in api.peek_all("ConfigMap"))

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert box["names"] == ["a", "a-copy", "b", "b-copy"]
    assert seen[:2] == ["ADDED a", "ADDED a-copy"] and "ADDED b" in seen and "ADDED b-copy" in seen
    assert any(r.label == "create ConfigMap default/b-copy" and r.actor == "k8s-op/_k8s_asyncio_main" for r in out.trace)
    assert str(run_once(scenario, ReplayChooser([])).trace.digest()) == str(out.trace.digest())


SYNC_DAEMONS = textwrap.dedent('''
    import time
    import kopf

    @kopf.daemon("configmaps", labels={"app": "d"})
    def waiter(name, stopped, logger, **_):
        while not stopped:
            logger.info("waiter tick")
            stopped.wait(5)

    @kopf.daemon("configmaps", labels={"app": "d"})
    def sleeper(name, stopped, logger, **_):
        while not stopped:
            logger.info("sleeper tick")
            time.sleep(7)
''')


def test_kopf_sync_daemons_wait_in_virtual_time(tmp_path: Path) -> None:
    """Sync daemons run in lockstep threads: kopf's ``stopped.wait(5)`` (a threading.Event) and ``time.sleep(7)``
    are the world's waits; deleting the object stops both, each at its own instant."""
    handlers = tmp_path / "daemons.py"
    handlers.write_text(SYNC_DAEMONS)

    async def scenario(world: h.World) -> None:
        world.horizon = 30
        api = APIServer(world)
        await h.kube.start_cluster(api)
        kopf_operator(api, "op", handlers).start()
        await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "d"}))
        await world.sleep(10.5)
        await api.delete("ConfigMap", "default", "a")
        await world.sleep(10)

    out = run_once(scenario, ReplayChooser([]), notes=True)
    assert out.violation is None, out.violation
    ticks = [(n.text.rpartition(": ")[2], n.time) for n in out.trace.notes if n.text.endswith("tick")]
    assert ticks == [("waiter tick", 0.0), ("sleeper tick", 0.0), ("waiter tick", 5.0), ("sleeper tick", 7.0),
                     ("waiter tick", 10.0)], ticks
    # the waiter stops at the deletion (its Event is set by kopf's loop), the sleeper when its sleep ends
    exits = {n.text.split("'")[1]: n.time for n in out.trace.notes if "Daemon '" in n.text and "succeeded" in n.text}
    assert exits["waiter"] == 10.5 and exits["sleeper"] == 14.0, exits


def test_a_thread_waiting_on_another_thread_is_a_model_error() -> None:
    import queue as queue_module

    async def main() -> None:
        import asyncio

        box: queue_module.Queue[int] = queue_module.Queue()
        await asyncio.get_running_loop().run_in_executor(None, box.get)

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        Operator(api, "op", main, asyncio=True).start()
        await world.sleep(5)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    said = out.violation.message
    # the thread parks in the world (a hand-off); the run settles with it waiting, and nothing could put an item
    assert "waits for an item of a queue at queue.py:" in said and "no thread of the world releases it" in said, said
    assert "started by run_in_executor at test_kopf.py:" in said and out.violation.actor == "op/get"


CRD_HANDLERS = textwrap.dedent('''
    import logging
    import kopf
    import kubernetes

    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.persistence.finalizer = "example.com/finalizer"
        settings.posting.level = logging.WARNING

    @kopf.index("configmaps")
    def cm_by_owner(name, meta, **_):
        return {meta.get("labels", {}).get("owner"): name}

    @kopf.on.create("example.com", "v1", "databases")
    def create_db(spec, name, namespace, body, patch, logger, **_):
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-config", "labels": {"owner": name}},
              "data": {"size": str(spec.get("size", 1))}}
        kopf.adopt(cm, owner=body)
        kubernetes.config.load_kube_config()
        kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, cm)
        patch.status["phase"] = "Created"

    @kopf.on.update("example.com", "v1", "databases", field="spec.size")
    async def resize(new, name, patch, logger, cm_by_owner: kopf.Index, **_):
        logger.info("resizing %s to %s, its configmaps %s", name, new, sorted(cm_by_owner.get(name, [])))
        patch.status["size"] = new

    @kopf.on.delete("example.com", "v1", "databases")
    async def delete_db(name, logger, **_):
        logger.info("database %s deleted", name)
''')

DATABASES = KubeObject("CustomResourceDefinition", "", "databases.example.com", spec={
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "databases", "singular": "database", "kind": "Database"},
    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]})


def test_kopf_crd_operator_with_adopt_index_status_and_a_finalizer_of_its_own(tmp_path: Path) -> None:
    """A kopf operator as its users write one for a CRD: settings at startup, an index, a sync creation handler
    adopting its child (the official client), a field update handler reading the index, a deletion handler under
    the operator's own finalizer; the child goes with its owner through the garbage collector."""
    handlers = tmp_path / "databases.py"
    handlers.write_text(CRD_HANDLERS)
    box: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        world.horizon = 60
        api = APIServer(world)
        await h.kube.start_cluster(api)
        await api.create(DATABASES)
        kopf_operator(api, "db-op", handlers).start()
        await world.sleep(2)
        await api.create(KubeObject("Database", "default", "db1", spec={"size": 1}))
        await world.sleep(10)
        db = await api.get("Database", "default", "db1")
        db.spec["size"] = 3
        await api.update(db)
        await world.sleep(10)
        box["db"], box["cm"] = api.peek("Database", "default", "db1"), api.peek("ConfigMap", "default", "db1-config")
        await api.delete("Database", "default", "db1")
        await world.sleep(10)
        box["after"] = (api.peek("Database", "default", "db1"), api.peek("ConfigMap", "default", "db1-config"))

    out = run_once(scenario, ReplayChooser([]), notes=True)
    assert out.violation is None, out.violation
    db, cm = box["db"], box["cm"]
    assert db.status["phase"] == "Created" and db.status["size"] == 3
    assert db.finalizers == ["example.com/finalizer"]
    assert [(r.kind, r.name, r.controller) for r in cm.owner_references] == [("Database", "db1", True)]
    assert box["after"] == (None, None)  # deleted past its finalizer, and its child collected
    texts = [n.text for n in out.trace.notes]
    assert any("resizing db1 to 3, its configmaps ['db1-config']" in t for t in texts)
    assert any("database db1 deleted" in t for t in texts)


def test_kopf_handlers_that_cannot_load_are_a_model_error(tmp_path: Path) -> None:
    """A handlers file that is missing or fails to import is the scenario's mistake, never a finding."""
    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('a dependency the handlers lack')\n")
    for handlers, said in ((tmp_path / "missing.py", "does not exist"), (broken, "a dependency the handlers lack")):
        async def scenario(world: h.World, handlers: Path = handlers) -> None:
            api = APIServer(world)
            await h.kube.start_cluster(api)
            kopf_operator(api, "op", handlers).start()
            await world.sleep(5)

        out = run_once(scenario, ReplayChooser([]))
        assert out.violation is not None and out.violation.kind == "misuse", out.violation
        assert "op could not start" in out.violation.message and said in out.violation.message
