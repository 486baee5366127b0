"""Issue 48, item 3: the official synchronous ``kubernetes`` client in the executor threads of an asyncio operator (as
kopf runs sync handlers) reaches the apiserver in process, each thread an actor in lockstep with the world.

The client's behaviour relied on is kubernetes-client/python's own: ``ApiClient`` answers a non-2xx status with
``ApiException`` (``kubernetes/client/api_client.py``, ``ApiException.from_response``), and ``watch.Watch.stream``
reads ``resp.stream(amt=None, decode_content=False)`` line by line, stops after the server ends the stream when
``timeout_seconds`` is given, and closes the response when its loop ends (``kubernetes/watch/watch.py``). The
apiserver's: a watch without ``resourceVersion`` starts with the current objects as ADDED events, and
``timeoutSeconds`` ends it (``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

import harness as h
from harness.explore._runner import model_error_of
from harness.kube import APIServer, KubeObject
from harness.operators import Operator, kopf_operator
from harness.sim import RandomChooser, ReplayChooser, run_once
from harness.sim._choosers import FaultPlacement

ROOT = Path(__file__).resolve().parents[2]

Note = Callable[..., None]


def _noter(world: h.World, seen: dict[str, Any]) -> Note:
    """What a thread calls to record a value with the virtual instant it saw it at."""

    def note(what: str, value: Any = None) -> None:
        seen[what] = (world.now, value)

    return note


# --------------------------------------------------------------------------- the handlers, as kopf users write them
def crud(note: Note) -> None:
    """Read, create, patch and delete ConfigMaps with the official client, sleeping between (a sync handler)."""
    config.load_kube_config()
    v1 = client.CoreV1Api()
    a = v1.read_namespaced_config_map("a", "default")
    note("read", dict(a.data))
    time.sleep(2)
    v1.create_namespaced_config_map("default", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="b"), data={"from": a.metadata.resource_version}))
    note("created")
    time.sleep(1.5)
    patched = v1.patch_namespaced_config_map("b", "default", {"data": {"patched": "yes"}})
    note("patched", patched.metadata.resource_version)
    time.sleep(0.5)
    v1.delete_namespaced_config_map("a", "default")
    note("deleted")
    try:
        v1.read_namespaced_config_map("a", "default")
    except ApiException as err:
        note("read after delete", (err.status, err.reason))


def watcher(note: Note, timeout: int, stop_at: str | None = None) -> None:
    """Watch ConfigMaps for ``timeout`` seconds; ``stop_at``: stop the watch (``Watch.stop``) after that object's
    DELETED event; a broken connection is noted."""
    config.load_kube_config()
    v1 = client.CoreV1Api()
    w = watch.Watch()
    events = []
    try:
        for event in w.stream(v1.list_namespaced_config_map, "default", timeout_seconds=timeout):
            events.append((event["type"], event["object"].metadata.name))
            note(f"{event['type']} {event['object'].metadata.name}")
            if event["type"] == "DELETED" and event["object"].metadata.name == stop_at:
                w.stop()
    except urllib3.exceptions.ProtocolError as err:
        note("broken", str(err))
    note("events", events)
    note("ended")


async def in_threads(*calls: tuple[Callable[..., None], tuple[Any, ...]]) -> None:
    """An asyncio operator's main: each call in the loop's executor (as kopf runs a sync handler), all at once."""
    loop = asyncio.get_running_loop()
    await asyncio.gather(*(loop.run_in_executor(None, fn, *args) for fn, args in calls))


async def crud_scenario(world: h.World) -> APIServer:
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "a", extra={"data": {"x": "1"}}))
    note = _noter(world, world.state.setdefault("seen", {}))
    Operator(api, "op", in_threads, (crud, (note,)), asyncio=True).start()
    await world.sleep(10)
    return api


def test_official_client_reads_creates_patches_and_deletes_in_virtual_time() -> None:
    seen: dict[str, Any] = {}
    objects: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        world.state["seen"] = seen
        api = await crud_scenario(world)
        objects.update({o.name: o.extra.get("data") for o in api.snapshot("ConfigMap")[0]})

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    # every call answered by the world's apiserver, every time.sleep a virtual sleep of exactly its length
    assert seen == {"read": (0.0, {"x": "1"}), "created": (2.0, None), "patched": (3.5, "7"), "deleted": (4.0, None),
                    "read after delete": (4.0, (404, "Not Found"))}
    assert objects == {"b": {"from": "5", "patched": "yes"}}
    # each request is a step of the thread's actor, named after the function kopf would call
    steps = [(r.actor, r.label) for r in out.trace
             if r.actor != "main" and r.label.split(" ")[0] in ("get", "create", "patch", "delete")]
    assert [label for _, label in steps] == [
        "get ConfigMap default/a", "create ConfigMap default/b", "patch ConfigMap default/b",
        "delete ConfigMap default/a", "get ConfigMap default/a"]
    assert {actor for actor, _ in steps} == {"op/crud"}


def test_official_client_thread_of_a_crashed_operator_stops_where_it_waits() -> None:
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "a", extra={"data": {"x": "1"}}))
        Operator(api, "op", in_threads, (crud, (_noter(world, seen),)), crash_faults=True, restart_window=0.0,
                 asyncio=True).start()
        await world.sleep(10)

    # the operator crashes at its second request (create b, at 2 s, after the first thread's sleep)
    out = run_once(scenario, RandomChooser(0, faults=FaultPlacement(frozenset({"crash"}), [2]), lag=0.0))
    assert out.violation is None, out.violation
    crash = next(r for r in out.trace if r.kind == "fault")
    assert crash.label == "op crashes before create ConfigMap default/b" and crash.time == 2.0
    # the crashed incarnation's thread never runs again (its create is not sent); the restart runs crud afresh
    assert not [r for r in out.trace if r.step > crash.step and r.actor == "op/crud"]
    assert [(r.actor, r.time) for r in out.trace if r.label == "create ConfigMap default/b"] == [
        ("op/crud", 2.0), ("op#2/crud", 4.0)]
    assert seen["created"] == (4.0, None) and seen["read after delete"][1] == (404, "Not Found")


def test_plain_urllib3_requests_reach_the_apiserver() -> None:
    """A client on urllib3 alone (``preload_content`` left True): the kubeconfig's server is the world's apiserver."""
    seen: dict[str, Any] = {}

    def plain(note: Note) -> None:
        http = urllib3.PoolManager(cert_reqs="CERT_NONE")
        base = "https://kube-apiserver.harness.invalid/api/v1/namespaces/default/configmaps"
        got = http.request("GET", f"{base}/a")
        note("get", (got.status, got.headers["Content-Type"], got.json()["data"]))
        missing = http.request("GET", f"{base}/nope")
        note("missing", (missing.status, missing.reason, missing.json()["reason"]))
        made = http.request("POST", base, body=json.dumps({"metadata": {"name": "z"}}),
                            headers={"Content-Type": "application/json"})
        note("created", made.status)

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "a", extra={"data": {"x": "1"}}))
        Operator(api, "op", in_threads, (plain, (_noter(world, seen),)), asyncio=True).start()
        await world.sleep(1)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    assert seen == {"get": (0.0, (200, "application/json", {"x": "1"})),
                    "missing": (0.0, (404, "Not Found", "NotFound")), "created": (0.0, 201)}


KOPF_HANDLERS = textwrap.dedent('''
    import time
    import kopf
    import kubernetes

    @kopf.on.create("configmaps", labels={"app": "demo"})
    def created(name, namespace, logger, **_):
        kubernetes.config.load_kube_config()
        v1 = kubernetes.client.CoreV1Api()
        time.sleep(3)
        v1.create_namespaced_secret(namespace, {"metadata": {"name": f"{name}-child"}, "stringData": {"k": "v"}})
        logger.info("child of %s made", name)
''')


def test_kopf_sync_handler_with_the_official_client(tmp_path: Path) -> None:
    """A kopf ``def`` handler as kopf users write them: kopf runs it in its executor, a lockstep thread."""
    handlers = tmp_path / "handlers.py"
    handlers.write_text(KOPF_HANDLERS)
    made: dict[str, float] = {}

    async def scenario(world: h.World) -> None:
        world.horizon = 60
        api = APIServer(world)
        kopf_operator(api, "kopf-op", str(handlers)).start()
        await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "demo"}))
        await world.sleep(10)
        made.update({s.name: s.creation_timestamp for s in api.snapshot("Secret")[0]})

    out = run_once(scenario, ReplayChooser([]), notes=True)
    assert out.violation is None, out.violation
    assert made == {"a-child": 3.0}  # the handler's time.sleep(3) on the virtual clock
    creates = [r for r in out.trace if r.label == "create Secret default/a-child"]
    assert len(creates) == 1 and creates[0].actor.startswith("kopf-op/") and creates[0].time == 3.0
    assert any("child of a made" in n.text for n in out.trace.notes)
    assert any("Handler 'created' succeeded" in n.text for n in out.trace.notes)


async def watch_scenario(world: h.World, *, stop_at: str | None = None, drop: bool = False) -> None:
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "a"))
    note = _noter(world, world.state.setdefault("seen", {}))
    Operator(api, "op", in_threads, (watcher, (note, 10, stop_at)), asyncio=True, watch_drops=drop).start()
    await world.sleep(3)
    await api.create(KubeObject("ConfigMap", "default", "c"))
    await world.sleep(1)
    await api.patch("ConfigMap", "default", "c", {"metadata": {"labels": {"y": "1"}}})
    await world.sleep(2)
    await api.delete("ConfigMap", "default", "c")
    await world.sleep(1)
    await api.create(KubeObject("ConfigMap", "default", "d"))
    await world.sleep(20)


def _watch_run(**params: Any) -> tuple[h.sim.RunOutcome, dict[str, Any]]:  # type: ignore[name-defined]
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        world.state["seen"] = seen
        await watch_scenario(world, **params)

    return run_once(scenario, ReplayChooser([])), seen


def test_official_client_watch_sees_each_event_as_it_comes_until_the_server_ends_it() -> None:
    out, seen = _watch_run()
    assert out.violation is None, out.violation
    # each event read when it is delivered (the virtual instant of the change), the initial state first
    assert seen["events"][1] == [("ADDED", "a"), ("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "c"), ("ADDED", "d")]
    assert [seen[k][0] for k in ("ADDED a", "ADDED c", "MODIFIED c", "DELETED c", "ADDED d")] == [0.0, 3.0, 4.0, 6.0,
                                                                                                  7.0]
    # timeout_seconds=10: the server ends the stream at 10 s, the body ends, and Watch.stream returns
    assert seen["ended"][0] == 10.0 and "broken" not in seen
    assert any(r.label.endswith("timeoutSeconds elapsed: the server ends the watch") and r.time == 10.0
               for r in out.trace)


def test_official_client_watch_stop_closes_the_stream() -> None:
    out, seen = _watch_run(stop_at="c")
    assert out.violation is None, out.violation
    # Watch.stop() after DELETED c: the loop ends, the response is closed, and the server's stream with it
    assert seen["events"][1] == [("ADDED", "a"), ("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "c")]
    assert seen["ended"][0] == 6.0
    labels = [r.label for r in out.trace]
    assert not any("deliver ADDED default/d" in lb for lb in labels)  # d is created after the close: never sent
    assert not any("timeoutSeconds elapsed" in lb for lb in labels)  # its timer went with it


def test_official_client_watch_broken_connection_raises_protocol_error() -> None:
    seen: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        world.state["seen"] = seen
        await watch_scenario(world, drop=True)

    # the watch breaks before its third event (MODIFIED c) is sent
    out = run_once(scenario, RandomChooser(0, faults=FaultPlacement(frozenset({"watch_drop"}), [3]), lag=0.0))
    assert out.violation is None, out.violation
    assert seen["events"][1] == [("ADDED", "a"), ("ADDED", "c")]
    at, said = seen["broken"]
    assert at == 4.0 and "Connection broken" in said  # what urllib3 raises for a connection reset mid-body


def test_official_client_request_timeout_is_a_read_timeout_in_virtual_time() -> None:
    seen: dict[str, Any] = {}

    def impatient(note: Note) -> None:
        config.load_kube_config()
        v1 = client.CoreV1Api()
        try:
            for event in watch.Watch().stream(v1.list_namespaced_config_map, "default", _request_timeout=2):
                note(f"{event['type']} {event['object'].metadata.name}")
        except urllib3.exceptions.ReadTimeoutError as err:
            note("timed out", str(err))

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", "default", "a"))
        Operator(api, "op", in_threads, (impatient, (_noter(world, seen),)), asyncio=True).start()
        await world.sleep(1)
        await api.create(KubeObject("ConfigMap", "default", "c"))
        await world.sleep(10)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is None, out.violation
    # urllib3 sets the read timeout on the socket: each read may wait 2 s for the next bytes, here of the virtual
    # clock (the delivery of c at 1 s restarted the wait); then ReadTimeoutError, as urllib3 raises it
    assert seen == {"ADDED a": (0.0, None), "ADDED c": (1.0, None), "timed out": (3.0, "None: Read timed out.")}


# --------------------------------------------------------------------------- determinism and interleavings
def writer(note: Note, name: str) -> None:
    """Create a ConfigMap of its own, then append its name to the shared one (a read-modify-write)."""
    config.load_kube_config()
    v1 = client.CoreV1Api()
    v1.create_namespaced_config_map("default", {"metadata": {"name": name}})
    shared = v1.read_namespaced_config_map("shared", "default")
    time.sleep(0.5)
    order = (shared.data or {}).get("order", "")
    try:
        v1.replace_namespaced_config_map("shared", "default", {
            "metadata": {"name": "shared", "resourceVersion": shared.metadata.resource_version},
            "data": {"order": order + name}})
    except ApiException as err:  # the other wrote since the read: 409 Conflict (optimistic concurrency)
        note(name, err.status)
    else:
        note(name, "written")


async def parallel_scenario(world: h.World) -> None:
    """Two sync calls in parallel (two executor calls gathered), and a watcher beside them."""
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "shared"))
    note = _noter(world, world.state.setdefault("seen", {}))
    Operator(api, "op", in_threads, (writer, (note, "x")), (writer, (note, "y")), (watcher, (note, 3)),
             asyncio=True).start()
    await world.sleep(5)


def _digest(seed: int) -> str:
    return str(run_once(parallel_scenario, RandomChooser(seed)).trace.digest())


def test_two_sync_calls_in_parallel_are_interleaved_by_the_seed() -> None:
    orders = set()
    outcomes = set()
    for seed in range(12):
        seen: dict[str, Any] = {}

        async def scenario(world: h.World, seen: dict[str, Any] = seen) -> None:
            world.state["seen"] = seen
            await parallel_scenario(world)

        out = run_once(scenario, RandomChooser(seed))
        assert out.violation is None, out.violation
        requests = [r.label for r in out.trace if r.actor != "main" and r.label.startswith(("create ", "get ", "update "))]
        orders.add(tuple(requests))
        outcomes.add((seen["x"][1], seen["y"][1]))
    # the two threads' requests run in more than one order: each thread is an actor, its requests the world's choices
    assert len(orders) > 1
    assert {order[0] for order in orders} == {"create ConfigMap default/x", "create ConfigMap default/y"}
    # and the order decides the outcome: both reads before either write is the lost update the apiserver refuses
    assert {("written", 409), (409, "written")} & outcomes and {("written", "written")} & outcomes


_DIGESTS = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {root!r})
    from tests.kube.test_sync_client import _digest
    print(json.dumps([_digest(s) for s in range(4)]))
""")


