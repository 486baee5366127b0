"""Kruise and Kubernetes expectations (section 0.8), in virtual time."""

from __future__ import annotations

from typing import Any

from kube_support import LIMITS, clean, run

from harness.kube import (
    CONTROLLER_REVISION_HASH_LABEL,
    ControllerExpectations,
    KubeObject,
    ResourceVersionExpectation,
    ScaleExpectations,
    UpdateExpectations,
)
from harness.sim import ReplayChooser, World, run_once


def obj(rv: int, uid: str = "uid-1") -> KubeObject:
    return KubeObject("ImagePullJob", "ns", "j", uid=uid, resource_version=rv)


def in_world(body: Any) -> dict[str, Any]:
    box: dict[str, Any] = {}

    async def scenario(world: World) -> None:
        await body(world, box)

    clean(run(scenario))
    return box


def test_rv_expectation_expect_only_raises_the_version() -> None:
    async def body(world: World, box: dict[str, Any]) -> None:
        exp = ResourceVersionExpectation(world)
        exp.expect(obj(10))
        exp.expect(obj(7))  # lower: ignored
        box["at_9"] = exp.is_satisfied(obj(9))[0]
        box["at_10"] = exp.is_satisfied(obj(10))
        box["left"] = len(exp)

    assert in_world(body) == {"at_9": False, "at_10": (True, 0.0), "left": 0}


def test_rv_expectation_compares_numerically() -> None:
    async def body(world: World, box: dict[str, Any]) -> None:
        exp = ResourceVersionExpectation(world)
        exp.expect(obj(9))
        box["at_10"] = exp.is_satisfied(obj(10))[0]  # "10" < "9" as strings; 10 >= 9 as numbers

    assert in_world(body) == {"at_10": True}


def test_rv_expectation_reports_time_since_first_unsatisfied() -> None:
    async def body(world: World, box: dict[str, Any]) -> None:
        exp = ResourceVersionExpectation(world)
        await world.sleep(3.0)
        exp.expect(obj(5))
        await world.sleep(2.0)
        box["first"] = exp.is_satisfied(obj(4))
        await world.sleep(300.0)
        box["later"] = exp.is_satisfied(obj(4))

    assert in_world(body) == {"first": (False, 0.0), "later": (False, 300.0)}


def test_rv_expectation_observe_and_delete() -> None:
    async def body(world: World, box: dict[str, Any]) -> None:
        exp = ResourceVersionExpectation(world)
        exp.expect(obj(5))
        exp.observe(obj(4))
        box["after_old_observe"] = len(exp)
        exp.observe(obj(5))
        box["after_observe"] = len(exp)
        exp.expect(obj(8))
        exp.delete(obj(1))
        box["after_delete"] = exp.is_satisfied(obj(1))

    assert in_world(body) == {"after_old_observe": 1, "after_observe": 0, "after_delete": (True, 0.0)}


def test_scale_expectations_satisfied_when_all_observed() -> None:
    async def body(world: World, box: dict[str, Any]) -> None:
        exp = ScaleExpectations(world)
        exp.expect_scale("ns/cs", "create", "p1")
        exp.expect_scale("ns/cs", "delete", "p0")
        await world.sleep(1.0)
        box["pending"] = exp.satisfied_expectations("ns/cs")
        await world.sleep(4.0)
        exp.observe_scale("ns/cs", "create", "p1")
        box["half"] = exp.satisfied_expectations("ns/cs")[:2]
        exp.observe_scale("ns/cs", "delete", "p0")
        box["done"] = exp.satisfied_expectations("ns/cs")

    assert in_world(body) == {
        "pending": (False, 0.0, {"create": ["p1"], "delete": ["p0"]}),
        "half": (False, 4.0),
        "done": (True, 0.0, {}),
    }


def test_controller_expectations_expire_after_five_minutes() -> None:
    async def body(world: World, box: dict[str, Any]) -> None:
        exp = ControllerExpectations(world)
        box["absent"] = exp.satisfied_expectations("ns/rs")
        exp.expect_creations("ns/rs", 2)
        exp.creation_observed("ns/rs")
        box["one_of_two"] = exp.satisfied_expectations("ns/rs")
        await world.sleep(300.0)
        box["at_timeout"] = exp.satisfied_expectations("ns/rs")
        await world.sleep(0.001)
        box["after_timeout"] = exp.satisfied_expectations("ns/rs")
        exp.expect_deletions("ns/rs", 1)
        exp.deletion_observed("ns/rs")
        box["deletions_observed"] = exp.satisfied_expectations("ns/rs")

    assert in_world(body) == {
        "absent": True,
        "one_of_two": False,
        "at_timeout": False,
        "after_timeout": True,
        "deletions_observed": True,
    }


