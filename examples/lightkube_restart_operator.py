"""A real lightkube operator that runs a Backup twice after it restarts: it reconciled before its Job cache held the cluster.

The operator (``BackupOperator``) is ordinary lightkube code: each ``Backup``
custom resource gets exactly one ``Job`` that dumps its database (named by
``generateName``, labelled and owned by the Backup). Two loops keep a cache of
Backups and one of their Jobs and queue a Backup whenever it or one of its Jobs
changes; a worker takes Backup names from a memory object stream and creates
the Job of a Backup that has none in the cache, then records it in the Backup's
status (with a retry on conflict). Like client-go's ``ControllerExpectations``
(``pkg/controller/controller_utils.go``), the worker remembers each Job it
created until the Job's own watch event shows it, and reconciles nothing for
that Backup until then: a late watch event of its own creation never makes it
create a second Job. Nothing in it knows the harness: ``main`` builds its client
from the environment (``AsyncClient()`` reads ``KUBECONFIG``), runs its loops and
worker in its own anyio task group and backs off with ``anyio.sleep``; the
scenario starts it with ``Operator(api, "backup-operator", main, fixed)``, and
with ``--faults crash`` the search may crash it before any of its requests and
restart it with empty memory.

The report, as an upstream one would read: *after the operator restarted, a
Backup that already had a Job got a second one; both ran the dump at once.*
The buggy operator never LISTs: it watches each kind without a
``resourceVersion`` (as lightkube's README watches), for which the apiserver
first sends every object that exists as an ``ADDED`` event, and it gives those
events a moment (``SETTLE``, 1 s) to arrive before its worker starts. Nothing
bounds that moment: an event may come later than 1 s (up to the 2 s window of
every delivery here). On a first start there is no Job to miss, and the
expectations cover the Jobs the process creates itself; a restart loses the
expectations and starts with a Job that exists, and if that Job's ``ADDED`` comes
after the worker started, the Backup has no Job in the cache and no expectation,
and gets a second Job. So the minimal counterexample is two entries, and neither
alone fails: the operator crashes once its Job exists, and the Job's ``ADDED``
event on the restarted watch comes late.

The pattern is kube-controller-manager's own: kubernetes/kubernetes PR #10147
("Prevent restarts of kube-controller from overshooting and correcting
replicas": the replication manager waits for the pod store's first relist after
a restart before counting replicas) and issue #20259 (after a restart the
controllers synced RCs while the pods listed were not all in the store yet, and
created replicas; fixed by PR #19973), and in an operator
nextbreakpoint/flink-controller#57 (the reconcile loop ran while the watch loop
refilled the cache, and repeated operations; fixed by PR #56).

The fix (``fixed=True``) is upstream's ``WaitForCacheSync``: each loop LISTs
(a consistent read), fills its cache from the LIST, sets its ``anyio.Event``
and watches from the LIST's resourceVersion; the worker starts once both
caches hold their LIST, so a restarted operator sees every Job that exists
before it reconciles.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
from lightkube import ApiError, AsyncClient, operators
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.batch_v1 import JobSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import ObjectMeta, OwnerReference
from lightkube.resources.batch_v1 import Job

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import Operator

NAMESPACE, BACKUP = "default", "nightly"
log = logging.getLogger("backup-operator")
BACKUP_LABEL = "backups.example.com/backup"  # the label that names a Job's Backup
OWNED = {BACKUP_LABEL: operators.exists()}
Backup = create_namespaced_resource("example.com", "v1", "Backup", "backups")
BackupStatus = Backup.Status

#: how long the buggy worker lets the watches replay what exists before it starts (a guess, not a bound)
SETTLE = 1.0
#: a Backup must have its Job by then, whatever the crash did (the fix must not get there by creating nothing)
JOB_WITHIN = 10.0


class BackupOperator:
    """Caches of Backups and of their Jobs, and a worker that gives each Backup exactly one Job."""

    def __init__(self, client: AsyncClient, *, fixed: bool = True) -> None:
        self.client = client
        self.fixed = fixed
        self.backups: dict[str, Any] = {}
        self.jobs: dict[str, Job] = {}
        #: set once a cache holds its first LIST (fixed): the worker reconciles nothing before both are
        self.synced = {"Backup": anyio.Event(), "Job": anyio.Event()}
        #: the expectations: Backups whose Job this process created and has not yet seen on the Job watch
        self.expecting: set[str] = set()
        #: the work queue: names of Backups to reconcile, each queued once until the worker takes it
        self.send, self.receive = anyio.create_memory_object_stream[str](math.inf)
        self.queued: set[str] = set()

    async def run(self) -> None:
        """Both loops and the worker, in the operator's own task group (the Job loop first: its events first)."""
        async with self.send, self.receive, anyio.create_task_group() as tg:
            tg.start_soon(self.watch_jobs)
            tg.start_soon(self.watch_backups)
            tg.start_soon(self.worker)

    async def watch_backups(self) -> None:
        await self._list_and_watch(Backup, self.backups)

    async def watch_jobs(self) -> None:
        await self._list_and_watch(Job, self.jobs, labels=OWNED)

    def enqueue(self, name: str) -> None:
        if name not in self.queued:
            self.queued.add(name)
            self.send.send_nowait(name)

    def observe(self, kind: str, event: str, obj: Any, cache: dict[str, Any]) -> None:
        """Apply one event to its cache and queue the Backup it concerns; a Job seen meets its expectation."""
        if event == "DELETED":
            cache.pop(obj.metadata.name, None)
        else:
            cache[obj.metadata.name] = obj
        if kind == "Job":
            backup = (obj.metadata.labels or {}).get(BACKUP_LABEL)
            if backup is not None:
                self.expecting.discard(backup)
                self.enqueue(backup)
        else:
            self.enqueue(obj.metadata.name)

    async def _list_and_watch(self, res: Any, cache: dict[str, Any], labels: dict[str, Any] | None = None) -> None:
        """Fill the cache, then follow the watch; on any error back off 1 s and start again.

        Fixed: LIST, replace the cache, mark it synced, watch from the LIST's
        resourceVersion. Buggy: watch without a resourceVersion, for which the
        server first sends every object that exists as ADDED.
        """
        kind = res.__name__
        while True:
            try:
                rv = None
                if self.fixed:
                    listed = self.client.list(res, namespace=NAMESPACE, labels=labels)
                    fresh = {obj.metadata.name: obj async for obj in listed}
                    cache.clear()
                    cache.update(fresh)
                    rv = listed.resourceVersion
                    self.synced[kind].set()
                    for obj in fresh.values():
                        self.observe(kind, "ADDED", obj, cache)
                else:
                    cache.clear()  # the watch sends what exists again
                async for event, obj in self.client.watch(res, namespace=NAMESPACE, labels=labels,
                                                          resource_version=rv):
                    self.observe(kind, event, obj, cache)
            except (ApiError, httpx2.HTTPError):
                await anyio.sleep(1.0)

    async def worker(self) -> None:
        """Once the caches hold the cluster, reconcile each queued Backup; a failed one is queued again after 1 s."""
        if self.fixed:
            for synced in self.synced.values():
                await synced.wait()
        else:
            await anyio.sleep(SETTLE)  # "the watches have sent what exists by then"
        async for name in self.receive:
            self.queued.discard(name)
            try:
                await self.reconcile(name)
            except (ApiError, httpx2.HTTPError) as err:
                log.warning("reconcile of Backup %s failed (%s); again in 1 s", name, err)
                await anyio.sleep(1.0)
                self.enqueue(name)

    async def reconcile(self, name: str) -> None:
        """Create the Backup's Job when the cache shows none and none of ours is on its way."""
        backup = self.backups.get(name)
        if backup is None or name in self.expecting:
            return
        if any((job.metadata.labels or {}).get(BACKUP_LABEL) == name for job in self.jobs.values()):
            return
        self.expecting.add(name)
        try:
            job = await self.client.create(self.job_for(backup))
        except BaseException:
            self.expecting.discard(name)  # no Job will come: expect none (``CreationObserved`` on an error)
            raise
        log.info("Backup %s: created Job %s", name, job.metadata.name)
        await self.set_status(backup, {"job": job.metadata.name})

    def job_for(self, backup: Any) -> Job:
        name = backup.metadata.name
        owner = OwnerReference(apiVersion="example.com/v1", kind="Backup", name=name, uid=backup.metadata.uid,
                               controller=True)
        dump = Container(name="dump", image="postgres:16", command=["pg_dumpall", "-f", f"/backups/{name}.sql"])
        return Job(
            metadata=ObjectMeta(generateName=f"{name}-", namespace=NAMESPACE, labels={BACKUP_LABEL: name},
                                ownerReferences=[owner]),
            spec=JobSpec(template=PodTemplateSpec(spec=PodSpec(restartPolicy="Never", containers=[dump]))))

    async def set_status(self, backup: Any, status: dict[str, Any]) -> None:
        """Replace the status subresource; on 409 Conflict read the Backup again and retry (``RetryOnConflict``)."""
        for _attempt in range(5):
            try:
                await self.client.replace(BackupStatus(metadata=backup.metadata, status=status))
                return
            except ApiError as err:
                if err.status.code != 409:
                    raise
                backup = await self.client.get(Backup, backup.metadata.name, namespace=NAMESPACE)


