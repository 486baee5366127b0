"""APIServer: optimistic concurrency, preconditions, graceful deletion (sections 0.5-0.7)."""

from __future__ import annotations

from typing import Any

import pytest
from kube_support import FaultChooser, clean, run, run_with

from harness.kube import (
    AlreadyExists,
    ApiError,
    APIServer,
    Conflict,
    Gone,
    Invalid,
    KubeObject,
    NotFound,
    ServerTimeout,
    Timeout,
    TooLargeResourceVersion,
)
from harness.sim import World


def scenario_of(body: Any) -> Any:
    """Wrap ``body(world, api, box)`` as a scenario whose results land in ``box``."""
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        await body(world, APIServer(world, namespaces=("ns",)), box)

    return scenario, box


def check(body: Any, **params: Any) -> dict[str, Any]:
    scenario, box = scenario_of(body)
    clean(run(scenario, **params))
    return box


async def expect_error(box: dict[str, Any], name: str, coro: Any) -> None:
    try:
        await coro
    except ApiError as err:
        box[name] = err
    else:
        box[name] = None


def test_uids_and_resource_versions_are_deterministic_and_global() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        a = await api.create(KubeObject("Pod", "ns", "a"))
        b = await api.create(KubeObject("Queue", "", "b"))
        a2 = await api.update_status(KubeObject("Pod", "ns", "a", resource_version=a.resource_version, status={"x": 1}))
        box["ids"] = [(a.uid, a.resource_version), (b.uid, b.resource_version), (a2.uid, a2.resource_version)]

    assert check(body)["ids"] == [("uid-0006", 6), ("uid-0007", 7), ("uid-0006", 8)]  # after the 5 namespaces


def test_an_event_named_by_the_clients_clock_is_a_step_without_the_clock() -> None:
    """client-go names an Event ``<regarded name>.<%x of its clock's UnixNano>`` (or a UUID): a process on the real
    clock names it anew in every run, so the step's label and key say ``<clock>`` (``<uuid>``) and its runs replay;
    the object keeps its name, and any other name is a step's as it is."""
    names = ["app.18ec2642af0f8b5a", "0f8b5a12-1234-4678-9abc-def012345678", "app.v1", "my.app.18ec2642af0f8b5a"]

    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        box["objects"] = [(await api.create(KubeObject("Event", "ns", n))).name for n in names]
        await api.create(KubeObject("Secret", "ns", "app.18ec2642af0f8b5a"))

    scenario, box = scenario_of(body)
    out = clean(run(scenario))
    assert box["objects"] == names
    assert [(r.label, r.key) for r in out.trace if r.label.startswith("create ")] == [
        ("create Event ns/app.<clock>", "Event ns/app.<clock>"), ("create Event ns/<uuid>", "Event ns/<uuid>"),
        ("create Event ns/app.v1", "Event ns/app.v1"), ("create Event ns/my.app.<clock>", "Event ns/my.app.<clock>"),
        ("create Secret ns/app.18ec2642af0f8b5a", "Secret ns/app.18ec2642af0f8b5a")]
    assert "response create Event ns/app.<clock>" in [r.label for r in out.trace]


def test_create_twice_is_already_exists() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Pod", "ns", "a"))
        await expect_error(box, "err", api.create(KubeObject("Pod", "ns", "a")))

    err = check(body)["err"]
    assert isinstance(err, AlreadyExists) and err.code == 409 and err.message == 'pods "a" already exists'


def test_get_missing_is_not_found() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await expect_error(box, "err", api.get("Pod", "ns", "nope"))

    err = check(body)["err"]
    assert isinstance(err, NotFound) and err.code == 404 and err.reason == "NotFound"


def test_update_with_stale_rv_conflicts() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Pod", "ns", "a", spec={"v": 1}))
        stale = obj.deepcopy()
        obj.spec["v"] = 2
        await api.update(obj)
        stale.spec["v"] = 3
        await expect_error(box, "err", api.update(stale))
        box["stored"] = (await api.get("Pod", "ns", "a")).spec

    box = check(body)
    assert isinstance(box["err"], Conflict)
    assert "the object has been modified; please apply your changes" in box["err"].message
    assert box["stored"] == {"v": 2}