def test_kruise_update_expectations() -> None:
    """Kruise's update expectations: expect, observe at the revision, delete one object, satisfied per revision.

    Upstream: openkruise ``pkg/util/expectations/update_expectations.go`` (``ExpectUpdated``, ``ObserveUpdated``,
    ``DeleteObject``, ``SatisfiedExpectations``, ``DeleteExpectations``) and its ``TestUpdate``; the revision of an
    object is its ``controller-revision-hash`` label (``revisionadapter`` ``defaultImpl.EqualToRevisionHash``).
    """
    def pod(name: str, revision: str) -> KubeObject:
        return KubeObject("Pod", "default", name, labels={CONTROLLER_REVISION_HASH_LABEL: revision})

    key = "default/controller-test"

    async def body(world: World, box: dict[str, Any]) -> None:
        exp = UpdateExpectations(world)
        box["empty"] = exp.satisfied_expectations(key, "rev-0")
        # TestUpdate: updated to rev-0, then observed
        exp.expect_updated(key, "rev-0", pod("foo", "none"))
        box["expected"] = exp.satisfied_expectations(key, "rev-0")
        exp.observe_updated(key, "rev-0", pod("foo", "none"))  # the cache still shows the old revision: no
        await world.sleep(4.0)
        box["waited"] = exp.satisfied_expectations(key, "rev-0")
        exp.observe_updated(key, "rev-0", pod("foo", "rev-0"))
        box["observed"] = (exp.satisfied_expectations(key, "rev-0"), exp.get_expectations(key))
        # rev-0 up to rev-1: asking about another revision is satisfied; an observation of another revision drops it
        exp.expect_updated(key, "rev-0", pod("foo", "rev-0"))
        box["other_revision"] = exp.satisfied_expectations(key, "rev-1")
        exp.observe_updated(key, "rev-1", pod("foo", "rev-1"))
        box["dropped"] = exp.get_expectations(key)
        # DeleteObject: the pod is gone; the record stays (empty, hence satisfied)
        exp.expect_updated(key, "rev-1", pod("foo", "rev-0"))
        exp.expect_updated(key, "rev-1", pod("bar", "rev-0"))
        box["two"] = exp.satisfied_expectations(key, "rev-1")
        exp.delete_object(key, pod("foo", "rev-0"))
        exp.delete_object(key, pod("bar", "rev-0"))
        box["deleted"] = (exp.satisfied_expectations(key, "rev-1"), exp.get_expectations(key))
        # a new revision replaces what was expected for the old one
        exp.expect_updated(key, "rev-1", pod("foo", "rev-0"))
        exp.expect_updated(key, "rev-2", pod("bar", "rev-1"))
        box["replaced"] = exp.get_expectations(key)
        exp.delete_expectations(key)
        box["gone"] = (exp.get_expectations(key), exp.satisfied_expectations(key, "rev-2"))

    box = in_world(body)
    assert box["empty"] == (True, 0.0, [])
    assert box["expected"] == (False, 0.0, ["default/foo"])
    assert box["waited"] == (False, 4.0, ["default/foo"])  # the clock runs from the first unsatisfied check
    assert box["observed"] == ((True, 0.0, []), None)
    assert box["other_revision"] == (True, 0.0, [])
    assert box["dropped"] is None
    assert box["two"][0] is False and box["two"][2] == ["default/bar", "default/foo"]
    assert box["deleted"] == ((True, 0.0, []), ("rev-1", []))
    assert box["replaced"] == ("rev-2", ["default/bar"])
    assert box["gone"] == (None, (True, 0.0, []))


def test_a_leaked_update_expectation_is_told() -> None:
    """An update never observed leaves notes keyed by the object, which is how a story finds the leak."""
    async def scenario(world: World) -> None:
        exp = UpdateExpectations(world)
        target = KubeObject("Pod", "default", "web-0", labels={CONTROLLER_REVISION_HASH_LABEL: "rev-0"})
        exp.expect_updated("default/web", "rev-1", target)
        await world.sleep(301.0)
        satisfied, waited, pending = exp.satisfied_expectations("default/web", "rev-1")
        assert not satisfied and waited == 0.0 and pending == ["default/web-0"]

    out = clean(run_once(scenario, ReplayChooser([]), limits=LIMITS, notes=True))
    notes = [(n.text, n.keys, n.field("op")) for n in out.trace.notes if n.kind == "expectation"]
    assert notes == [
        ("default/web expects Pod default/web-0 updated to revision rev-1", ("default/web", "Pod default/web-0"),
         "expect"),
        ("default/web update expectations for revision rev-1 unsatisfied (waits for default/web-0): the clock starts",
         ("default/web", "Pod default/web-0"), "unsatisfied"),
    ]
