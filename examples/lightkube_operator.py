"""A real controller, written with lightkube, run unmodified under the harness: it deletes a re-created Secret by name.

The operator (``AppOperator``) is ordinary lightkube code, the way small Python
operators are written: two list-and-watch loops keep a local cache of ``App``
custom resources and of the Secrets it manages and queue every App whose App or
Secret changed; a worker, once both caches synced, runs a level-triggered
``reconcile`` per queued App that makes sure the App has a credentials Secret
(a password derived from the App's UID), deletes the Secret of an App that is
gone or that belongs to an earlier App of the same name, and records the Secret
in the App's status with a retry on conflict (client-go's ``RetryOnConflict``).
Nothing in it knows the harness: ``main`` is the operator's entry point as it
ships (``anyio.run(main, backend="trio")``): it builds its client from the
environment (``AsyncClient()`` reads ``KUBECONFIG``), runs its loops and worker
in its own task group, waits on ``anyio.Event``s and a memory object stream and
backs off with ``anyio.sleep``. The scenario starts it with
``Operator(api, "app-operator", main, fixed)``: the client reaches the simulated
apiserver, each task is an actor (``app-operator/watch_apps``,
``app-operator/watch_secrets``, ``app-operator/worker``), every wait runs on
the virtual clock, and the operator is a process the search may crash and
restart (``--faults crash``).

Two holes the crash faults found in an earlier version of this operator, both
closed in both variants, are the classic ones: after a restart the App of a
leftover Secret is gone from the LIST, so nothing reconciled it (the Secret
leaked: now a Secret's event queues its App), and a reconcile ran before the
App cache synced and deleted a live App's Secret (now the worker waits for both
caches, as controller-runtime's ``WaitForCacheSync`` does).

The race is an upstream pattern: **a delete by name acts on whatever object now
has the name**. kubernetes/kubernetes#25169 (the kubelet deleted a re-created
Pod of the same name; fixed by PR #25224, a UID precondition on the delete, the
precondition PR #22965 added for exactly this), #29522 (the node controller,
same pattern) and kcp-dev/kcp#628 (a syncer deleting a re-created downstream
object). Here the user deletes the App ``db`` and creates it again. The
operator's Secret cache still holds the old Secret (its DELETED event is late
on the watch), so the reconcile of the new App takes it for a leftover and
deletes ``db-credentials`` by name: the first time that name is already free,
but the status update it makes triggers a second reconcile, and by then the name
holds the new App's own Secret, which it deletes. The App's password changes
while the App lives: the invariant "an App's credentials are never replaced".

The fix (``fixed=True``): before deleting what the cache says, an uncached
quorum read of the Secret (``controller_ref_manager.go``'s
``RecheckDeletionTimestamp`` does the same before adopting), and no delete when
the name now holds another object. A UID precondition is the stronger fix, but
lightkube's ``delete`` sends no ``DeleteOptions`` body to carry one; here the
operator is the only writer of its Secrets, so the read and the delete cannot be
separated by another write.

Nothing places the timing: the search chooses how late each watch event comes
(inside the 2 s window of every delivery), and with ``--faults all`` where
watches end, break, hit 410, requests fail or lose their responses and the
operator crashes.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Secret

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import Operator

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE, APP = "default", "db"
log = logging.getLogger("app-operator")
APP_UID = "example.com/app-uid"  # the annotation that ties a Secret to one App (by UID, not by name)
MANAGED_BY = {"app.kubernetes.io/managed-by": "app-operator"}
App = create_namespaced_resource("example.com", "v1", "App", "apps")
AppStatus = App.Status


#: a deleted App's Secret must be gone by then (the operator reconciles on every App event)
CLEANUP_WITHIN = 10.0


def secret_name(app: str) -> str:
    return f"{app}-credentials"


def password_for(uid: str) -> str:
    """A password derived from the App's UID: a new App gets a new one (real operators draw it at random)."""
    return hashlib.sha256(uid.encode()).hexdigest()[:16]


