"""The story keeps what the harm depends on across actors: the user's writes a controller's deciding read read.

A controller reads the user's ConfigMap, then takes many steps of its own (a chain of writes, each reading the one
before), and finally writes a result that pairs the ConfigMap it read first with the one that now has the name. The
slice from the oracle back holds more steps than a story shows; ranked by distance alone, the user's writes (the
deepest) were "less telling" and cut, though they are what makes the final write wrong.
"""

from __future__ import annotations

from typing import Any

import harness as h
from harness.kube import (
    CONTROLLER_REVISION_HASH_LABEL,
    APIServer,
    Controller,
    Informer,
    KubeObject,
    UpdateExpectations,
)

CHAIN = 18
_LETTERS = "abcdefghijklmnopqrstuvwxyz"  # (names a story cannot fold as one repeated line)


@h.scenario
async def recreated_config(world: h.World, *, fixed: bool = False) -> None:
    api = APIServer(world)
    await api.create(KubeObject("ConfigMap", "default", "cfg", extra={"data": {"v": "1"}}))

    first_read = world.Event()

    async def controller() -> None:
        cfg = await api.get("ConfigMap", "default", "cfg")  # the read the final write adopts
        first_read.set()
        prev = cfg.uid
        for i in range(CHAIN):  # its own long work: each step reads the last one's write
            if i:
                prev = (await api.get("ConfigMap", "default", f"work-{_LETTERS[i - 1]}")).extra["data"]["from"]
            await api.create(KubeObject("ConfigMap", "default", f"work-{_LETTERS[i]}", extra={"data": {"from": prev}}))
        if fixed:
            prev = (await api.get("ConfigMap", "default", "cfg")).uid  # the fix: read again, act on what is there now
        await api.create(KubeObject("ConfigMap", "default", "result", extra={"data": {"cfg": prev}}))

    world.spawn("controller", controller)
    await first_read.wait()  # (a test of the story, not a search: the user comes back after that read)
    await api.delete("ConfigMap", "default", "cfg")
    await api.create(KubeObject("ConfigMap", "default", "cfg", extra={"data": {"v": "2"}}))

    def paired() -> bool:
        result = api.peek("ConfigMap", "default", "result")
        cfg = api.peek("ConfigMap", "default", "cfg")
        return result is None or cfg is None or result.extra["data"]["cfg"] == cfg.uid

    world.at_end(paired, "the result names the ConfigMap that has the name")


def _found() -> Any:
    result = h.explore(recreated_config, strategy="random", budget=200, seed=0, fixed=False)
    assert result.found, result.outcome
    fixed = h.explore(recreated_config, strategy="random", budget=50, seed=0, fixed=True)
    assert not fixed.found, fixed.outcome
    return result.counterexample


def test_story_keeps_the_users_writes_the_operator_read() -> None:
    """The lightkube example: the user's delete and re-create of the App (the writes its worker's decisive reads
    read, which make the delete by name wrong) are lines of the story, never "less telling"."""
    from examples.lightkube_operator import scenario

    found = h.explore(scenario, seed=0, budget=100, fixed=False, prove_minimal=False)
    assert found.counterexample is not None
    text = str(found.counterexample.story())
    assert "main: delete App default/db: wrote App default/db deleted" in text, text
    assert "main: create App default/db: wrote App default/db created" in text, text
    assert "delete Secret default/db-credentials: wrote Secret default/db-credentials deleted" in text, text


def test_story_keeps_the_toy_controllers_pairing() -> None:
    cx = _found()
    story = cx.story()
    text = str(story)
    assert len(story.causal) > 15, text  # more kept than a story shows: the ranking decides
    recreated = [line for line in story.lines if line.split("  ", 2)[-1].startswith(
        "main: create ConfigMap default/cfg: wrote ConfigMap default/cfg created rv=") and not line.endswith("rv=1")]
    assert recreated, text  # the user's re-create, which makes the controller's pairing wrong
    assert "create ConfigMap default/result" in text, text  # the harm itself


