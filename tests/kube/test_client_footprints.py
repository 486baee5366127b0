"""A real client's requests and watch deliveries are footprints, as a model's API calls and informer deliveries are.

The story of a counterexample and the exhaustive referee's reduction read
one record (``World.touch``): a GET through the transport reads the object,
a LIST the kind's set of names and each object it returned, a write writes
the object; a watch delivery writes into the client's memory (the bytes the
server put on the connection) and the client's read of the stream reads
them, so the step that consumes an event reads from the delivery that sent it.
"""

from __future__ import annotations

import json
from contextlib import aclosing
from typing import Any

import httpx
import pytest

import harness as h
from harness.kube import APIServer, KubeObject
from harness.sim import PlanChooser, Trace, run_once

NS = "default"
URL = "/api/v1/namespaces/default/configmaps"


def _scenario(seen: list[str]) -> Any:
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "a", labels={"app": "x"}))

        async def op() -> None:
            async with httpx.AsyncClient(transport=api.transport(client="op"), base_url="http://kube") as c:
                (await c.get(f"{URL}/a")).raise_for_status()
                (await c.get(URL, params={"labelSelector": "app=x"})).raise_for_status()
                (await c.patch(f"{URL}/a", json={"data": {"k": "v"}},
                               headers={"Content-Type": "application/merge-patch+json"})).raise_for_status()
                async with c.stream("GET", URL, params={"watch": "true"}) as resp, \
                        aclosing(resp.aiter_lines()) as lines:
                    async for line in lines:
                        ev = json.loads(line)
                        seen.append(f"{ev['type']} {ev['object']['metadata']['name']}")
                        if len(seen) == 2:
                            return

        async def writer() -> None:
            await api.create(KubeObject("ConfigMap", NS, "b"))

        world.spawn("op", op)
        world.spawn("writer", writer)

    return scenario


def _steps(trace: Trace) -> list[tuple[str, list[tuple[str, bool, str]]]]:
    """Each step's label and its footprint (resource, write, what it saw), in the run's order."""
    labels = {r.step: f"{r.actor}: {r.label}" for r in trace if isinstance(r.label, str)}
    return [(labels.get(step, str(step)), [(a.resource, a.write, a.said) for a in acc])
            for step, acc in sorted(trace.footprints.items())]


def test_real_client_requests_are_footprints() -> None:
    seen: list[str] = []
    told = run_once(_scenario(seen), PlanChooser(), notes=True)
    assert told.violation is None and seen == ["ADDED a", "ADDED b"]
    steps = _steps(told.trace)
    one = {label: fp for label, fp in steps}
    a = "ConfigMap default/a"
    # a GET reads the object at the revision it answered
    assert (a, False, "GET ConfigMap default/a: rv=5") in one["op: get ConfigMap default/a"]
    # a LIST reads each object it returned and the kind's set of names (a create or delete is what it could miss)
    listed = one["op: list ConfigMap default/*"]
    assert {(r, w) for r, w, _ in listed} >= {("ConfigMap *", False), (a, False), ("ConfigMap default/b", False)}
    assert not any(w for _, w, _ in listed)
    # a write writes the object and the kind
    assert {(a, True), ("ConfigMap *", True)} <= {(r, w) for r, w, _ in one["op: patch ConfigMap default/a"]}
    # a watch delivery reads the commit it carries and writes into the client's memory and stream
    stream = "op/watch/ConfigMap stream"
    deliveries = [(label, fp) for label, fp in steps if label.startswith("op/watch/ConfigMap: ")]
    assert [label.split(" deliver ")[1] for label, _ in deliveries] == ["ADDED default/a rv=7",
                                                                        "ADDED default/b rv=6"]
    for (_label, fp), name, rv in zip(deliveries, "ab", (7, 6), strict=True):
        event = f"ADDED ConfigMap default/{name} rv={rv}"
        assert (f"ConfigMap default/{name}", False, f"ADDED rv={rv}") in fp
        assert (stream, True, f"op/watch/ConfigMap stream: {event}") in fp
        assert ("memory", True, f"op/watch/ConfigMap delivered {event}") in fp
    # the client's read of the stream, in the step that consumes the event, reads what that delivery wrote
    reads = [(i, fp) for i, (label, fp) in enumerate(steps) if label == "op: op reads watch ConfigMap"
             and any(r == stream for r, _, _ in fp)]
    assert [next(s for r, w, s in fp if r == stream) for _i, fp in reads] == [
        "op/watch/ConfigMap stream: ADDED ConfigMap default/a rv=7",
        "op/watch/ConfigMap stream: ADDED ConfigMap default/b rv=6"]
    for (i, _fp), (label, _d) in zip(reads, deliveries, strict=True):
        assert steps.index((label, _d)) < i  # each read comes after the delivery it reads from
    # one record for both readers: a reducing referee's chooser gets the same resources, and asking changes nothing
    chooser = PlanChooser(footprints=True)
    again: list[str] = []
    run_once(_scenario(again), chooser)
    ran = {i.label: fp for i, fp in zip(chooser.ran, chooser.footprints, strict=True)}
    (delivered,) = [fp for label, fp in ran.items() if label.startswith("op/watch/ConfigMap deliver ADDED default/a")]
    assert (stream, True) in delivered
    assert (a, False) in ran["get ConfigMap default/a"]
    unasked = PlanChooser()
    run_once(_scenario([]), unasked)
    assert unasked.ran == chooser.ran and again == seen


