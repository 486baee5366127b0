"""Kruise and Kubernetes expectations (section 0.8), in virtual time."""

from __future__ import annotations

from typing import Any

from kube_support import clean, run

from harness.kube import (
    ControllerExpectations,
    KubeObject,
    ResourceVersionExpectation,
    ScaleExpectations,
)
from harness.sim import World


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