def test_story_keeps_the_read_a_later_write_adopted() -> None:
    cx = _found()
    text = str(cx.story())
    # the controller's first GET of cfg (whose uid the result carries) is a line of the story
    assert "controller: get ConfigMap default/cfg" in text, text


@h.scenario
async def leaked_update_expectation(world: h.World, *, fixed: bool = False) -> None:
    """A kruise workload controller's rolling update held on ``UpdateExpectations`` (kruise#1293, as a newcomer models
    it): the sync updates each Pod to the new revision and, after the update returns, records ``ExpectUpdated``; the
    Pod handler calls ``ObserveUpdated``. When the MODIFIED event of ``web-0`` is delivered before the response of its
    update, the observation finds nothing expected, and the expectation recorded after it is never observed: the
    StatefulSet waits for ``web-0`` until kruise's expectation timeout. The fix records the expectation before the
    update is sent (as kruise's workload controllers do)."""
    api = APIServer(world, namespaces=("default",))
    updates = UpdateExpectations(world)
    sets = Informer(world, api, "StatefulSet")
    pods = Informer(world, api, "Pod")
    key = "default/web"

    async def sync(item: str) -> None:
        namespace, name = item.split("/")
        sts = sets.lister.try_get(namespace, name)
        if sts is None:
            return
        revision = sts.spec["revision"]
        if not updates.satisfied_expectations(item, revision)[0]:
            return
        for pod in pods.lister.list(namespace):
            if pod.labels.get(CONTROLLER_REVISION_HASH_LABEL) == revision:
                continue
            new = pod.deepcopy()
            new.labels[CONTROLLER_REVISION_HASH_LABEL] = revision
            if fixed:
                updates.expect_updated(item, revision, new)
            updated = await api.update(new)
            if not fixed:
                updates.expect_updated(item, revision, updated)

    controller = Controller(world, "statefulset-controller", sync)
    sets.add_event_handler(lambda s: controller.enqueue(s.key), lambda _o, s: controller.enqueue(s.key))

    def observed(_old: KubeObject, pod: KubeObject) -> None:
        updates.observe_updated(key, pod.labels.get(CONTROLLER_REVISION_HASH_LABEL, ""), pod)
        controller.enqueue(key)

    pods.add_event_handler(None, observed)
    for i in range(3):
        await api.create(KubeObject("Pod", "default", f"web-{i}", labels={CONTROLLER_REVISION_HASH_LABEL: "r1"}))
    sets.start()
    pods.start()
    controller.start()
    await sets.wait_for_cache_sync()
    await pods.wait_for_cache_sync()
    await api.create(KubeObject("StatefulSet", "default", "web", spec={"revision": "r2"}))
    world.eventually(lambda: updates.get_expectations(key) is None, within=5.0,
                     name="update expectations for default/web satisfied within 5 s")


def test_story_keeps_a_write_recorded_through_expectations() -> None:
    """The oracle reads the expectation store, not the Pod: the story still shows the controller's update of web-0
    (the write that expectation records) and the record itself, after the event that could have observed it."""
    result = h.explore(leaked_update_expectation, strategy="random", budget=300, seed=0, fixed=False)
    assert result.counterexample is not None, result.outcome
    fixed = h.explore(leaked_update_expectation, strategy="random", budget=50, seed=0, fixed=True)
    assert not fixed.found, fixed.outcome
    story = result.counterexample.story()
    text = str(story)
    update = next((x for x in story.lines if x.split("  ", 2)[-1].startswith(
        "statefulset-controller/worker-1: update Pod default/web-0: wrote Pod default/web-0 updated rv=")), None)
    assert update is not None, text
    record = next((x for x in story.lines if "expects Pod default/web-0 updated to revision r2" in x), None)
    assert record is not None and story.lines.index(update) < story.lines.index(record), text
    assert story.harm is not None and "'response update Pod default/web-0'" in story.harm, story.harm
