"""A kopf operator as kopf users write it: each ConfigMap labelled ``app=demo`` gets a Secret of its own.

The race (a cleanup on the DELETED event, after the object is gone, with no
finalizer to hold it; kopf serves each object by its uid in a worker of its
own, so an old and a new object of one name are handled concurrently; compare
nolar/kopf#1305 and every "delete the child by name" cleanup): a ConfigMap is
deleted and at once created again
under the same name. The new parent's creation handler finds the old child
still there (409: "already done"), then the old parent's deletion handler
deletes the child *by name*: the new parent is left without its Secret, for
good. Upstream symptom: a parent without its child after a quick re-creation.

The fix: the deletion handler deletes the child only if it is the deleted
parent's, as read (a ``resourceVersion`` precondition), and the creation
handler marks a child it finds as its own instead of assuming it is.

Run it: ``python -m harness hunt examples/kopf_child_secret.py:scenario --variant both``.
"""

from __future__ import annotations

import os

import kopf
import kubernetes
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.rest import ApiException

import harness as h
from harness.kube import APIServer, KubeObject, start_cluster
from harness.operators import kopf_operator

FIXED = os.environ.get("FIXED") == "1"


async def _async_api() -> client.CoreV1Api:
    await config.load_kube_config()
    return client.CoreV1Api(client.ApiClient())


@kopf.on.create("configmaps", labels={"app": "demo"}, backoff=2)  # (kopf retries a failed handler after 60 s by default)
def create_child(name: str, namespace: str, uid: str, logger: kopf.Logger, **_: object) -> None:
    """A sync handler with the official client, as most kopf handlers are written (kopf runs it in a thread)."""
    kubernetes.config.load_kube_config()
    api = kubernetes.client.CoreV1Api()
    secret = kubernetes.client.V1Secret(metadata=kubernetes.client.V1ObjectMeta(
        name=f"{name}-child", namespace=namespace, annotations={"parent-uid": uid}), string_data={"from": name})
    for _attempt in range(3):
        try:
            api.create_namespaced_secret(namespace, secret)
            logger.info("created %s-child", name)
            return
        except kubernetes.client.ApiException as err:
            if err.status != 409:
                raise
        if not FIXED:
            logger.info("%s-child exists already", name)
            return
        try:  # the Secret there may be an old parent's: make it ours
            api.patch_namespaced_secret(f"{name}-child", namespace, {"metadata": {"annotations": {"parent-uid": uid}}})
            logger.info("%s-child adopted", name)
            return
        except kubernetes.client.ApiException as err:
            if err.status != 404:  # deleted by the old parent's cleanup in between: create it again
                raise
    raise kopf.TemporaryError(f"{name}-child keeps changing", delay=1)


@kopf.on.event("configmaps", labels={"app": "demo"})
async def delete_child(event: kopf.RawEvent, name: str, namespace: str, uid: str, logger: kopf.Logger,
                       **_: object) -> None:
    """An async handler with kubernetes_asyncio."""
    if event["type"] != "DELETED":
        return
    api = await _async_api()
    try:
        if FIXED:
            child = await api.read_namespaced_secret(f"{name}-child", namespace)
            if (child.metadata.annotations or {}).get("parent-uid") != uid:
                logger.info("%s-child belongs to a newer %s: kept", name, name)
                return
            # the child as read: if the new parent made it its own since, the delete is a 409 and it stays
            body = client.V1DeleteOptions(preconditions=client.V1Preconditions(
                resource_version=child.metadata.resource_version))
            await api.delete_namespaced_secret(f"{name}-child", namespace, body=body)
        else:
            await api.delete_namespaced_secret(f"{name}-child", namespace)
        logger.info("deleted %s-child", name)
    except ApiException as err:
        if err.status not in (404, 409):
            raise
    finally:
        await api.api_client.close()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """A ConfigMap, deleted and at once created again under its name; its Secret must exist as long as it does."""
    world.horizon = 60
    api = APIServer(world)
    await start_cluster(api)  # the namespace controller and the garbage collector (kopf.adopt's children)
    kopf_operator(api, "demo-op", __file__, env={"FIXED": "1" if fixed else "0"}).start()
    await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "demo"}))
    await world.sleep(5)
    await api.delete("ConfigMap", "default", "a")
    await api.create(KubeObject("ConfigMap", "default", "a", labels={"app": "demo"}))

    def child_of_a_live_parent() -> bool | str:
        parent = api.peek("ConfigMap", "default", "a")
        if parent is None or api.peek("Secret", "default", "a-child") is not None:
            return True
        return "ConfigMap default/a exists without its Secret a-child"

    await world.sleep(20)  # the operator has long handled both events
    world.eventually(child_of_a_live_parent, within=10, name="a ConfigMap's Secret exists while it does")
    await world.sleep(15)