async def main(fixed: bool = False) -> None:
    """The operator's entry point: a client from the environment, both loops and the worker until the process ends."""
    await BackupOperator(AsyncClient(), fixed=fixed).run()


# ---------------------------------------------------------------------------------------------- the scenario
CRD = KubeObject("CustomResourceDefinition", "", "backups.example.com", spec={
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "backups", "singular": "backup", "kind": "Backup"},
    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}}],
})


def jobs_of(api: APIServer, backup: str) -> list[str]:
    return sorted(j.name for j in api.peek_all("Job") if j.labels.get(BACKUP_LABEL) == backup)


def one_job_per_backup(api: APIServer) -> Callable[[], bool | str]:
    """Invariant: a Backup never has two Jobs (two dumps of one database at once, into the same file)."""

    def check() -> bool | str:
        jobs = jobs_of(api, BACKUP)
        if len(jobs) <= 1:
            return True
        return f"Backup {NAMESPACE}/{BACKUP} has {len(jobs)} Jobs ({', '.join(jobs)}): its dump runs twice at once"

    return check


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False) -> None:
    """Create Backup ``default/nightly``: it must get exactly one Job, whenever the operator crashes."""
    api = APIServer(world)
    await api.create(CRD)
    Operator(api, "backup-operator", main, fixed).start()
    world.invariant(one_job_per_backup(api), name="a Backup has at most one Job")
    await api.create(KubeObject("Backup", NAMESPACE, BACKUP, spec={"database": "db"}))
    world.eventually(lambda: bool(jobs_of(api, BACKUP)) or f"Backup {BACKUP} has no Job yet", within=JOB_WITHIN,
                     name=f"a Backup gets its Job within {JOB_WITHIN:g} s")
