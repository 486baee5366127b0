"""OpenKruise: an ImagePullJob waits about five minutes for its NodeImage (kruise#1528).

Upstream
--------
* Issue openkruise/kruise#1528 "[BUG] ImagePullJob delayed for five minutes." (2024-03-20).
* Fix: PR openkruise/kruise#1526, squash commit ``fd7e86e8`` ("change imagepulljob
  reconcile RequeueAfter=5s"): in the NodeImage-unsatisfied branch of ``Reconcile``,
  ``RequeueAfter: expectations.ExpectationTimeout - unsatisfiedDuration`` became
  ``RequeueAfter: time.Second * 5``. Nothing else changed; ``fixed=True`` switches exactly
  that line.

Modelled from ``openkruise/kruise`` at ``fd7e86e8`` (the buggy line read at its parent):

* ``pkg/controller/imagepulljob/imagepulljob_controller.go``: ``Reconcile`` (job-level
  expectation check, ``addProtectionFinalizer``, ``GetNodeImagesForJob``, the per-NodeImage
  ``Observe``/``IsSatisfied`` check, ``calculateStatus``, ``syncNodeImages``, the status
  update + ``Expect(job)``), ``syncNodeImages`` (``retry.RetryOnConflict`` around a cached
  ``Get`` + ``Update`` of the NodeImage, then ``resourceVersionExpectations.Expect``), the
  package-wide ``resourceVersionExpectations`` (keyed by NodeImage **UID**, shared by every
  job) and ``concurrentReconciles = 3``;
* ``imagepulljob_event_handler.go``: ``nodeImageEventHandler`` ``Create``/``Update``/
  ``Delete`` → ``handle`` (every active job) and ``handleUpdate`` (only jobs whose image
  **name** changed in spec or status, plus ``diffJobs`` of the selector membership);
* ``pkg/util/imagejob/imagejob_reader.go``: ``GetNodeImagesForJob`` (``selector.names``
  branch) and ``GetActiveJobsForNodeImage``;
* ``pkg/controller/imagelistpulljob``: ``syncImagePullJob`` creates one ImagePullJob per
  image through ``SlowStartBatch`` (batch 1: nginx, batch 2: busybox). The ImagePullJob
  mutating webhook (``SetDefaultsImagePullJob(obj, addProtection=true)`` on create) adds
  the protection finalizer, so ``addProtectionFinalizer`` is a no-op here.

Not modelled: secrets, pod selectors, kruise-daemon (``status.imageStatuses`` never
changes), completion/TTL. ``NormalizeImageRefToNameTag`` is reduced to ``name:tag``.

The race
--------
Worker A syncs nginx into NodeImage ``worker-1`` and ``Expect``\\s the new RV. Before that
RV reaches the NodeImage cache, worker B reconciles the busybox job: the expectation, keyed
by the NodeImage UID and not by job, is unsatisfied, so the busybox job is requeued after
``300 s - elapsed`` (≈ 300 s). When the NodeImage event arrives, ``handleUpdate`` sees only
``nginx`` changed and enqueues only the nginx job; nothing else wakes the busybox job.

Timing: nothing is placed. Both informers deliver at their nominal time (latency ``delta``,
0 by default) or later inside their windows (``max_lag``), and the ImagePullJob informer
runs its handlers in their own step (client-go's per-listener goroutine, ``handler_lag``).
With every delivery at t=0 the canonical order already runs "handle add default/j2"
(enqueue the busybox job) before "deliver MODIFIED worker-1", so the buggy variant fails
with 0 deviations; other ``delta`` find the same bug
(``test_the_informer_latency_does_not_place_the_bug``).

Oracle: each job's tag is in ``NodeImage.spec`` within 60 virtual seconds of the job's
creation (the issue's symptom: the busybox job waits ~300 s). Ordinary 409s from a stale
NodeImage cache are reachable under lag in both variants and upstream retries them (the
worker requeues), so they are not an oracle.
"""

from __future__ import annotations

from typing import Any

from harness.kube import KRUISE_EXPECTATION_TIMEOUT as EXPECTATION_TIMEOUT
from harness.kube import (
    APIServer,
    Controller,
    DeletedFinalStateUnknown,
    Informer,
    KubeObject,
    ResourceVersionExpectation,
    Result,
    retry_on_conflict,
)
from harness.sim import World
from races._registry import Race