def test_update_status_conflicts_with_spec_writer() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Queue", "ns", "q", spec={"w": 1}))
        status_writer = obj.deepcopy()
        obj.spec["w"] = 2
        await api.update(obj)  # spec writer bumps the RV
        status_writer.status["phase"] = "Ready"
        await expect_error(box, "status_err", api.update_status(status_writer))
        fresh = await api.get("Queue", "ns", "q")
        fresh.status["phase"] = "Ready"
        await api.update_status(fresh)  # ... which bumps it for the spec writer
        await expect_error(box, "spec_err", api.update(obj))

    box = check(body)
    assert isinstance(box["status_err"], Conflict) and isinstance(box["spec_err"], Conflict)


def test_update_status_writes_only_status_and_update_keeps_status() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Queue", "ns", "q", spec={"w": 1}))
        obj.spec["w"] = 99
        obj.status["phase"] = "Ready"
        after_status = await api.update_status(obj)
        after_status.status["phase"] = "Ignored"
        after_status.spec["w"] = 2
        box["final"] = await api.update(after_status)

    final = check(body)["final"]
    assert final.spec == {"w": 2} and final.status == {"phase": "Ready"} and final.generation == 2


def test_update_with_uid_mismatch_conflicts() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Queue", "ns", "q"))
        obj.uid = "uid-9999"
        await expect_error(box, "err", api.update(obj))

    err = check(body)["err"]
    assert isinstance(err, Conflict) and "UID in precondition: uid-9999, UID in object meta: uid-0006" in err.message


def test_cr_update_without_rv_is_rejected() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("PodGroup", "ns", "pg"))
        await expect_error(box, "err", api.update_status(KubeObject("PodGroup", "ns", "pg", status={"phase": "x"})))

    err = check(body)["err"]
    assert isinstance(err, Invalid) and "must be specified for an update" in err.message


def test_builtin_update_without_rv_is_unconditional() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Pod", "ns", "p"))
        await api.update_status(KubeObject("Pod", "ns", "p", status={"phase": "Running"}))
        box["obj"] = await api.get("Pod", "ns", "p")

    assert check(body)["obj"].status == {"phase": "Running"}


def test_noop_update_writes_nothing() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Queue", "ns", "q", spec={"a": 1}))
        box["same"] = await api.update(obj)
        box["rv"] = obj.resource_version

    box = check(body)
    assert box["same"].resource_version == box["rv"]


def test_merge_patch_has_no_rv_precondition_unless_given() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Queue", "ns", "q", spec={"a": 1, "b": {"c": 1}}, labels={"x": "1"}))
        await api.patch("Queue", "ns", "q", {"spec": {"a": 2}})
        box["patched"] = await api.patch(
            "Queue", "ns", "q", {"spec": {"b": {"c": None, "d": [1]}}, "metadata": {"labels": {"y": "2"}}}
        )
        await expect_error(
            box, "err", api.patch("Queue", "ns", "q", {"spec": {"a": 3}}, resource_version=obj.resource_version)
        )
        box["status_only"] = await api.patch("Queue", "ns", "q", {"spec": {"a": 9}, "status": {"s": 1}}, subresource="status")

    box = check(body)
    assert box["patched"].spec == {"a": 2, "b": {"d": [1]}} and box["patched"].labels == {"x": "1", "y": "2"}
    assert isinstance(box["err"], Conflict)
    assert box["status_only"].spec == {"a": 2, "b": {"d": [1]}} and box["status_only"].status == {"s": 1}


def test_apply_status_has_no_rv_precondition() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Workload", "ns", "w", status={"conditions": [1], "admission": {"a": 1}}))
        await api.apply_status("Workload", "ns", "w", {"admission": {"b": 2}})  # maps merge
        box["obj"] = await api.apply_status("Workload", "ns", "w", {"conditions": [2]})  # lists replace

    obj = check(body)["obj"]
    assert obj.status == {"conditions": [2], "admission": {"a": 1, "b": 2}} and obj.resource_version == 8


