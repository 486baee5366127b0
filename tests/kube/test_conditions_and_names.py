"""Status conditions as apimachinery sets them, and ``generateName`` as the apiserver fills it."""

from __future__ import annotations

import harness
from harness.kube import (
    APIServer,
    KubeObject,
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from harness.sim import PlanChooser, World


def test_last_transition_time_moves_only_when_status_changes() -> None:
    conditions: list[dict[str, object]] = []
    assert set_status_condition(conditions, {"type": "Ready", "status": "False", "reason": "Creating"}, now=1.0)
    assert conditions == [{"type": "Ready", "status": "False", "reason": "Creating", "message": "",
                           "observedGeneration": 0, "lastTransitionTime": 1.0}]
    # same status, new reason: changed, but no transition
    assert set_status_condition(conditions, {"type": "Ready", "status": "False", "reason": "Waiting"}, now=2.0)
    assert find_status_condition(conditions, "Ready") == {**conditions[0], "reason": "Waiting",
                                                           "lastTransitionTime": 1.0}
    # the same condition again: nothing changes
    assert not set_status_condition(conditions, {"type": "Ready", "status": "False", "reason": "Waiting"}, now=3.0)
    # a flip moves the transition time
    assert set_status_condition(conditions, {"type": "Ready", "status": "True", "reason": "Ready"}, now=4.0)
    assert conditions[0]["lastTransitionTime"] == 4.0 and is_status_condition_true(conditions, "Ready")
    assert remove_status_condition(conditions, "Ready") and conditions == []
    assert not remove_status_condition(conditions, "Ready")


def _create_many(prefix: str, n: int, taken: str = "") -> list[str]:
    names: list[str] = []

    async def main(world: World) -> None:
        api = APIServer(world)
        if taken:
            await api.create(KubeObject("Pod", "default", taken))  # a name a user took by hand
        for _ in range(n):
            pod = await api.create(KubeObject("Pod", "default", ""), generate_name=prefix)
            names.append(pod.name)

    out = harness.run_once(main, PlanChooser())
    assert out.violation is None, out.violation
    return names


def test_generate_name_is_deterministic_unique_and_shaped_like_the_apiservers() -> None:
    names = _create_many("web-", 50)
    assert names == _create_many("web-", 50)  # the same run names the same objects
    assert len(set(names)) == 50
    # a name taken by hand is skipped: the sequence moves on
    assert _create_many("web-", 2, taken=names[0]) == names[1:3]
    alphabet = set("bcdfghjklmnpqrstvwxz2456789")
    assert all(n.startswith("web-") and len(n) == 9 and set(n[4:]) <= alphabet for n in names)
    long = _create_many("x" * 70, 1)[0]
    assert len(long) == 63 and long.startswith("x" * 58)


def test_condition_time_zero_is_kept() -> None:
    """``meta.SetStatusCondition`` (apimachinery ``pkg/api/meta/conditions.go``) keeps a given ``LastTransitionTime``.

    Upstream "unset" is Go's zero time (``IsZero()``); virtual time starts at 0, so a condition stamped at
    t=0 by the caller is a real instant and must survive, on a new condition and on a status flip alike.
    """
    conditions: list[dict[str, object]] = []
    assert set_status_condition(conditions, {"type": "Ready", "status": "False", "lastTransitionTime": 0.0}, now=5.0)
    assert conditions[0]["lastTransitionTime"] == 0.0
    assert set_status_condition(conditions, {"type": "Ready", "status": "True", "lastTransitionTime": 0}, now=7.0)
    assert conditions[0]["lastTransitionTime"] == 0
    # unset (absent or None) still means "now"
    assert set_status_condition(conditions, {"type": "Ready", "status": "False", "lastTransitionTime": None}, now=9.0)
    assert conditions[0]["lastTransitionTime"] == 9.0
    assert set_status_condition(conditions, {"type": "Synced", "status": "True"}, now=11.0)
    assert conditions[1]["lastTransitionTime"] == 11.0