NAMESPACE = "default"
NODE_IMAGE = "worker-1"
PROTECTION_FINALIZER = "apps.kruise.io/deletion-protection"
#: ``--imagepulljob-workers`` default (``concurrentReconciles``)
CONCURRENT_RECONCILES = 3
#: the requeue the fix uses in the NodeImage-unsatisfied branch
FIXED_REQUEUE_AFTER = 5.0
#: the oracle's bound: a job's tag must reach its NodeImage this soon after creation. The upstream
#: symptom is ~300 s (requeue after 300 s - elapsed); informer lag inside its windows (2 s per
#: delivery) and the fix's 5 s requeues compound to well under a minute, so 60 s separates them.
SYNC_DEADLINE = 60.0


def normalize_image_ref_to_name_tag(image: str) -> tuple[str, str]:
    """``daemonutil.NormalizeImageRefToNameTag``, reduced to ``name[:tag]``."""
    name, _, tag = image.partition(":")
    return name, tag or "latest"


def tag_synced(node_image: KubeObject | None, job: KubeObject) -> bool:
    """The job's tag is in ``NodeImage.spec`` with the job as an owner (what ``calculateStatus`` checks)."""
    if node_image is None:
        return False
    name, tag = normalize_image_ref_to_name_tag(job.spec["image"])
    for tag_spec in node_image.spec.get("images", {}).get(name, {}).get("tags", []):
        if tag_spec["tag"] == tag and job.uid in tag_spec["ownerReferences"]:
            return True
    return False


# ------------------------------------------------------------- imagejob_reader.go
def get_node_images_for_job(node_images: Informer, job: KubeObject) -> list[KubeObject]:
    """``GetNodeImagesForJob``: the ``selector.names`` branch, read from the informer cache."""
    out = []
    for name in job.spec.get("selector", {}).get("names", []):
        ni = node_images.lister.try_get("", name)
        if ni is not None:
            out.append(ni)
    return out


def _job_matches(job: KubeObject, node_image: KubeObject) -> bool:
    names = job.spec.get("selector", {}).get("names")
    return names is None or node_image.name in names


def get_active_jobs_for_node_image(
    jobs: Informer, node_image: KubeObject, old_node_image: KubeObject | None
) -> tuple[list[KubeObject], list[KubeObject]]:
    """``GetActiveJobsForNodeImage``: active jobs (no completionTime) matching now and before."""
    new_jobs, old_jobs = [], []
    for job in jobs.lister.list():
        if job.status.get("completionTime") is not None:
            continue
        if _job_matches(job, node_image):
            new_jobs.append(job)
        if old_node_image is not None and _job_matches(job, old_node_image):
            old_jobs.append(job)
    return new_jobs, old_jobs


def diff_jobs(new_jobs: list[KubeObject], old_jobs: list[KubeObject]) -> dict[str, None]:
    """``diffJobs``: keys in exactly one of the two lists (insertion-ordered, not a hash set)."""
    new_keys = {j.key: None for j in new_jobs}
    old_keys = {j.key: None for j in old_jobs}
    out = {k: None for k in new_keys if k not in old_keys}
    out.update({k: None for k in old_keys if k not in new_keys})
    return out