def test_delete_missing_is_not_found() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await expect_error(box, "err", api.delete("ConfigMap", "ns", "c"))

    assert isinstance(check(body)["err"], NotFound)


def test_delete_by_name_removes_recreated_object() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        old = await api.create(KubeObject("ConfigMap", "ns", "c"))
        await api.delete("ConfigMap", "ns", "c", uid=old.uid)
        new = await api.create(KubeObject("ConfigMap", "ns", "c"))
        box["deleted"] = await api.delete("ConfigMap", "ns", "c")  # meant for `old`
        box["uids"] = (old.uid, new.uid)
        await expect_error(box, "gone", api.get("ConfigMap", "ns", "c"))

    box = check(body)
    assert box["deleted"].uid == box["uids"][1] != box["uids"][0]
    assert isinstance(box["gone"], NotFound)


def test_delete_with_uid_precondition_conflicts() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        old = await api.create(KubeObject("ConfigMap", "ns", "c"))
        await api.delete("ConfigMap", "ns", "c")
        await api.create(KubeObject("ConfigMap", "ns", "c"))
        await expect_error(box, "err", api.delete("ConfigMap", "ns", "c", uid=old.uid))
        box["survivor"] = await api.get("ConfigMap", "ns", "c")

    box = check(body)
    assert isinstance(box["err"], Conflict)
    assert box["err"].message == (
        'Operation cannot be fulfilled on configmaps "c": Precondition failed: '
        "UID in precondition: uid-0006, UID in object meta: uid-0007"
    )
    assert box["survivor"].uid == "uid-0007"


def test_delete_with_rv_precondition_conflicts() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("ConfigMap", "ns", "c"))
        await api.patch("ConfigMap", "ns", "c", {"spec": {"a": 1}})
        await expect_error(box, "err", api.delete("ConfigMap", "ns", "c", resource_version=obj.resource_version))

    err = check(body)["err"]
    assert isinstance(err, Conflict) and "ResourceVersion in precondition: 6" in err.message


def test_pod_without_node_is_deleted_at_once() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Pod", "ns", "p", spec={"terminationGracePeriodSeconds": 30}))
        await api.delete("Pod", "ns", "p")
        box["after"] = api.peek("Pod", "ns", "p")

    assert check(body)["after"] is None


def test_pod_on_node_waits_for_kubelet_then_grace_expiry() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Pod", "ns", "p", spec={"nodeName": "n1", "terminationGracePeriodSeconds": 30}))
        await api.create(KubeObject("Pod", "ns", "q", spec={"nodeName": "n1"}))
        terminating = await api.delete("Pod", "ns", "p")
        box["terminating"] = (terminating.deletion_timestamp, terminating.deletion_grace_period_seconds)
        await api.delete("Pod", "ns", "q")
        await world.sleep(1.0)
        box["still_there"] = api.peek("Pod", "ns", "p") is not None
        await api.confirm_delete("ns", "p")
        box["after_confirm"] = api.peek("Pod", "ns", "p")
        await world.sleep(40.0)
        box["q_after_grace"] = api.peek("Pod", "ns", "q")

    box = check(body)
    assert box["terminating"] == (30.0, 30) and box["still_there"]
    assert box["after_confirm"] is None and box["q_after_grace"] is None


def test_finalizer_holds_object() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Job", "ns", "j", finalizers=["example.com/cleanup"]))
        held = await api.delete("Job", "ns", "j")
        box["held"] = (held.deletion_timestamp, api.peek("Job", "ns", "j") is not None)
        await expect_error(box, "recreate", api.create(KubeObject("Job", "ns", "j")))
        await api.patch("Job", "ns", "j", {"metadata": {"finalizers": []}})
        box["after"] = api.peek("Job", "ns", "j")

    box = check(body)
    assert box["held"] == (0.0, True)
    assert isinstance(box["recreate"], AlreadyExists)
    assert box["after"] is None