class AppOperator:
    """List-and-watch caches of Apps and Secrets, and a level-triggered reconcile per App event."""

    def __init__(self, client: AsyncClient, *, fixed: bool = True) -> None:
        self.client = client
        self.fixed = fixed
        self.apps: dict[str, Any] = {}
        self.secrets: dict[str, Secret] = {}
        #: set once each cache holds its first LIST: the worker reconciles nothing before both are
        self.synced = {"App": anyio.Event(), "Secret": anyio.Event()}
        #: the work queue: names of Apps to reconcile, each queued once until the worker takes it
        self.send, self.receive = anyio.create_memory_object_stream[str](math.inf)
        self.queued: set[str] = set()

    async def run(self) -> None:
        """Both list-and-watch loops and the worker, in the operator's own task group."""
        async with self.send, self.receive, anyio.create_task_group() as tg:
            tg.start_soon(self.watch_apps)
            tg.start_soon(self.watch_secrets)
            tg.start_soon(self.worker)

    async def watch_apps(self) -> None:
        await self._list_and_watch(App, self.apps)

    async def watch_secrets(self) -> None:
        await self._list_and_watch(Secret, self.secrets, labels=MANAGED_BY)

    def enqueue(self, kind: str, name: str) -> None:
        """Queue the App an object belongs to (a Secret's App by its name: after a restart, a Secret whose App
        is gone is found this way)."""
        app = name.removesuffix("-credentials") if kind == "Secret" else name
        if app not in self.queued:
            self.queued.add(app)
            self.send.send_nowait(app)

    async def _list_and_watch(self, res: Any, cache: dict[str, Any], labels: dict[str, str] | None = None) -> None:
        """List, then watch from the list's resourceVersion; on any error (410 Gone, a broken stream, a failed
        request) back off and list again. Every object that changed is queued for the worker."""
        kind = res.__name__
        while True:
            try:
                listed = self.client.list(res, namespace=NAMESPACE, labels=labels)
                fresh = {obj.metadata.name: obj async for obj in listed}
                changed = sorted(set(cache) | set(fresh))
                cache.clear()
                cache.update(fresh)
                self.synced[kind].set()
                for name in changed:
                    self.enqueue(kind, name)
                async for event, obj in self.client.watch(res, namespace=NAMESPACE, labels=labels,
                                                          resource_version=listed.resourceVersion):
                    if event == "DELETED":
                        cache.pop(obj.metadata.name, None)
                    else:
                        cache[obj.metadata.name] = obj
                    self.enqueue(kind, obj.metadata.name)
            except (ApiError, httpx2.HTTPError):
                await anyio.sleep(1.0)  # back off, then list again

    async def worker(self) -> None:
        """Once both caches synced, reconcile each queued App; a reconcile that failed is queued again after 1 s."""
        for synced in self.synced.values():
            await synced.wait()
        async for name in self.receive:
            self.queued.discard(name)
            try:
                await self.reconcile(name)
            except (ApiError, httpx2.HTTPError) as err:
                log.warning("reconcile of App %s failed (%s); again in 1 s", name, err)
                await anyio.sleep(1.0)
                self.enqueue("App", name)

    async def reconcile(self, name: str) -> None:
        app = self.apps.get(name)
        if self.fixed:  # what the name holds now, read past the cache: never delete what only the cache shows
            secret = await self.get_secret(name)
        else:
            secret = self.secrets.get(secret_name(name))
        if app is None:
            if secret is not None or not self.fixed:
                await self.delete_secret(name)  # the App is gone: so are its credentials
            return
        uid = app.metadata.uid
        if secret is not None and (secret.metadata.annotations or {}).get(APP_UID) != uid:
            await self.delete_secret(name)  # left over from an earlier App of this name
            secret = None
        if secret is None:
            password = base64.b64encode(password_for(uid).encode()).decode()
            try:
                await self.client.create(Secret(
                    metadata=ObjectMeta(name=secret_name(name), namespace=NAMESPACE, labels=dict(MANAGED_BY),
                                        annotations={APP_UID: uid}),
                    data={"password": password}))
            except ApiError as err:
                if err.status.code != 409:  # AlreadyExists: the next event shows it
                    raise
        await self.set_status(app, {"secret": secret_name(name)})

    async def get_secret(self, name: str) -> Secret | None:
        try:
            return await self.client.get(Secret, secret_name(name), namespace=NAMESPACE)
        except ApiError as err:
            if err.status.code == 404:
                return None
            raise

    async def delete_secret(self, name: str) -> None:
        """DELETE by name: whatever Secret has the name now goes (lightkube's delete sends no UID precondition)."""
        try:
            await self.client.delete(Secret, secret_name(name), namespace=NAMESPACE)
        except ApiError as err:
            if err.status.code != 404:
                raise

    async def set_status(self, app: Any, status: dict[str, Any]) -> None:
        """Replace the status subresource; on 409 Conflict read the App again and retry (``RetryOnConflict``)."""
        for _attempt in range(5):
            if app.get("status") == status:
                return
            try:
                await self.client.replace(AppStatus(metadata=app.metadata, status=status))
                return
            except ApiError as err:
                if err.status.code != 409:
                    raise
                app = await self.client.get(App, app.metadata.name, namespace=NAMESPACE)


