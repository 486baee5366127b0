"""A real controller, written with lightkube, run unmodified under the harness: it deletes a re-created Secret by name.

The operator (``AppOperator``) is ordinary lightkube code, the way small Python
operators are written: two list-and-watch loops keep a local cache of ``App``
custom resources and of the Secrets it manages; every App event runs a
level-triggered ``reconcile`` that makes sure the App has a credentials Secret
(a password derived from the App's UID), deletes the Secret of an App that is
gone or that belongs to an earlier App of the same name, and records the Secret
in the App's status with a retry on conflict (client-go's ``RetryOnConflict``).
Nothing in it knows the harness: the scenario hands it a lightkube
``AsyncClient`` whose transport is the simulated apiserver
(``api.transport(client="app-operator")``) and ``world.sleep`` as its sleep,
and runs each of its loops as an actor.

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
watches end, break, hit 410 and requests fail or lose their responses.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
from lightkube import ApiError, AsyncClient, KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Secret

import harness as h
from harness.kube import APIServer, KubeObject

NAMESPACE, APP = "default", "db"
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

    def __init__(self, client: AsyncClient, *, fixed: bool = True,
                 sleep: Callable[[float], Awaitable[Any]] = anyio.sleep) -> None:
        self.client = client
        self.fixed = fixed
        self.sleep = sleep
        self.apps: dict[str, Any] = {}
        self.secrets: dict[str, Secret] = {}

    async def run(self) -> None:
        """Both loops, as a process runs them (the scenario spawns each as an actor instead)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.watch_apps)
            tg.start_soon(self.watch_secrets)

    async def watch_apps(self) -> None:
        await self._list_and_watch(App, self.apps, self.reconcile)

    async def watch_secrets(self) -> None:
        await self._list_and_watch(Secret, self.secrets, None, labels=MANAGED_BY)

    async def _list_and_watch(self, res: Any, cache: dict[str, Any], on_change: Callable[[str], Awaitable[None]] | None,
                              labels: dict[str, str] | None = None) -> None:
        """List, then watch from the list's resourceVersion; on any error (410 Gone, a broken stream, a failed
        request) back off and list again, and reconcile again every name whose reconcile failed."""
        failed: set[str] = set()
        while True:
            try:
                listed = self.client.list(res, namespace=NAMESPACE, labels=labels)
                fresh = {obj.metadata.name: obj async for obj in listed}
                changed = sorted(set(cache) | set(fresh) | failed)
                cache.clear()
                cache.update(fresh)
                for name in changed:
                    await self._changed(on_change, name, failed)
                async for event, obj in self.client.watch(res, namespace=NAMESPACE, labels=labels,
                                                          resource_version=listed.resourceVersion):
                    if event == "DELETED":
                        cache.pop(obj.metadata.name, None)
                    else:
                        cache[obj.metadata.name] = obj
                    await self._changed(on_change, obj.metadata.name, failed)
            except (ApiError, httpx2.HTTPError):
                await self.sleep(1.0)  # back off, then list again

    @staticmethod
    async def _changed(on_change: Callable[[str], Awaitable[None]] | None, name: str, failed: set[str]) -> None:
        if on_change is not None:
            failed.add(name)  # until it succeeds: a reconcile that raised runs again after the relist
            await on_change(name)
            failed.discard(name)

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
        await self.set_status(name, {"secret": secret_name(name)})

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

    async def set_status(self, name: str, status: dict[str, Any]) -> None:
        """Replace the status subresource; on 409 Conflict read the App again and retry (``RetryOnConflict``)."""
        app = self.apps[name]
        for _attempt in range(5):
            if app.get("status") == status:
                return
            try:
                await self.client.replace(AppStatus(metadata=app.metadata, status=status))
                return
            except ApiError as err:
                if err.status.code != 409:
                    raise
                app = await self.client.get(App, name, namespace=NAMESPACE)


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


def lightkube_client(api: APIServer, name: str) -> AsyncClient:
    """A lightkube client whose every request goes to the simulated apiserver."""
    config = KubeConfig.from_one(cluster=Cluster(server="http://kube"), user=User(), namespace=NAMESPACE)
    return AsyncClient(config, transport=api.transport(client=name))


async def until(world: h.World, what: str, cond: Callable[[], bool]) -> None:
    while not cond():
        await world.sleep(0.5, f"user waits until {what}")


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create App ``default/db``; once it has its Secret, delete it, wait until the Secret is gone, create it again."""
    api = APIServer(world)
    await api.create(CRD)
    operator = AppOperator(lightkube_client(api, "app-operator"), fixed=fixed, sleep=world.sleep)
    world.spawn("app-operator/apps", operator.watch_apps, daemon=True)
    world.spawn("app-operator/secrets", operator.watch_secrets, daemon=True)
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