def test_deletion_mark_bumps_generation() -> None:
    """Setting deletionTimestamp bumps ``metadata.generation`` once, so ``GenerationChangedPredicate`` hears it.

    Upstream: ``registry/store_test.go`` ``TestNonGracefulStoreHandleFinalizers`` and
    ``TestStoreDeletionPropagation`` ("Deletion didn't increase Generation"): ``store.go`` ``markAsDeleting``
    (an object held by finalizers) and ``rest.BeforeDelete`` (a graceful delete) bump a set generation when
    the deletionTimestamp is first set, and a later DELETE of the terminating object does not bump it again.
    """
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        job = await api.create(KubeObject("Job", "ns", "j", finalizers=["example.com/cleanup"]))
        marked = await api.delete("Job", "ns", "j")
        again = await api.delete("Job", "ns", "j")
        pod = await api.create(KubeObject("Pod", "ns", "p", spec={"nodeName": "n1"}))
        graceful = await api.delete("Pod", "ns", "p")
        box["job"] = (job.generation, marked.generation, again.generation, again.resource_version - marked.resource_version)
        box["pod"] = (pod.generation, graceful.generation)

    box = check(body)
    assert box["job"] == (1, 2, 2, 0)  # the repeated DELETE changes nothing: no write at all
    assert box["pod"] == (1, 2)


@pytest.mark.parametrize(
    ("existing", "policy", "expected"),
    [
        # registry/store_test.go TestStoreDeletionPropagation, the defaultDeleteStrategy rows (every kind here has
        # the background default); None = the object is gone at once (expectedNotFound)
        ([], "Foreground", ["foregroundDeletion"]),
        ([], "Background", None),
        ([], "Orphan", ["orphan"]),
        ([], None, None),
        (["orphan"], "Foreground", ["foregroundDeletion"]),
        (["orphan"], "Background", None),
        (["orphan"], "Orphan", ["orphan"]),
        (["orphan"], None, ["orphan"]),
        (["foregroundDeletion"], "Foreground", ["foregroundDeletion"]),
        (["foregroundDeletion"], "Background", None),
        (["foregroundDeletion"], "Orphan", ["orphan"]),
        (["foregroundDeletion"], None, ["foregroundDeletion"]),
        # TestStoreHandleFinalizers-style rows: other finalizers keep their place, a changed set is rebuilt
        (["foo.com/x", "orphan", "bar.com/y"], "Orphan", ["foo.com/x", "orphan", "bar.com/y"]),
        (["foo.com/x", "bar.com/y"], "Orphan", ["foo.com/x", "bar.com/y", "orphan"]),
        (["foo.com/x", "orphan", "bar.com/y"], "Background", ["foo.com/x", "bar.com/y"]),
    ],
)
def test_explicit_propagation_replaces_the_other_gc_finalizer(
    existing: list[str], policy: str | None, expected: list[str] | None
) -> None:
    """An explicit ``propagationPolicy`` decides both GC finalizers; none given keeps the one the object carries.

    Upstream: ``registry/store.go`` ``deletionFinalizersForGarbageCollection`` (``shouldOrphanDependents``,
    ``shouldDeleteDependents``) and its table ``TestStoreDeletionPropagation``: an object carrying ``orphan``
    deleted with Background goes at once; Foreground over ``orphan`` leaves ``foregroundDeletion`` alone.
    """
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Widget", "ns", "w", finalizers=list(existing)))
        await api.delete("Widget", "ns", "w", propagation=policy)
        left = api.peek("Widget", "ns", "w")
        box["finalizers"] = None if left is None else left.finalizers
        box["generation"] = None if left is None else left.generation

    box = check(body)
    assert box["finalizers"] == expected
    if expected is not None:
        assert box["generation"] == 2


def test_a_second_delete_swaps_the_gc_finalizers_of_a_terminating_object() -> None:
    """A stuck foreground deletion is cut short by deleting again in background (``store.go`` Delete runs
    ``updateForGracefulDeletionAndFinalizers`` on a terminating object whose grace is not pending)."""
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Widget", "ns", "w"))
        first = await api.delete("Widget", "ns", "w", propagation="Foreground")
        await api.delete("Widget", "ns", "w", propagation="Orphan")
        box["swapped"] = (first.deletion_timestamp, api.peek("Widget", "ns", "w"))
        await api.delete("Widget", "ns", "w", propagation="Background")
        box["after"] = api.peek("Widget", "ns", "w")

    box = check(body)
    when, swapped = box["swapped"]
    assert swapped is not None and swapped.finalizers == ["orphan"] and swapped.deletion_timestamp == when
    assert box["after"] is None