# ------------------------------------------------------ imagepulljob controller
class ImagePullJobController:
    """``ReconcileImagePullJob`` with its watches; ``fixed`` switches the #1526 requeue."""

    def __init__(self, world: World, api: APIServer, *, fixed: bool, delta: float) -> None:
        self.world = world
        self.api = api
        self.fixed = fixed
        #: the package var ``resourceVersionExpectations``: one map for every job and NodeImage
        self.resource_version_expectations = ResourceVersionExpectation(world)
        self.jobs = Informer(world, api, "ImagePullJob", latency=delta, handler_lag=True)
        self.node_images = Informer(world, api, "NodeImage", latency=delta)
        self.controller: Controller[str] = Controller(
            world, "imagepulljob-controller", self.reconcile, workers=CONCURRENT_RECONCILES
        )
        # c.Watch(&source.Kind{ImagePullJob}, &handler.EnqueueRequestForObject{})
        self.jobs.add_event_handler(
            lambda obj: self.controller.enqueue(obj.key),
            lambda _old, new: self.controller.enqueue(new.key),
            lambda obj: self.controller.enqueue(obj.key),
        )
        # c.Watch(&source.Kind{NodeImage}, &nodeImageEventHandler{})
        self.node_images.add_event_handler(self.on_node_image_create, self.on_node_image_update, self.on_node_image_delete)

    def start(self) -> None:
        self.jobs.start()
        self.node_images.start()
        self.controller.start()

    # ------------------------------------------------ nodeImageEventHandler
    def on_node_image_create(self, node_image: KubeObject) -> None:
        self.handle(node_image)

    def on_node_image_update(self, old: KubeObject, new: KubeObject) -> None:
        if new.deletion_timestamp is not None:
            self.handle(new)
        else:
            self.handle_update(new, old)

    def on_node_image_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        node_image = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.resource_version_expectations.delete(node_image)
        self.handle(node_image)

    def handle(self, node_image: KubeObject) -> None:
        """Enqueue every active job of this NodeImage."""
        jobs, _ = get_active_jobs_for_node_image(self.jobs, node_image, None)
        for job in jobs:
            self.controller.enqueue(job.key)

    def handle_update(self, node_image: KubeObject, old_node_image: KubeObject) -> None:
        """Enqueue jobs whose image *name* changed in spec or status, plus selector-membership changes."""
        changed_images: dict[str, None] = {}
        for field, sub in (("spec", "images"), ("status", "imageStatuses")):
            new_map: dict[str, Any] = getattr(node_image, field).get(sub, {})
            old_map: dict[str, Any] = getattr(old_node_image, field).get(sub, {})
            for name in [*new_map, *old_map]:
                if new_map.get(name) != old_map.get(name):
                    changed_images[name] = None
        new_jobs, old_jobs = get_active_jobs_for_node_image(self.jobs, node_image, old_node_image)
        diff_set = diff_jobs(new_jobs, old_jobs)
        for job in new_jobs:
            image_name, _ = normalize_image_ref_to_name_tag(job.spec["image"])
            if image_name in changed_images:
                diff_set[job.key] = None
        for key in diff_set:
            self.controller.enqueue(key)

    # ------------------------------------------------------------ Reconcile
    async def reconcile(self, key: str) -> Result:
        exp = self.resource_version_expectations
        namespace, _, name = key.partition("/")
        job = self.jobs.lister.try_get(namespace, name)  # r.Get: the delegating client reads the cache
        if job is None:
            return Result()

        # the job-level resourceVersion expectation (unchanged by the fix)
        exp.observe(job)
        satisfied, unsatisfied = exp.is_satisfied(job)
        if not satisfied:
            if unsatisfied >= EXPECTATION_TIMEOUT:
                return Result()
            return Result(requeue_after=EXPECTATION_TIMEOUT - unsatisfied)

        job = await self.add_protection_finalizer(job)
        node_images = get_node_images_for_job(self.node_images, job)

        for node_image in node_images:
            exp.observe(node_image)
            satisfied, unsatisfied = exp.is_satisfied(node_image)
            if not satisfied:
                if unsatisfied >= EXPECTATION_TIMEOUT:
                    return Result()
                if self.fixed:
                    # fix issue https://github.com/openkruise/kruise/issues/1528
                    return Result(requeue_after=FIXED_REQUEUE_AFTER)
                return Result(requeue_after=EXPECTATION_TIMEOUT - unsatisfied)

        new_status, not_synced = self.calculate_status(job, node_images)
        await self.sync_node_images(job, new_status, not_synced)

        if job.status != new_status:
            job.status = new_status
            job = await self.api.update_status(job)
            exp.expect(job)
        return Result()

    async def add_protection_finalizer(self, job: KubeObject) -> KubeObject:
        """A no-op here: the mutating webhook already added the finalizer at create."""
        if PROTECTION_FINALIZER in job.finalizers:
            return job
        job.finalizers.append(PROTECTION_FINALIZER)
        return await self.api.update(job)

    def calculate_status(self, job: KubeObject, node_images: list[KubeObject]) -> tuple[dict[str, Any], list[str]]:
        """``calculateStatus``: NodeImages not yet carrying this job's tag are "not synced"."""
        image_name, image_tag = normalize_image_ref_to_name_tag(job.spec["image"])
        not_synced: list[str] = []
        pulling: list[str] = []
        for ni in node_images:
            if not tag_synced(ni, job):
                not_synced.append(ni.name)
                continue
            statuses = ni.status.get("imageStatuses", {}).get(image_name, {}).get("tags", [])
            if not any(s["tag"] == image_tag and s.get("phase") in ("Succeeded", "Failed") for s in statuses):
                pulling.append(ni.name)
        status = {
            "startTime": job.status.get("startTime", self.world.now),
            "desired": len(node_images),
            "active": len(pulling),
        }
        return status, not_synced

    async def sync_node_images(self, job: KubeObject, new_status: dict[str, Any], not_synced: list[str]) -> None:
        """``syncNodeImages``: add the tag under ``RetryOnConflict``, then ``Expect`` the new RV."""
        if not not_synced:
            return
        parallelism = int(job.spec.get("parallelism", 1)) - int(new_status["active"])
        if parallelism <= 0:
            return
        image_name, image_tag = normalize_image_ref_to_name_tag(job.spec["image"])
        for node_name in not_synced[:parallelism]:

            async def attempt(node_name: str = node_name) -> None:
                node_image = self.node_images.lister.get("", node_name)  # r.Get reads the cache
                image_spec = node_image.spec.setdefault("images", {}).setdefault(image_name, {"tags": []})
                for tag_spec in image_spec["tags"]:
                    if tag_spec["tag"] == image_tag:
                        if job.uid in tag_spec["ownerReferences"]:
                            return  # skip: already synced
                        tag_spec["version"] += 1
                        tag_spec["ownerReferences"].append(job.uid)
                        break
                else:
                    image_spec["tags"].append({"tag": image_tag, "version": 0, "ownerReferences": [job.uid]})
                old_rv = node_image.resource_version
                updated = await self.api.update(node_image)
                if updated.resource_version != old_rv:
                    self.resource_version_expectations.expect(updated)

            await retry_on_conflict(self.world, attempt)


