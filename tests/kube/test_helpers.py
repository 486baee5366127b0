"""Issue 10, item 5: the helpers users wrote by hand, now in the public API."""

from __future__ import annotations

from typing import Any

import harness as h
from harness.kube import (
    APIServer,
    Informer,
    KubeObject,
    ResourceVersionExpectation,
    ScaleExpectations,
    apiservers_of,
    informers_of,
)
from harness.sim import PlanChooser


def test_expectation_reads_have_no_side_effects() -> None:
    box: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        scale = ScaleExpectations(world)
        scale.expect_scale("ns/rs", "create", "p1")
        await world.sleep(5)
        seen = scale.get_expectations("ns/rs")
        await world.sleep(5)
        # the unsatisfied clock starts at the first satisfied_expectations call, not at a read
        ok, waited, pending = scale.satisfied_expectations("ns/rs")
        rv = ResourceVersionExpectation(world)
        obj = KubeObject("Pod", "ns", "p", uid="u1", resource_version=7)
        rv.expect(obj)
        box.update(seen=seen, ok=ok, waited=waited, pending=pending, rv=rv.get_expectations("u1"), n=len(rv))

    h.run_once(scenario, PlanChooser())
    assert box["seen"] == {"create": ["p1"]} and box["pending"] == {"create": ["p1"]}
    assert box["ok"] is False and box["waited"] == 0.0
    assert box["rv"] == 7 and box["n"] == 1  # read, not consumed


def test_a_runs_apiservers_and_informers_after_the_run() -> None:
    worlds: list[h.World] = []

    async def scenario(world: h.World) -> None:
        worlds.append(world)
        api = APIServer(world, namespaces=("ns",))
        pods = Informer(world, api, "Pod")
        pods.start()
        await pods.wait_for_cache_sync()
        await api.create(KubeObject("Pod", "ns", "p"))

    h.run_once(scenario, PlanChooser())
    (api,) = apiservers_of(worlds[0])
    (inf,) = informers_of(worlds[0])
    assert api.peek("Pod", "ns", "p") is not None
    assert inf.lister.try_get("ns", "p") is not None


def test_report_writers_are_public() -> None:
    from harness.report import write_counterexample_html, write_index

    assert h.write_counterexample_html is write_counterexample_html and h.write_index is write_index