def test_no_new_finalizers_while_deleting() -> None:
    """A finalizer added to an object being deleted is refused with 422 Invalid; removing one is fine.

    Upstream: apimachinery ``api/validation/objectmeta.go`` ``ValidateObjectMetaAccessorUpdate`` calls
    ``ValidateNoNewFinalizers`` when the old object has a deletionTimestamp: "no new finalizers can be added
    if the object is being deleted, found new finalizers []string{...}" (field.Forbidden, so 422 Invalid).
    """
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("Widget", "ns", "w", finalizers=["a.io/x"]))
        held = await api.delete("Widget", "ns", "w")
        await expect_error(box, "patch", api.patch("Widget", "ns", "w", {"metadata": {"finalizers": ["a.io/x", "b.io/y"]}}))
        stale = held.deepcopy()
        stale.finalizers = ["c.io/z"]
        await expect_error(box, "update", api.update(stale))
        box["unchanged"] = api.peek("Widget", "ns", "w")
        live = await api.create(KubeObject("Widget", "ns", "fresh"))
        await api.patch("Widget", "ns", "fresh", {"metadata": {"finalizers": ["b.io/y"]}})  # not deleting: fine
        box["fresh"] = (api.peek("Widget", "ns", "fresh") or live).finalizers
        await api.patch("Widget", "ns", "w", {"metadata": {"finalizers": []}})  # removing is allowed
        box["after"] = api.peek("Widget", "ns", "w")

    box = check(body)
    for verb in ("patch", "update"):
        assert isinstance(box[verb], Invalid) and box[verb].code == 422, box[verb]
    assert str(box["patch"]) == ('Widget.widget "w" is invalid: metadata.finalizers: Forbidden: no new finalizers can '
                                 'be added if the object is being deleted, found new finalizers []string{"b.io/y"}')
    assert 'found new finalizers []string{"c.io/z"}' in str(box["update"])
    assert box["unchanged"].finalizers == ["a.io/x"]
    assert box["fresh"] == ["b.io/y"] and box["after"] is None


def test_list_at_future_revision_is_too_large() -> None:
    """A LIST at a revision the server has not reached waits 3 s for it, then answers 504 "Too large resource version".

    Upstream: ``apiserver/pkg/storage/cacher/watch_cache.go`` ``waitUntilFreshAndBlock`` (``blockTimeout`` 3 s,
    ``resourceVersionTooHighRetrySeconds`` 1) returns ``storage.NewTooLargeResourceVersionError``: an
    ``errors.NewTimeoutError`` (504, reason Timeout, "Timeout: Too large resource version: 105, current: 100",
    cause ResourceVersionTooLarge), as ``cacher_test.go`` expects; the list is served as soon as the cache
    reaches the revision, at exactly it for ``resourceVersionMatch=Exact`` (``waitAndListExactRV``).
    """
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        await api.create(KubeObject("ConfigMap", "ns", "a"))  # rv=6 (1 to 5 are the namespaces)
        await expect_error(box, "future", api.list("ConfigMap", resource_version="10", resource_version_match="Exact"))
        box["waited"] = world.now

        async def writer() -> None:
            await world.sleep(1.0)
            await api.create(KubeObject("ConfigMap", "ns", "b"))  # rv=7
            await api.create(KubeObject("ConfigMap", "ns", "c"))  # rv=8

        world.spawn("writer", writer)
        exact = await api.list("ConfigMap", resource_version="7", resource_version_match="Exact")
        box["exact"] = (world.now, [o.name for o in exact])
        later = await api.list("ConfigMap", resource_version="8")  # NotOlderThan: the latest state once fresh
        box["not_older"] = (world.now, [o.name for o in later])
        old = await api.list("ConfigMap", resource_version="6", resource_version_match="Exact")
        box["past"] = [o.name for o in old]
        api.compact()
        await expect_error(box, "compacted", api.list("ConfigMap", resource_version="6", resource_version_match="Exact"))
        await expect_error(box, "invalid", api.list("ConfigMap", resource_version_match="Exact"))
        await expect_error(box, "exact0", api.list("ConfigMap", resource_version="0", resource_version_match="Exact"))

    box = check(body)
    err = box["future"]
    assert isinstance(err, TooLargeResourceVersion) and isinstance(err, Timeout)
    assert (err.code, err.reason, err.retry_after_seconds, err.cause) == (504, "Timeout", 1, "ResourceVersionTooLarge")
    assert str(err) == "Timeout: Too large resource version: 10, current: 6"
    assert box["waited"] == 3.0
    assert box["exact"] == (4.0, ["a", "b"])  # served when rv=7 was committed, at exactly that revision
    assert box["not_older"] == (4.0, ["a", "b", "c"])
    assert box["past"] == ["a"]
    assert isinstance(box["compacted"], Gone)
    assert isinstance(box["invalid"], Invalid) and "unless resourceVersion is provided" in str(box["invalid"])
    assert isinstance(box["exact0"], Invalid) and 'forbidden for resourceVersion "0"' in str(box["exact0"])