# --------------------------------------------------- imagelistpulljob controller
async def sync_image_pull_jobs(api: APIServer, list_job: str, images: list[str]) -> list[KubeObject]:
    """``syncImagePullJob``'s create loop: ``SlowStartBatch`` creates one job per image, in order.

    The ImagePullJob mutating webhook adds the protection finalizer on create.
    """
    created = []
    for i, image in enumerate(images, start=1):
        job = KubeObject(
            "ImagePullJob",
            NAMESPACE,
            f"j{i}",
            labels={"imagelistpulljob": list_job},
            finalizers=[PROTECTION_FINALIZER],
            spec={"image": image, "selector": {"names": [NODE_IMAGE]}, "parallelism": 1},
        )
        created.append(await api.create(job))
    return created


# --------------------------------------------------------------------- scenario
async def scenario(
    world: World, *, fixed: bool = False, delta: float = 0.0, images: tuple[str, ...] = ("nginx:latest", "busybox:latest")
) -> None:
    """An ImageListPullJob with two images on one NodeImage; every tag must land within 10 s."""
    world.share_memory("informer", "imagepulljob-controller")  # one kruise-manager process
    api = APIServer(world)
    await api.create(KubeObject("NodeImage", "", NODE_IMAGE, labels={"kubernetes.io/hostname": NODE_IMAGE}))
    kruise = ImagePullJobController(world, api, fixed=fixed, delta=delta)
    kruise.start()
    await kruise.jobs.wait_for_cache_sync()
    await kruise.node_images.wait_for_cache_sync()

    jobs = await sync_image_pull_jobs(api, "pull-images", list(images))
    for job in jobs:

        def synced(job: KubeObject = job) -> bool:
            return tag_synced(api.peek("NodeImage", "", NODE_IMAGE), job)

        world.eventually(
            synced,
            within=SYNC_DEADLINE,
            name=f"ImagePullJob {job.key} ({job.spec['image']}) synced into NodeImage {NODE_IMAGE} "
            f"within {SYNC_DEADLINE:g} s of creation",
        )


RACES = [
    Race(
        name="kruise_imagepulljob",
        title="ImagePullJob delayed about 5 minutes: a NodeImage expectation shared by all jobs",
        upstream="openkruise/kruise#1528 (fix PR #1526, fd7e86e8)",
        scenario=scenario,
        params={},
        faults="all",  # the fixed variant is clean with every fault kind placed (tests/races/test_registry.py)
        budget=200,
        strategy="random",
        known_open=False,
        key_events=(
            "update NodeImage worker-1",
            "informer/ImagePullJob handle add default/j2",
            "informer/NodeImage deliver MODIFIED worker-1",
        ),
    )
]
