"""Small scenarios over the kube layer alone, for tests and for ``harness.explore``.

Each is an ordinary scenario ``async def scenario(world, **params)`` with its
oracle registered inside, and a flag that switches the upstream fix on:

* :func:`stale_status_writers`: two controllers each add their name to
  ``Queue default/q1`` ``.status.admitted``. Buggy: read the lister, write the
  whole list with server-side apply (no RV precondition), as a controller that
  computes status from its cache does; a stale cache or a preemption between
  read and write loses the other's entry. Fixed (``fixed=True``): re-get from
  the apiserver and ``update_status`` under ``retry_on_conflict``; a stale
  write now gets 409 and is retried on a fresh read.
* :func:`delete_by_name`: a controller deletes the ``ConfigMap default/c1`` it
  saw in its lister while another actor deletes and re-creates the name. By
  name, the delete can remove the re-created object (the API-level
  form of volcano#3563); with ``use_uid=True`` it carries
  ``Preconditions{UID}`` and gets 409 instead.
"""

from __future__ import annotations

from harness.sim import World

from ._apiserver import APIServer
from ._errors import Conflict, NotFound
from ._informer import Informer
from ._objects import KubeObject
from ._retry import retry_on_conflict

QUEUE = ("Queue", "default", "q1")


async def stale_status_writers(
    world: World, fixed: bool = False, writers: int = 2, processes: bool = True
) -> None:
    """Two status writers; the oracle: at the end every writer's entry is in ``status.admitted``.

    ``processes``: declare each controller (with its informer) a process of its own, as they
    meet only at the apiserver (``World.share_memory``); False declares nothing.
    """
    api = APIServer(world)
    await api.create(KubeObject(*QUEUE, status={"admitted": []}))
    names = [f"controller-{chr(ord('a') + i)}" for i in range(writers)]
    for name in names:
        if processes:
            world.share_memory(name)
        informer = Informer(world, api, "Queue", name=f"{name}/informer/Queue")
        informer.start()
        world.spawn(name, _admit, world, api, informer, name, fixed)

    def no_lost_update() -> str | None:
        obj = api.peek(*QUEUE)
        admitted = [] if obj is None else obj.status.get("admitted", [])
        missing = [n for n in names if n not in admitted]
        return f"status update lost: {missing} missing from status.admitted={admitted}" if missing else None

    world.at_end(no_lost_update, name="no lost status update")


async def _admit(world: World, api: APIServer, informer: Informer, me: str, fixed: bool) -> None:
    await informer.wait_for_cache_sync()
    if fixed:

        async def attempt() -> KubeObject:
            queue = await api.get(*QUEUE)
            queue.status["admitted"] = [*queue.status.get("admitted", []), me]
            return await api.update_status(queue)

        await retry_on_conflict(world, attempt)
        return
    cached = informer.lister.get("default", "q1")
    await api.apply_status(*QUEUE, {"admitted": [*cached.status.get("admitted", []), me]}, field_manager=me)


async def delete_by_name(world: World, use_uid: bool = False) -> None:
    """A stale delete vs. delete-and-recreate.

    The oracle: the re-created object survives unless the cleaner saw that very
    object (its lister may legitimately show the new one) and meant to delete it.
    """
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "c1", spec={"generation": "old"}))
    informer = Informer(world, api, "ConfigMap", name="cleaner/informer/ConfigMap")
    informer.start()
    world.state["recreated_uid"] = None
    world.state["cleaner_meant"] = None
    world.spawn("cleaner", _cleaner, world, api, informer, use_uid)
    world.spawn("recreator", _recreator, world, api)

    def recreated_survives() -> str | None:
        uid = world.state["recreated_uid"]
        obj = api.peek("ConfigMap", "default", "c1")
        meant = world.state["cleaner_meant"]
        if uid is not None and meant != uid and (obj is None or obj.uid != uid):
            return f"the re-created ConfigMap default/c1 ({uid}) was deleted by a delete meant for its predecessor"
        return None

    world.at_end(recreated_survives, name="re-created object survives")


async def _cleaner(world: World, api: APIServer, informer: Informer, use_uid: bool) -> None:
    await informer.wait_for_cache_sync()
    seen = informer.lister.try_get("default", "c1")
    if seen is None:
        return
    world.state["cleaner_meant"] = seen.uid
    try:
        await api.delete("ConfigMap", "default", "c1", uid=seen.uid if use_uid else None)
    except (NotFound, Conflict):
        pass  # gone, or a different object now: not ours to delete


async def _recreator(world: World, api: APIServer) -> None:
    try:
        await api.delete("ConfigMap", "default", "c1")
    except NotFound:
        pass
    new = await api.create(KubeObject("ConfigMap", "default", "c1", spec={"generation": "new"}))
    world.state["recreated_uid"] = new.uid
