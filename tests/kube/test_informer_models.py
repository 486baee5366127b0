"""Issue 17: two small controller models whose bugs live in the informer path, each buggy and fixed.

* :func:`device_usage`: a device-usage cache whose delete handler drops a
  ``DeletedFinalStateUnknown`` (``claim, ok := obj.(*ResourceClaim); if !ok
  { return }``; fixed by unwrapping the tombstone in Project-HAMi/HAMi-DRA#38,
  and in projectcalico/calico#12793): the deleted claim's device stays counted.
  A tombstone exists only after a relist, and the relist here has only the
  reflector's own causes: the watch ends before c1's DELETED is sent, then the
  re-watch gets 410 Gone (``compaction``) or fails (``transient_error``), and
  client-go relists after its backoff. ``watch_drop``, a per-delivery "relist
  now" coin, is off.
* :func:`tls_publisher`: a controller-runtime controller ``For(&Certificate{})``
  with ``WithEventFilter(GenerationChangedPredicate{})``, added so that the
  issuer's status writes would not trigger reconciles (stacklok/toolhive#3148's
  reasoning). It also drops the issuer's status-only "ready" update that the
  controller waits for (kubernetes-sigs/kubebuilder#618): when the
  controller's reconcile reads the Certificate before it is signed, nothing
  brings it back. In the canonical run the signing lands while the controller
  patches its finalizer, so the reconcile sees it ready; one late response or
  delivery is enough to miss it. The fix drops the filter.

Neither places timing: latencies are nominal (0), the CA signs at once, the
user deletes when its job (a nominal 30 s) is done; the search chooses how late
each delivery and response comes, where the watch ends, and whether the
re-watch fails. Oracles state the upstream symptom (stale device usage; the
ingress never gets its certificate). Each buggy variant is found by the default
search; each fixed variant is proved clean by ``exhaustive:2`` with the same
faults.
"""

from __future__ import annotations

import time

import harness as h
from harness.kube import (
    AlreadyExists,
    APIServer,
    Controller,
    DeletedFinalStateUnknown,
    GenerationChangedPredicate,
    Informer,
    KubeObject,
    watch,
)

#: the informer's own fault vocabulary (the guide's "Time, lag and faults"): the relist comes from 410 or a failed re-watch
DEVICE_FAULTS = "watch_end,compaction,transient_error"
FILTER_FAULTS = "watch_end,compaction"
BUDGET = 1000

# ------------------------------------------------------------------ (a) a relist's tombstone
NODE = "node-1"
#: the oracle's bound: a freed claim's devices are free again in the cache within this many seconds
FREED_WITHIN = 10.0
#: how long the job using claim c1 runs (a nominal duration: the bug does not depend on it)
JOB_SECONDS = 30.0


def claim(name: str, devices: int) -> KubeObject:
    """A ResourceClaim allocated on :data:`NODE` (only what the cache reads)."""
    return KubeObject("ResourceClaim", "default", name, status={"node": NODE, "devices": devices})


class DeviceCache:
    """The scheduler plugin's in-memory device usage: devices allocated per node, kept from ResourceClaim events."""

    def __init__(self, world: h.World, api: APIServer, *, fixed: bool) -> None:
        self.fixed = fixed
        self.claims = Informer(world, api, "ResourceClaim", name="device-cache/informer/ResourceClaim")
        self.used: dict[str, dict[str, int]] = {}  # node -> claim key -> devices
        self.claims.add_event_handler(self.on_add, self.on_update, self.on_delete)
        world.expose("device-cache usage", lambda: {n: dict(c) for n, c in self.used.items()})

    def on_add(self, obj: KubeObject) -> None:
        self.used.setdefault(obj.status["node"], {})[obj.key] = obj.status["devices"]

    def on_update(self, _old: KubeObject, new: KubeObject) -> None:
        self.on_add(new)

    def on_delete(self, obj: KubeObject | DeletedFinalStateUnknown) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            if not self.fixed:
                return  # `claim, ok := obj.(*ResourceClaim); if !ok { return }`: the tombstone is dropped
            obj = obj.obj  # the fix: unwrap the tombstone's last known state
        self.used.get(obj.status["node"], {}).pop(obj.key, None)


@h.scenario
async def device_usage(world: h.World, *, fixed: bool = False) -> None:
    """Two claims on node-1; the job holding c1 ends and the user deletes c1: the cache must free its device."""
    api = APIServer(world)
    cache = DeviceCache(world, api, fixed=fixed)
    cache.claims.start()
    await cache.claims.wait_for_cache_sync()
    await api.create(claim("c1", 1))
    await api.create(claim("c2", 1))
    await world.sleep(JOB_SECONDS)  # the job holding c1 runs
    await api.delete("ResourceClaim", "default", "c1")  # and is done with it
    deleted_at = world.now

    def freed() -> bool | str:
        held = cache.used.get(NODE, {})
        if "default/c1" not in held:
            return True
        return (f"device-cache still counts {held['default/c1']} device(s) of {NODE} for ResourceClaim default/c1, "
                f"deleted at t={deleted_at:g}: stale device usage until the scheduler restarts")

    world.eventually(freed, within=FREED_WITHIN,
                     name=f"device-cache frees deleted ResourceClaim default/c1 within {FREED_WITHIN:g} s")


def test_device_usage_canonical_run_is_clean() -> None:
    for fixed in (False, True):
        assert h.explore(device_usage, strategy="canonical", faults=DEVICE_FAULTS, fixed=fixed).verdict == "none-found"


