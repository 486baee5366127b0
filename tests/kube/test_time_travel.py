"""Sieve's time travel as choices: which revision a lagging cache serves, how long the view stays there, when a
crashed process comes back."""

from __future__ import annotations

from typing import Any

from kube_support import LIMITS, FaultChooser, clean, run_with

from harness.kube import APIServer, ControllerProcess, Informer, KubeObject
from harness.sim import Fault, Hold, Ident, PlanChooser, World, run_once


async def _three_versions(world: World, api: APIServer) -> None:
    """Config ns/c is created at v=1, then updated to v=2 and v=3, 0.2 s apart: three revisions to go back to."""
    await api.create(KubeObject("Config", "ns", "c", spec={"v": 1}))
    for v in (2, 3):
        await world.sleep(0.2)
        obj = await api.get("Config", "ns", "c")
        obj.spec["v"] = v
        await api.update(obj)


async def _lagging_reader(world: World, seen: list[Any], *, at: float = 1.0) -> None:
    api = APIServer(world, namespaces=("ns",), stale_reads=True, stale_window=2.0)
    await _three_versions(world, api)
    await world.sleep(at)
    inf = Informer(world, api, "Config", name="reader/informer/Config")
    inf.start()
    await inf.wait_for_cache_sync()

    def value() -> int | None:
        obj = inf.lister.try_get("ns", "c")
        return None if obj is None else int(obj.spec["v"])

    seen.append(("listed", world.now, value()))
    while value() != 3:
        await world.sleep(0.1, "reader polls its cache")
    seen.append(("fresh", world.now, 3))


def test_stale_list_revision_is_a_choice() -> None:
    """Each older revision inside the window is a fault point of its own, named by the event that made it."""
    seen: list[Any] = []
    chooser = FaultChooser("never")
    clean(run_with(lambda w: _lagging_reader(w, seen), chooser))
    stale = [p for p in chooser.points if "lagging watch cache" in p]
    # listed at t=1.4: the state 2 s before (no Config yet), after ADDED, after the first MODIFIED; the last
    # MODIFIED made the present, which is not stale
    assert stale == [
        "fault: reader/informer/Config lists from a lagging watch cache at the revision of no Config yet",
        "fault: reader/informer/Config lists from a lagging watch cache at the revision of ADDED ns/c",
        "fault: reader/informer/Config lists from a lagging watch cache at the revision of MODIFIED ns/c",
    ], stale
    assert "rv=" not in "".join(stale)  # a plan names a revision by its event, never by its number
    for prefix, v in ((stale[0], None), (stale[1], 1), (stale[2], 2)):
        seen.clear()
        clean(run_with(lambda w: _lagging_reader(w, seen), FaultChooser(prefix)))
        assert seen[0][2] == v, (prefix, seen)
    # later, the window holds fewer revisions; outside it nothing is older than the present: no point at all
    for at, n in ((2.0, 1), (5.0, 0)):
        later = FaultChooser("never")
        clean(run_with(lambda w: _lagging_reader(w, seen, at=at), later))  # noqa: B023 - run at once
        assert len([p for p in later.points if "lagging watch cache" in p]) == n, (at, later.points)


def test_stale_view_stays_frozen_until_released() -> None:
    """After a stale LIST no newer event of the kind arrives until the cache catches up (window after the next event)."""
    seen: list[Any] = []
    out = clean(run_with(lambda w: _lagging_reader(w, seen),
                         FaultChooser("fault: reader/informer/Config lists from a lagging watch cache at the revision "
                                      "of ADDED")))
    (_, listed_at, v0), (_, fresh_at, _) = seen
    assert v0 == 1
    # listed at t=1.4; the next event (MODIFIED v=2) was committed at t=0.2: the cache lags at most 2 s -> t=2.2
    assert listed_at < 1.5 and abs(fresh_at - 2.2) < 0.11, seen
    catch = [r for r in out.trace if "view catches up" in r.label]
    assert len(catch) == 1 and abs(catch[0].time - 2.2) < 1e-6
    # a fresh list sees the present at once
    seen.clear()
    clean(run_with(lambda w: _lagging_reader(w, seen), FaultChooser("never")))
    assert seen[0][2] == 3 and seen[0][1] == seen[1][1]


