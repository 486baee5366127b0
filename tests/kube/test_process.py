"""Crash and restart: a controller loses its memory at a yield point and relists."""

from __future__ import annotations

from typing import Any

from kube_support import FaultChooser, clean, run_with

from harness.kube import (
    APIServer,
    Controller,
    ControllerProcess,
    Informer,
    KubeObject,
    Result,
)
from harness.sim import World


def crash_scenario(box: dict[str, Any]) -> Any:
    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Queue", "ns", "q"))

        def build(proc: ControllerProcess) -> dict[str, Any]:
            informer = Informer(world, api, "Queue", name=f"ctrl-{proc.incarnation}/informer/Queue", process=proc)

            async def reconcile(key: str) -> Result | None:
                ns, name = key.split("/")
                obj = await api.get("Queue", ns, name)
                obj.status["reconciled_by"] = proc.incarnation
                await api.update_status(obj)
                return None

            ctrl: Controller[str] = Controller(world, "ctrl", reconcile, process=proc)
            informer.add_event_handler(on_add=lambda o: ctrl.enqueue(o.key))
            informer.start()
            ctrl.start()
            return {"informer": informer, "controller": ctrl}

        proc = ControllerProcess(world, "ctrl", build, crash_faults=True, restart_after=2.0)
        first = proc.start()
        box["proc"] = proc
        box["first"] = first
        await world.sleep(10.0)
        box["final"] = api.peek("Queue", "ns", "q")

    return scenario


def test_crash_points_default_to_no_crash() -> None:
    box: dict[str, Any] = {}
    probe = FaultChooser()
    clean(run_with(crash_scenario(box), probe))
    assert box["proc"].crashes == 0 and box["final"].status == {"reconciled_by": 1}
    assert probe.points[:1] == ["fault: ctrl crashes before get Queue ns/q"]


def test_crash_loses_memory_and_restart_relists() -> None:
    box: dict[str, Any] = {}
    chooser = FaultChooser("fault: ctrl crashes before update_status")
    out = clean(run_with(crash_scenario(box), chooser))
    proc: ControllerProcess = box["proc"]
    assert chooser.taken == ["fault: ctrl crashes before update_status Queue ns/q"]
    assert (proc.crashes, proc.restarts, proc.incarnation) == (1, 1, 2)
    old = box["first"]
    assert old["controller"].queue.shutting_down  # the old queue is gone with its contents
    new = proc.current
    assert new["informer"] is not old["informer"] and new["informer"].relists == 1
    # the crashed write never happened; the restarted controller redid the work from a fresh list
    assert box["final"].status == {"reconciled_by": 2}
    restart = [r for r in out.trace if r.label == "restart ctrl"]
    assert len(restart) == 1 and restart[0].time == 2.0