def test_device_usage_tombstone_bug_is_found() -> None:
    """The default search finds the dropped tombstone: a watch that ends before c1's DELETED is sent, then a relist."""
    result = h.explore(device_usage, budget=BUDGET, seed=0, faults=DEVICE_FAULTS, fixed=False)
    assert result.verdict == "found", result.outcome
    cx = result.counterexample
    assert cx is not None and cx.proved_minimal and cx.deviations == 2, result.outcome
    assert "stale device usage" in cx.violation.message
    plan = [e.describe() for e in cx.plan or ()]
    # the watch ends before c1's DELETED is sent; the re-watch then gets 410 Gone or fails: a relist after the backoff
    assert any("watch ends before DELETED default/c1 is sent" in e for e in plan), plan
    assert any("re-watch gets 410 Gone" in e or "re-watch fails (timeout)" in e for e in plan), plan


def test_device_usage_fix_is_proved_clean() -> None:
    started = time.perf_counter()
    result = h.explore(device_usage, strategy="exhaustive:2", budget=10_000, faults=DEVICE_FAULTS, fixed=True)
    assert result.verdict == "proved-clean", result.outcome
    assert time.perf_counter() - started < 30.0


# ------------------------------------------------------------------ (b) an event filter
NAMESPACE, CERT = "default", "web-tls"
FINALIZER = "ingress.example.com/tls"
#: the oracle's bound: the TLS secret is published within this many seconds of the Certificate's signing
PUBLISHED_WITHIN = 30.0


class TLSPublisher:
    """``For(&Certificate{})`` with ``WithEventFilter(GenerationChangedPredicate{})`` (buggy) or without (fixed).

    Reconcile (controller-runtime style): add the controller's finalizer
    (``controllerutil.AddFinalizer`` + a merge patch: metadata only, no
    generation bump); once the Certificate is ready, publish its secret to the
    ingress (a ConfigMap ``<name>-ingress``). The predicate was added so that
    status writes by the issuer "don't trigger reconciles" (toolhive#3148's
    reasoning); it also drops the one status write the controller waits for
    (kubebuilder#618). The fix drops the filter; the finalizer patch and the
    publish are idempotent, so the extra reconciles cost nothing.
    """

    def __init__(self, world: h.World, api: APIServer, *, fixed: bool) -> None:
        self.api = api
        self.certs = Informer(world, api, "Certificate", name="tls-publisher/informer/Certificate")
        self.controller: Controller[str] = Controller(world, "tls-publisher", self.reconcile)
        if fixed:
            watch(self.certs, self.controller.queue)
        else:
            watch(self.certs, self.controller.queue, None, GenerationChangedPredicate())

    async def run(self) -> None:
        self.certs.start()
        await self.certs.wait_for_cache_sync()
        self.controller.start()

    async def reconcile(self, key: str) -> None:
        namespace, name = key.split("/")
        cert = self.certs.lister.try_get(namespace, name)
        if cert is None:
            return
        if FINALIZER not in cert.finalizers:
            cert = await self.api.patch("Certificate", namespace, name,
                                        {"metadata": {"finalizers": [*cert.finalizers, FINALIZER]}})
        if not cert.status.get("ready"):
            return  # the issuer's status update brings the Certificate back here
        try:
            await self.api.create(KubeObject("ConfigMap", namespace, f"{name}-ingress", spec={"secret": name}))
        except AlreadyExists:
            pass  # published by an earlier reconcile


@h.scenario
async def tls_publisher(world: h.World, *, fixed: bool = False) -> None:
    """Create Certificate default/web-tls and sign it (the test plays the CA, which signs at once)."""
    api = APIServer(world)
    publisher = TLSPublisher(world, api, fixed=fixed)
    await publisher.run()
    await api.create(KubeObject("Certificate", NAMESPACE, CERT, spec={"dnsNames": ["web"]}))
    signed = await api.patch("Certificate", NAMESPACE, CERT, {"status": {"ready": True}}, subresource="status")

    def published() -> bool | str:
        if api.peek("ConfigMap", NAMESPACE, f"{CERT}-ingress") is not None:
            return True
        seen = publisher.certs.lister.try_get(NAMESPACE, CERT)
        return (f"ConfigMap {NAMESPACE}/{CERT}-ingress is missing: Certificate {NAMESPACE}/{CERT} is ready since "
                f"rv={signed.resource_version} (the publisher's cache has rv="
                f"{seen.resource_version if seen else None}), but its status-only update never reached the queue")

    world.eventually(published, within=PUBLISHED_WITHIN,
                     name=f"the ingress gets the secret of Certificate {NAMESPACE}/{CERT} within "
                          f"{PUBLISHED_WITHIN:g} s of its signing")


def test_tls_publisher_canonical_run_is_clean() -> None:
    for fixed in (False, True):
        assert h.explore(tls_publisher, strategy="canonical", faults=FILTER_FAULTS, fixed=fixed).verdict == "none-found"


def test_tls_publisher_filter_bug_is_found() -> None:
    result = h.explore(tls_publisher, budget=BUDGET, seed=0, faults=FILTER_FAULTS, fixed=False)
    assert result.verdict == "found", result.outcome
    cx = result.counterexample
    assert cx is not None and cx.proved_minimal and cx.deviations >= 1, result.outcome
    assert "its status-only update never reached the queue" in cx.violation.message


def test_tls_publisher_fix_is_proved_clean() -> None:
    started = time.perf_counter()
    result = h.explore(tls_publisher, strategy="exhaustive:2", budget=10_000, faults=FILTER_FAULTS, fixed=True)
    assert result.verdict == "proved-clean", result.outcome
    assert time.perf_counter() - started < 30.0
