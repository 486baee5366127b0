"""No verdict for an operator that never worked, and an operator's misuse said as misuse.

A run whose operator never sent the apiserver a request says nothing of the operator: its client reached another
server or none, it waited on something the world never gives, it returned or exited first. Counted as "clean" it
would pass a ``--variant fixed`` promise; counted as "found" (an oracle that expected its work) it would report a
race in an operator that never ran. Either way it is a model error that names the operator and what it last said.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator, Operator
from harness.sim import run_once
from harness.sim._choice import _Canonical


def _configmaps(api: APIServer) -> int:
    return len(api._store.get("ConfigMap", {}))


async def _idle_operator() -> None:
    import anyio

    await anyio.Event().wait()  # waits for what the world never gives (a real operator: a server it cannot reach)


async def _returning_operator() -> None:
    return None


def _in_process(main: Any, *, expect_configmap: bool) -> Any:
    @h.scenario
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        Operator(api, "app-operator", main).start()
        await api.create(KubeObject("ConfigMap", "default", "input"))
        if expect_configmap:  # an oracle that expects the operator's work: broken, since it never ran
            world.at_end(lambda: _configmaps(api) == 2, "the operator made its ConfigMap")

    return scenario


def _process(code: str, *, expect_configmap: bool) -> Any:
    @h.scenario
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        ExternalOperator(api, "app-operator", [sys.executable, "-c", code], startup=1.0, bound=1.0).start()
        await api.create(KubeObject("ConfigMap", "default", "input"))
        await world.sleep(1.0, "user waits")
        if expect_configmap:
            world.at_end(lambda: _configmaps(api) == 2, "the operator made its ConfigMap")

    return scenario


@pytest.mark.parametrize("expect_configmap", [False, True], ids=["would-be-clean", "would-be-found"])
@pytest.mark.parametrize(
    ("build", "said"),
    [
        (lambda e: _in_process(_idle_operator, expect_configmap=e), "its main never returned"),
        (lambda e: _in_process(_returning_operator, expect_configmap=e), "its main returned"),
        (lambda e: _process("import time; print('connecting to nowhere', flush=True); time.sleep(30)",
                            expect_configmap=e), "connecting to nowhere"),
        (lambda e: _process("print('nothing to do')", expect_configmap=e), "exited with code 0 before its first"),
    ],
    ids=["trio-idle", "trio-returns", "process-sleeps", "process-exits-0"],
)
def test_operator_that_never_reaches_the_api_is_a_model_error(build: Any, said: str, expect_configmap: bool) -> None:
    scenario = build(expect_configmap)
    result = h.explore(scenario, strategy="random", budget=2, seed=0)
    assert result.verdict == "model-error", result.outcome
    message = result.outcome
    assert "app-operator made no request to the apiserver" in message or "app-operator (" in message, message
    assert "made no request to the apiserver in this run" in message and said in message, message


def test_an_operator_that_reaches_the_api_keeps_its_verdict() -> None:
    """The rule's other side: the same oracle, an operator that does its work, is clean; one that reads but never
    writes is found (it reached the API: the oracle's failure is about it)."""

    async def maker() -> None:
        from harness.kube._http._environment import ROUTE

        transport = ROUTE.get()
        assert transport is not None
        body = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made", "namespace": "default"}}'
        await transport.handler.handle("POST", "/api/v1/namespaces/default/configmaps", {}, body, transport.client)

    async def reader() -> None:
        from harness.kube._http._environment import ROUTE

        transport = ROUTE.get()
        assert transport is not None
        await transport.handler.handle("GET", "/api/v1/namespaces/default/configmaps", {}, b"", transport.client)

    assert h.explore(_in_process(maker, expect_configmap=True), strategy="random", budget=2, seed=0).verdict == \
        "none-found"
    assert h.explore(_in_process(reader, expect_configmap=True), strategy="random", budget=2, seed=0).verdict == \
        "found"


def _asyncio_run_operator() -> Any:
    async def main() -> None:
        import asyncio

        async def reconcile() -> None:
            await asyncio.sleep(0.01)

        asyncio.run(reconcile())  # a loop of its own inside a Trio operator

    return main


def _run_until_complete_operator() -> Any:
    async def main() -> None:
        import asyncio

        async def reconcile() -> None:
            await asyncio.sleep(0.01)

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(reconcile())
        finally:
            loop.close()

    return main


def _sync_main() -> None:
    return None


@pytest.mark.filterwarnings("error")  # a refused loop leaves no coroutine unawaited, no task pending
@pytest.mark.parametrize(
    ("main", "said"),
    [
        (_asyncio_run_operator(), "started an asyncio event loop at test_operator_verdicts.py"),
        (_run_until_complete_operator(), "started an asyncio event loop at test_operator_verdicts.py"),
        (_sync_main, "main must be the operator's async entry point"),
    ],
    ids=["asyncio.run", "run_until_complete", "sync-main"],
)
def test_operator_usage_errors_are_usage_errors(main: Any, said: str) -> None:
    @h.scenario
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        Operator(api, "app-operator", main).start()
        await api.create(KubeObject("ConfigMap", "default", "input"))

    result = h.explore(scenario, strategy="random", budget=2, seed=0)
    assert result.verdict == "model-error", result.outcome
    assert said in result.outcome, result.outcome
    if "loop" in said:  # at the user's own line, never inside the harness or asyncio
        assert "asyncio.run(reconcile())" in result.outcome or "loop.run_until_complete(reconcile())" in \
            result.outcome, result.outcome


def test_kopf_without_handlers_is_a_model_error_at_once(tmp_path: Path) -> None:
    pytest.importorskip("kopf")
    from harness.operators import kopf_operator

    handlers = tmp_path / "handlers.py"
    handlers.write_text("import kopf\n\n\n@kopf.on.startup()\ndef configure(**_):\n    pass\n")

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        kopf_operator(api, "kopf-op", handlers).start()

    out = run_once(scenario, _Canonical())
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    assert "register no resource handler" in out.violation.message, out.violation.message
    assert out.steps < 50, out.steps  # at once: not after a canonical run of kopf watching nothing


_MODULE_OPERATOR = '''
import os

from lightkube import AsyncClient
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap

FIXED = os.environ.get("FIXED", "unset")  # configuration read at import, as operators do
STARTS: list[int] = []  # module state: a new process starts with none


async def main(tag: str) -> None:
    STARTS.append(1)
    client = AsyncClient()
    await client.create(ConfigMap(metadata=ObjectMeta(generateName=f"{tag}-", namespace="default"),
                                  data={"fixed": FIXED, "starts": str(len(STARTS))}))
    import anyio

    await anyio.Event().wait()
'''


def test_operator_module_imported_afresh_per_incarnation(tmp_path: Path) -> None:
    """``Operator(api, name, "operator.py", ...)``: the module is imported for each incarnation under the operator's
    ``env``, so its import-time configuration is the operator's and a restart forgets its globals; the same
    function handed over as an object keeps them (the module imported once by the scenario)."""
    pytest.importorskip("lightkube")
    source = tmp_path / "cm_operator.py"
    source.write_text(_MODULE_OPERATOR)

    def scenario_for(main: Any) -> Any:
        async def scenario(world: h.World) -> None:
            api = APIServer(world)
            op = Operator(api, "cm-operator", main, "run", env={"FIXED": "yes"}, restart_window=0.0).start()
            await world.sleep(1.0, "the operator starts")
            op.process.crash()
            await world.sleep(5.0, "it restarts")
            world.at_end(lambda: op.restarts == 1, "one restart")
            world.at_end(lambda: _seen.extend(o.extra["data"] for o in api._store.get("ConfigMap", {}).values()) or True,
                         "(collect)")

        return scenario

    _seen: list[Any] = []
    out = run_once(scenario_for(f"{source}:main"), _Canonical())
    assert out.violation is None, out.violation
    assert sorted((d["fixed"], d["starts"]) for d in _seen) == [("yes", "1"), ("yes", "1")], _seen
    _seen.clear()
    again = run_once(scenario_for(str(source)), _Canonical())  # entry defaults to main; a second run: fresh again
    assert again.violation is None and sorted(d["starts"] for d in _seen) == ["1", "1"], _seen

    import importlib.util

    spec = importlib.util.spec_from_file_location("cm_operator_once", source)
    assert spec is not None and spec.loader is not None
    once = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(once)  # imported by the scenario's process, before the operator's env exists
    _seen.clear()
    kept = run_once(scenario_for(once.main), _Canonical())
    assert kept.violation is None, kept.violation
    assert sorted((d["fixed"], d["starts"]) for d in _seen) == [("unset", "1"), ("unset", "2")], _seen


def test_operator_module_that_lacks_its_entry_is_named(tmp_path: Path) -> None:
    source = tmp_path / "no_main.py"
    source.write_text("def main():\n    pass\n")

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        Operator(api, "op", f"{source}:main").start()
        await world.sleep(1.0, "wait")

    out = run_once(scenario, _Canonical())
    assert out.violation is not None and out.violation.kind == "misuse", out.violation
    assert "main in" in out.violation.message and "is not async" in out.violation.message, out.violation.message


def test_operator_crash_is_a_finding_at_the_users_frame() -> None:
    """An exception that ends an operator as written is a finding, "the operator crashed", named at the innermost
    frame of the operator's own code (its watch loop), never a model error and never "fix the model", even when
    both variants crash alike (an operator's crash is about the operator, whatever the race's fix)."""
    pytest.importorskip("lightkube")
    from tests.kube.crash_ops import watch_operator

    @h.scenario
    async def scenario(world: h.World, *, fixed: bool = False) -> None:
        api = APIServer(world)
        Operator(api, "cm-operator", watch_operator.main, fixed).start()
        await world.sleep(1.0, "the operator starts")
        await api.create(KubeObject("ConfigMap", "default", "poison"))
        await world.sleep(5.0, "the user waits")

    for fixed in (False, True):
        result = h.explore(scenario, strategy="random", budget=3, seed=0, fixed=fixed)
        assert result.verdict == "found", result.outcome
        cx = result.counterexample
        assert cx is not None and cx.violation.kind == "crashed", cx.violation
        message = cx.violation.message
        assert message.startswith("the operator crashed: ValueError at watch_operator.py:"), message
        assert "in watch_configmaps (raise ValueError(" in message and "cannot parse poison" in message, message
        assert "_watch.py" not in message and "fix the model" not in message.lower(), message
        assert "model error" not in result.outcome, result.outcome
