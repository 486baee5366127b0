"""Cost of a real client under the scheduler: the HTTP API's transport against a model's direct calls.

Run: ``.venv/bin/python bench/bench_http.py [N]``. Prints, measured in one run:

* microseconds per GET through ``api.transport()`` (an ``httpx.AsyncClient``: request
  building, the REST mapping, JSON both ways) and per direct ``await api.get(...)``
  (one yield point either way), and their ratio (target: within 3x);
* seconds per canonical run of ``examples/lightkube_operator.py`` (lightkube, fixed
  variant) and of the same operator written as a model (two informers, a work queue of
  App names, the same reconcile with direct apiserver calls), and their ratio (target:
  within 5x).
"""

from __future__ import annotations

import base64
import hashlib
import sys
import time
import warnings
from collections.abc import Awaitable, Callable

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

import httpx

from examples import lightkube_operator as ex
from harness.kube import ApiError, APIServer, Informer, KubeObject
from harness.sim import ReplayChooser, World, run_once


def timed(scenario: Callable[..., Awaitable[object]], repeat: int = 3, **params: object) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = run_once(scenario, ReplayChooser([]), params=params)
        best = min(best, time.perf_counter() - t0)
        assert out.violation is None, out.violation
    return best


async def direct_gets(world: World, n: int) -> None:
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "cfg", extra={"data": {"a": "1"}}))
    for _ in range(n):
        await api.get("ConfigMap", "default", "cfg")


async def http_gets(world: World, n: int) -> None:
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "cfg", extra={"data": {"a": "1"}}))
    async with httpx.AsyncClient(transport=api.transport(client="bench"), base_url="http://kube") as client:
        for _ in range(n):
            (await client.get("/api/v1/namespaces/default/configmaps/cfg")).json()


class AppOperatorModel:
    """``AppOperator`` (fixed) as a model: informers for the caches, a work queue of App names, direct API calls."""

    def __init__(self, world: World, api: APIServer) -> None:
        self.api = api
        self.apps = Informer(world, api, "App", name="model/informer/App")
        self.secrets = Informer(world, api, "Secret", name="model/informer/Secret")
        self.queue = world.Queue()
        self.apps.add_event_handler(lambda o: self.queue.put_nowait(o.name),
                                    lambda _o, n: self.queue.put_nowait(n.name),
                                    lambda o: self.queue.put_nowait(o.key.split("/")[-1]))

    async def run(self) -> None:
        self.apps.start()
        self.secrets.start()
        while True:
            await self.reconcile(await self.queue.get("model worker waits for an App"))

    async def reconcile(self, name: str) -> None:
        app = self.apps.lister.try_get(ex.NAMESPACE, name)
        try:
            secret: KubeObject | None = await self.api.get("Secret", ex.NAMESPACE, ex.secret_name(name))
        except ApiError:
            secret = None
        if app is None or (secret is not None and secret.annotations.get(ex.APP_UID) != app.uid):
            if secret is not None:
                await self.api.delete("Secret", ex.NAMESPACE, ex.secret_name(name))
            if app is None:
                return
            secret = None
        if secret is None:
            password = base64.b64encode(hashlib.sha256(app.uid.encode()).hexdigest()[:16].encode()).decode()
            try:
                await self.api.create(KubeObject("Secret", ex.NAMESPACE, ex.secret_name(name), labels=dict(ex.MANAGED_BY),
                                                 annotations={ex.APP_UID: app.uid}, extra={"data": {"password": password}}))
            except ApiError:
                pass
        if app.status != {"secret": ex.secret_name(name)}:
            cur = app.deepcopy()
            cur.status = {"secret": ex.secret_name(name)}
            try:
                await self.api.update_status(cur)
            except ApiError:
                pass


async def model_scenario(world: World) -> None:
    """The example's user story, with the model operator."""
    api = APIServer(world)
    await api.create(ex.CRD)
    world.spawn("model", AppOperatorModel(world, api).run, daemon=True)
    secret = ex.secret_name(ex.APP)
    await api.create(KubeObject("App", ex.NAMESPACE, ex.APP, spec={"engine": "postgres"}))
    await ex.until(world, "secret exists", lambda: api.peek("Secret", ex.NAMESPACE, secret) is not None)
    await api.delete("App", ex.NAMESPACE, ex.APP)
    await ex.until(world, "secret gone", lambda: api.peek("Secret", ex.NAMESPACE, secret) is None)
    await api.create(KubeObject("App", ex.NAMESPACE, ex.APP, spec={"engine": "postgres"}))


def main() -> None:
    warnings.simplefilter("ignore", ResourceWarning)  # httpx's abandoned generator chain (see tests/kube)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    direct = timed(direct_gets, n=n) / n * 1e6
    http = timed(http_gets, n=n) / n * 1e6
    print(f"GET, direct api.get:          {direct:8.1f} us")
    print(f"GET, httpx through transport: {http:8.1f} us   ratio {http / direct:.1f}x (target within 3x)")
    real = timed(ex.scenario, repeat=5, fixed=True)
    model = timed(model_scenario, repeat=5)
    print(f"example run, lightkube operator: {real * 1e3:7.1f} ms")
    print(f"example run, the same as a model:  {model * 1e3:7.1f} ms   ratio {real / model:.1f}x (target within 5x)")


if __name__ == "__main__":
    main()