def test_sync_handlers_with_the_official_client_are_deterministic() -> None:
    code = _DIGESTS.format(root=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONHASHSEED=seed)) for seed in ("1", "2")]  # (side by side)
    runs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        runs.append(out)
    assert runs[0] == runs[1]
    here = [_digest(s) for s in range(4)]
    assert json.loads(runs[0]) == here  # same seed, same trace, byte for byte, in another process and hash seed
    assert len(set(here)) > 1  # and the seeds do choose different orders


# --------------------------------------------------------------------------- misuse
def _listing() -> None:
    config.load_kube_config()
    client.CoreV1Api().list_namespaced_config_map("default")


async def asyncio_main() -> None:
    _listing()


async def trio_main() -> None:
    _listing()


@pytest.mark.parametrize("main, on_asyncio", [(asyncio_main, True), (trio_main, False)], ids=["asyncio", "trio"])
def test_sync_client_outside_a_thread_is_a_model_error(main: Callable[[], Any], on_asyncio: bool) -> None:
    async def scenario(world: h.World) -> None:
        Operator(APIServer(world), "op", main, asyncio=on_asyncio).start()
        await world.sleep(1)

    out = run_once(scenario, ReplayChooser([]))  # (refused at once: it never waits for an answer)
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    said = model_error_of(out.violation)
    assert said is not None
    assert "block the whole world" in said and "run_in_executor" in said
    assert "test_sync_client.py:" in said and "client.CoreV1Api().list_namespaced_config_map" in said


def test_sync_client_request_to_another_host_is_a_model_error() -> None:
    def elsewhere() -> None:
        urllib3.PoolManager().request("GET", "https://example.com/")

    async def scenario(world: h.World) -> None:
        Operator(APIServer(world), "op", in_threads, (elsewhere, ()), asyncio=True).start()
        await world.sleep(1)

    out = run_once(scenario, ReplayChooser([]))
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    said = model_error_of(out.violation)
    assert said is not None and "https://example.com/" in said and "only the apiserver exists" in said


def test_urllib3_outside_an_operator_takes_its_own_path() -> None:
    from harness.kube._http._environment import install

    install()
    # no operator's context: urllib3's own urlopen, which dials (and here finds nothing listening)
    with pytest.raises(urllib3.exceptions.NewConnectionError):
        urllib3.PoolManager(retries=False).request("GET", "http://127.0.0.1:9/")