async def main(fixed: bool = False) -> None:
    """The operator's entry point: a client from the environment, both loops until the process ends."""
    await AppOperator(AsyncClient(), fixed=fixed).run()


# ---------------------------------------------------------------------------------------------- the scenario
CRD = KubeObject("CustomResourceDefinition", "", "apps.example.com", spec={
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "apps", "singular": "app", "kind": "App"},
    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}],
})


def credentials_never_replaced(api: APIServer) -> Callable[[], bool | str]:
    """Invariant: while an App lives, the Secret first made for it stays (its password never changes)."""
    first: dict[str, str] = {}  # App uid -> uid of the first Secret made for it

    def check() -> bool | str:
        app, secret = api.peek("App", NAMESPACE, APP), api.peek("Secret", NAMESPACE, secret_name(APP))
        if app is None:
            return True
        mine = secret is not None and secret.annotations.get(APP_UID) == app.uid
        had = first.get(app.uid)
        if had is None:
            if mine and secret is not None:
                first[app.uid] = secret.uid
            return True
        if mine and secret is not None and secret.uid == had:
            return True
        now = "gone" if secret is None else f"{secret.uid}"
        return (f"App {NAMESPACE}/{APP} ({app.uid}) lives, but its credentials Secret {had} was replaced "
                f"(now: {now}): the App's password changed under it")

    return check


async def until(world: h.World, what: str, cond: Callable[[], bool]) -> None:
    while not cond():
        await world.sleep(0.5, f"user waits until {what}")


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create App ``default/db``; once it has its Secret, delete it, wait until the Secret is gone, create it again."""
    api = APIServer(world)
    await api.create(CRD)
    Operator(api, "app-operator", main, fixed).start()
    await _user(world, api)


@h.scenario
async def process_scenario(world: h.World, *, fixed: bool = False) -> None:
    """The same user, the same operator run as its own OS process (``python -m examples.lightkube_operator``, on
    asyncio, its client from ``KUBECONFIG``), searched at the API boundary as any operator process is."""
    from harness.operators import ExternalOperator

    api = APIServer(world)
    await api.create(CRD)
    ExternalOperator(api, "app-operator", [sys.executable, "-m", "examples.lightkube_operator",
                                           "--fixed" if fixed else "--buggy"], cwd=ROOT).start()
    await _user(world, api)


async def _user(world: h.World, api: APIServer) -> None:
    world.invariant(credentials_never_replaced(api), name="an App's credentials are never replaced while it lives")
    secret = secret_name(APP)

    def secret_gone() -> bool | str:
        return api.peek("Secret", NAMESPACE, secret) is None or f"Secret {secret} still exists"

    await api.create(KubeObject("App", NAMESPACE, APP, spec={"engine": "postgres"}))
    await until(world, f"Secret {secret} exists", lambda: api.peek("Secret", NAMESPACE, secret) is not None)
    await api.delete("App", NAMESPACE, APP)
    world.eventually(secret_gone, within=CLEANUP_WITHIN, name=f"the Secret of a deleted App goes within {CLEANUP_WITHIN:g} s")
    await until(world, f"Secret {secret} is gone", lambda: api.peek("Secret", NAMESPACE, secret) is None)
    await api.create(KubeObject("App", NAMESPACE, APP, spec={"engine": "postgres"}))


if __name__ == "__main__":  # the operator as its own process (``process_scenario``)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    anyio.run(main, "--fixed" in sys.argv[1:])
