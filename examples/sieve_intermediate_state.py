"""Sieve's intermediate state: a crash between two writes of one reconcile leaves a second Job running.

A Backup operator creates a Job with a generated name, then records the name in the Backup's status. If
the process crashes between the two writes, the restarted operator finds no Job in the status and creates
another: two Jobs back up one database at once. Sieve (Sun et al., OSDI 2022) reports this pattern, a
reconcile that is not idempotent across a crash, in most operators it tested. Fixed: a name derived from
the Backup, so the retry's create is AlreadyExists. The crash point and the restart are the search's.
"""

from __future__ import annotations

import harness as h
from harness.kube import AlreadyExists, APIServer, Controller, ControllerProcess, Informer, KubeObject, controller_ref

NS = "default"


def operator(world: h.World, api: APIServer, process: ControllerProcess, *, fixed: bool) -> None:
    """One incarnation: a Backup informer and a reconcile that starts one backup Job per Backup."""
    backups = Informer(world, api, "Backup", process=process)

    async def reconcile(key: str) -> None:
        backup = backups.lister.try_get(NS, key.split("/")[1])
        if backup is None or backup.status.get("job"):
            return
        job = KubeObject("Job", NS, f"{backup.name}-backup" if fixed else "",
                         owner_references=[controller_ref(backup)])
        try:
            job = await api.create(job, generate_name="" if fixed else f"{backup.name}-")
        except AlreadyExists:
            pass  # the Job of a reconcile that crashed before writing the status
        await api.patch("Backup", NS, backup.name, {"status": {"job": job.name}}, subresource="status")

    controller: Controller[str] = Controller(world, "backup/reconcile", reconcile, process=process)
    backups.add_event_handler(lambda b: controller.enqueue(b.key), lambda _o, b: controller.enqueue(b.key))
    backups.start()
    controller.start()


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """A user creates one Backup; at most one Job may ever run for it."""
    api = APIServer(world)
    ControllerProcess(world, "operator", lambda p: operator(world, api, p, fixed=fixed), crash_faults=True).start()
    world.invariant(lambda: len(api.peek_all("Job")) <= 1 or
                    f"{len(api.peek_all('Job'))} Jobs back up one database: "
                    f"{', '.join(j.name for j in api.peek_all('Job'))}", "one backup Job per Backup")
    await api.create(KubeObject("Backup", NS, "nightly"))
    await world.sleep(5.0, "user waits")