async def _crashing(world: World, log: list[float]) -> None:
    api = APIServer(world, namespaces=("ns",))

    def build(proc: ControllerProcess) -> None:
        async def work() -> None:
            log.append(world.now)
            await api.create(KubeObject("ConfigMap", "ns", f"cm-{proc.incarnation}"))

        proc.spawn("ctl/worker", work)

    ControllerProcess(world, "ctl", build, crash_faults=True, restart_window=3.0).start()
    await world.sleep(10.0)


def test_restart_delay_is_a_window() -> None:
    """The restart comes at once canonically; the search may place it anywhere up to ``restart_window`` later."""
    log: list[float] = []
    crash = Fault(Ident("ctl/worker", "ctl crashes before create ConfigMap ns/cm-1", None, 1))
    out = run_once(lambda w: _crashing(w, log), PlanChooser([crash]), limits=LIMITS)
    clean(out)
    assert log == [0.0, 0.0]  # crashed before its write, restarted at once
    restart = next(r for r in out.trace if r.label == "restart ctl")
    log.clear()
    # hold the restart as long as its window allows: it comes 3 s later
    held = run_once(lambda w: _crashing(w, log),
                    PlanChooser([crash, Hold(Ident(restart.actor, "restart ctl", None, 1), None)]), limits=LIMITS)
    clean(held)
    assert log == [0.0, 3.0]
    # ... or until a time inside it
    log.clear()
    clean(run_once(lambda w: _crashing(w, log),
                   PlanChooser([crash, Hold(Ident(restart.actor, "restart ctl", None, 1), 1.25)]), limits=LIMITS))
    assert log == [0.0, 1.25]


async def _drop_and_relist(world: World) -> None:
    api = APIServer(world, namespaces=("ns",), stale_reads=True, stale_window=2.0)
    inf = Informer(world, api, "Config", name="r/informer/Config", watch_drops=True)
    inf.start()
    await inf.wait_for_cache_sync()
    await _three_versions(world, api)
    await world.sleep(3.0)


def test_a_relist_never_goes_back_before_what_the_informer_saw() -> None:
    """client-go relists at its last synced revision, served "not older than" it: no time travel without a restart.

    The watch drops before the second MODIFIED (the informer has seen the first); the relist 0.8 s later may
    come from a lagging cache, but not from one that lags behind the first MODIFIED.
    """
    chooser = FaultChooser("fault: r/informer/Config watch drops before MODIFIED ns/c rv=8")
    clean(run_with(_drop_and_relist, chooser))
    stale = [p for p in chooser.points if "lagging watch cache" in p]
    assert stale == ["fault: r/informer/Config lists from a lagging watch cache at the revision of MODIFIED ns/c"], \
        chooser.points


def test_stale_reads_may_name_the_kinds_whose_cache_lags() -> None:
    """``stale_reads={"Config"}``: only LISTs of those kinds get stale points (a model isolating an issue's path);
    a search that turns every fault kind on overrides it, as it overrides every model flag."""

    async def two_kinds(world: World, kinds: Any) -> None:
        api = APIServer(world, namespaces=("ns",), stale_reads=kinds, stale_window=2.0)
        await _three_versions(world, api)
        await api.create(KubeObject("Other", "ns", "o", spec={"v": 1}))
        await world.sleep(0.2)
        for kind in ("Config", "Other"):
            inf = Informer(world, api, kind, name=f"reader/informer/{kind}")
            inf.start()
            await inf.wait_for_cache_sync()

    def points(kinds: Any, faults: Any = None) -> list[str]:
        chooser = FaultChooser("never")
        clean(run_once(lambda w: two_kinds(w, kinds), chooser, limits=LIMITS, faults=faults))  # type: ignore[arg-type]
        return [p for p in chooser.points if "lagging watch cache" in p]

    every = points(True)
    assert any("informer/Config" in p for p in every) and any("informer/Other" in p for p in every), every
    only = points({"Config"})
    assert only and all("informer/Config" in p for p in only), only
    assert points(set()) == [] and points(False) == []
    assert points({"Config"}, faults=frozenset({"*"})) == every
