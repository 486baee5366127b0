"""Cost of a kopf operator under the world: the kopf example against the same operator written as a model.

Run: ``.venv/bin/python bench/bench_kopf.py``. Prints, measured in one run (best of 5 canonical runs each):

* seconds per canonical run of ``examples/kopf_child_secret.py`` (kopf, fixed variant), its steps and its
  requests to the apiserver;
* the same for the same operator written as a model (an informer on the labelled ConfigMaps, a work queue,
  the two handlers with direct apiserver calls), and the ratio;
* the lightkube example's run, for scale (``bench/bench_http.py`` compares it with its own model).
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Awaitable, Callable

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

from examples import kopf_child_secret as ex
from examples import lightkube_operator as lk
from harness.kube import AlreadyExists, ApiError, APIServer, Informer, KubeObject, NotFound
from harness.sim import ReplayChooser, RunOutcome, World, run_once

REQUESTS = ("get ", "list ", "watch ", "create ", "patch ", "update ", "delete ")


def timed(scenario: Callable[..., Awaitable[object]], repeat: int = 5, **params: object) -> tuple[float, RunOutcome]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = run_once(scenario, ReplayChooser([]), params=params)
        best = min(best, time.perf_counter() - t0)
        assert out.violation is None, out.violation
    assert out is not None
    return best, out


class ChildSecretModel:
    """The example's handlers (fixed) as a model: ADDED creates the child (adopts it on 409), DELETED deletes it if
    it is the deleted parent's, as read."""

    def __init__(self, world: World, api: APIServer) -> None:
        self.api = api
        self.parents = Informer(world, api, "ConfigMap", name="model/informer/ConfigMap")
        self.queue = world.Queue()
        self.parents.add_event_handler(lambda o: self.queue.put_nowait(("created", o)), lambda _o, _n: None,
                                       lambda o: self.queue.put_nowait(("deleted", o)))

    async def run(self) -> None:
        self.parents.start()
        while True:
            what, obj = await self.queue.get("model worker waits for an event")
            if getattr(obj, "labels", {}).get("app") != "demo":
                continue
            await (self.created(obj) if what == "created" else self.deleted(obj))

    async def created(self, parent: KubeObject) -> None:
        child = KubeObject("Secret", parent.namespace, f"{parent.name}-child", annotations={"parent-uid": parent.uid})
        try:
            await self.api.create(child)
        except AlreadyExists:
            cur = await self.api.get("Secret", parent.namespace, f"{parent.name}-child")
            cur.annotations["parent-uid"] = parent.uid
            await self.api.update(cur)

    async def deleted(self, parent: KubeObject) -> None:
        try:
            child = await self.api.get("Secret", parent.namespace, f"{parent.name}-child")
            if child.annotations.get("parent-uid") == parent.uid:
                await self.api.delete("Secret", parent.namespace, child.name,
                                      resource_version=child.resource_version)
        except (NotFound, ApiError):
            pass


async def model_scenario(world: World) -> None:
    """The example's user story, with the model operator."""
    world.horizon = 60
    api = APIServer(world)
    await api.create(KubeObject("Namespace", "", "default"))
    world.spawn("model", ChildSecretModel(world, api).run, daemon=True)
    await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "demo"}))
    await world.sleep(5)
    await api.delete("ConfigMap", "default", "a")
    await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "demo"}))
    await world.sleep(35)


def requests(out: RunOutcome) -> int:
    return sum(1 for r in out.trace if r.label.startswith(REQUESTS))


def main() -> None:
    warnings.simplefilter("ignore", ResourceWarning)
    kopf_s, kopf_out = timed(ex.scenario, fixed=True)
    model_s, model_out = timed(model_scenario)
    lk_s, lk_out = timed(lk.scenario, fixed=True)
    print(f"example run, kopf operator:       {kopf_s * 1e3:7.1f} ms  {len(list(kopf_out.trace)):4d} steps "
          f"{requests(kopf_out):3d} requests")
    print(f"example run, the same as a model: {model_s * 1e3:7.1f} ms  {len(list(model_out.trace)):4d} steps "
          f"{requests(model_out):3d} requests   ratio {kopf_s / model_s:.1f}x")
    print(f"example run, lightkube operator:  {lk_s * 1e3:7.1f} ms  {len(list(lk_out.trace)):4d} steps "
          f"{requests(lk_out):3d} requests   kopf/lightkube {kopf_s / lk_s:.1f}x")


if __name__ == "__main__":
    main()