# ------------------------------------------------------------ the reduction over real clients
def _writers(world: h.World, fixed: bool = False) -> Any:
    """Two operators with real clients, each its own process: each waits on its watch for the ConfigMap, then
    adds its name to ``data.admitted`` (buggy: read, then an unconditional merge patch, a lost update; fixed: a
    PUT carrying the resourceVersion read, retried on 409 Conflict)."""

    async def scenario() -> None:
        api = APIServer(world)
        await api.create(KubeObject("ConfigMap", NS, "q1", extra={"data": {"admitted": ""}}))
        names = ("op-a", "op-b")
        for name in names:
            world.share_memory(name)
            world.spawn(name, _admit, api, name, fixed)

        def no_lost_update() -> str | None:
            obj = api.peek("ConfigMap", NS, "q1")
            admitted = [] if obj is None else [n for n in str(obj.extra.get("data", {}).get("admitted", "")).split(",") if n]
            missing = [n for n in names if n not in admitted]
            return f"update lost: {missing} missing from data.admitted={admitted}" if missing else None

        world.at_end(no_lost_update, name="no lost update")

    return scenario()


async def _admit(api: APIServer, me: str, fixed: bool) -> None:
    async with httpx.AsyncClient(transport=api.transport(client=me), base_url="http://kube") as c:
        async with c.stream("GET", URL, params={"watch": "true", "fieldSelector": "metadata.name=q1"}) as resp, \
                aclosing(resp.aiter_lines()) as lines:
            async for _line in lines:
                break  # the watch showed it: go
        while True:
            cur = (await c.get(f"{URL}/q1")).json()
            admitted = ",".join(n for n in [*cur["data"]["admitted"].split(","), me] if n)
            if not fixed:
                await c.patch(f"{URL}/q1", json={"data": {"admitted": admitted}},
                              headers={"Content-Type": "application/merge-patch+json"})
                return
            cur["data"]["admitted"] = admitted
            if (await c.put(f"{URL}/q1", json=cur)).status_code != 409:
                return


def _both(k: int, fixed: bool) -> tuple[h.Result, h.Result]:
    """The same exhaustive search with and without the reduction."""
    return tuple(  # type: ignore[return-value]
        h.explore(_writers, strategy=h.Exhaustive(k, reduce=r), budget=20_000, prove_minimal=False, fixed=fixed)
        for r in (True, False))


def _same_verdict(reduced: h.Result, full: h.Result) -> None:
    assert reduced.verdict == full.verdict and reduced.verdict in ("found", "proved-clean"), (reduced.outcome,
                                                                                             full.outcome)
    if full.counterexample is not None:
        assert reduced.counterexample is not None
        assert reduced.counterexample.plan == full.counterexample.plan
        assert reduced.counterexample.trace.digest() == full.counterexample.trace.digest()
    assert reduced.runs <= full.runs


def test_reduction_over_real_client_requests_keeps_verdicts() -> None:
    """Each operator is its own process (``share_memory``) meeting the other only at the apiserver, through real
    clients: the referee commutes what their requests and deliveries show independent (a delivery into op-a's
    stream and op-b's read of its own), and keeps the verdict: the lost update found, the fix proved clean."""
    buggy = _both(1, fixed=False)
    _same_verdict(*buggy)
    assert buggy[0].verdict == "found" and "update lost" in buggy[0].outcome
    reduced, full = _both(1, fixed=True)
    _same_verdict(reduced, full)
    assert reduced.verdict == "proved-clean" and reduced.skipped > 0 and reduced.runs < full.runs, (
        reduced.runs, full.runs)


@pytest.mark.slow
def test_reduction_over_real_client_requests_keeps_the_two_deviation_proof() -> None:
    reduced, full = _both(2, fixed=True)  # measured: 886 runs reduced, 2,247 unreduced
    _same_verdict(reduced, full)
    assert reduced.verdict == "proved-clean" and reduced.runs * 2 < full.runs, (reduced.runs, full.runs)