def test_transient_errors_are_a_choice_defaulting_to_success() -> None:
    boxes: list[dict[str, Any]] = []

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",), transient_errors=True)

        async def client() -> None:  # the scenario's own actor ("main") gets no fault points
            try:
                await api.create(KubeObject("Pod", "ns", "p"))
            except ServerTimeout as err:
                world.state["err"] = err
            world.state["stored"] = api.peek("Pod", "ns", "p") is not None
            world.state["errors"] = api.error_count(code=500)
            boxes.append(dict(world.state))

        world.spawn("client", client)

    probe = FaultChooser()
    clean(run_with(scenario, probe))
    assert probe.points == ["fault: create Pod ns/p fails (timeout, no effect)"]
    # replay with the fault chosen: the request fails with no effect, and is counted
    boxes.clear()
    clean(run(scenario, choices=[1]))
    assert isinstance(boxes[0]["err"], ServerTimeout) and boxes[0]["stored"] is False and boxes[0]["errors"] == 1


def test_counters_count_calls_and_conflicts() -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject("Queue", "ns", "q"))
        await api.update_status(obj)
        obj.status["x"] = 1
        await api.update_status(obj)
        await expect_error(box, "err", api.update_status(obj))
        box["counts"] = (api.count(), api.count(verb="update_status"), api.error_count(code=409))

    assert check(body)["counts"] == (4, 3, 1)


def test_every_request_is_a_yield_point_before_its_effect() -> None:
    """Another actor can run between a read and the write based on it."""

    async def writer(api: APIServer) -> None:
        obj = await api.get("Queue", "ns", "q")
        obj.status["by"] = "writer"
        try:
            await api.update_status(obj)
        except Conflict:
            api_state["conflicted"] = True

    async def scenario(world: World) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("Queue", "ns", "q"))
        world.spawn("writer", writer, api)
        await api.patch("Queue", "ns", "q", {"status": {"by": "main"}})

    api_state: dict[str, Any] = {}
    outcomes = set()
    for seed in range(30):
        api_state.clear()
        out = clean(run(scenario, seed=seed))
        outcomes.add(bool(api_state.get("conflicted")))
        assert any(r.label == "update_status Queue ns/q" for r in out.trace)
    assert outcomes == {True, False}


@pytest.mark.parametrize("kind", ["Pod", "Queue"])
def test_reads_return_copies(kind: str) -> None:
    async def body(world: World, api: APIServer, box: dict[str, Any]) -> None:
        obj = await api.create(KubeObject(kind, "ns", "o", spec={"list": [1]}))
        obj.spec["list"].append(2)
        got = await api.get(kind, "ns", "o")
        got.spec["list"].append(3)
        box["stored"] = api.peek(kind, "ns", "o")

    assert check(body)["stored"].spec == {"list": [1]}
