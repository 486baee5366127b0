"""The quiescence wait for an operator process ends when its threads wait for the world, not after ``quiet``.

The operator here is a few lines on the official ``kubernetes`` client: it
watches ConfigMaps and, for each new one, sleeps ``SLEEP`` seconds on a timer
of its own before it creates a Secret. Everything else it does is blocked on
the watch's socket. With a ``quiet`` of a second, the rule of silence alone
pays that second after every step that touched the process; the threads'
waits (``harness.operators._waits``) end most waits at once, yet the wait after
the ConfigMap's delivery still lasts until the Secret's POST: the sleeping
thread's timer is within ``quiet``, so the process is not settled.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator
from harness.sim import PlanChooser, run_once

pytest.importorskip("kubernetes")

#: the operator's own timer between an event and its reaction, well within ``QUIET``
SLEEP = 0.3
QUIET = 1.0

OPERATOR = f'''
import time
from kubernetes import client, config, watch

config.load_kube_config()
core = client.CoreV1Api()
for event in watch.Watch().stream(core.list_namespaced_config_map, "default"):
    cm = event["object"]
    if event["type"] == "ADDED" and cm.metadata.name.startswith("app-"):
        time.sleep({SLEEP})
        core.create_namespaced_secret("default", client.V1Secret(metadata=client.V1ObjectMeta(
            name=cm.metadata.name + "-secret")))
'''


def _scenario(script: Path, settle: bool, seen: dict[str, Any]) -> Any:
    @h.scenario
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        op = ExternalOperator(api, "timer-operator", [sys.executable, str(script)], quiet=QUIET, settle=settle,
                              tls=False).start()
        seen["op"] = op

        async def user() -> None:
            for name in ("app-a", "app-b"):
                await world.sleep(5.0)
                await api.create(KubeObject("ConfigMap", "default", name))
            await world.sleep(5.0)

        world.spawn("user", user)

    return scenario


def _order(out: Any) -> list[str]:
    return [f"{r.actor}: {r.label}" for r in out.trace if "POST" in r.label or r.actor == "user"]


def test_process_run_waits_only_while_it_works(tmp_path: Path) -> None:
    script = tmp_path / "timer_operator.py"
    script.write_text(OPERATOR)
    settled: dict[str, Any] = {}
    out = run_once(_scenario(script, True, settled), PlanChooser(()))
    assert out.violation is None, out.violation
    op = settled["op"]
    # the timer within quiet held the wait: each Secret's POST came before the user's next ConfigMap
    order = _order(out)
    posts = [i for i, line in enumerate(order) if "POST /api/v1/namespaces/default/secrets" in line]
    creates = [i for i, line in enumerate(order) if line.startswith("user: create ConfigMap")]
    assert len(posts) == 2 and len(creates) == 2, order
    assert creates[0] < posts[0] < creates[1] < posts[1], order
    # and the rest of the waits ended when the process's threads waited for the world, not after QUIET
    assert op.waits >= 6 and op.settled_waits >= op.waits - 3, (op.waits, op.settled_waits)
    # the rule of silence alone gives the same API order, each wait sitting out QUIET
    silent: dict[str, Any] = {}
    again = run_once(_scenario(script, False, silent), PlanChooser(()))
    assert _order(again) == order and silent["op"].settled_waits == 0
    assert again.trace.digest() == out.trace.digest()
