"""The story keeps what the harm depends on across actors: the user's writes a controller's deciding read read.

A controller reads the user's ConfigMap, then takes many steps of its own (a chain of writes, each reading the one
before), and finally writes a result that pairs the ConfigMap it read first with the one that now has the name. The
slice from the oracle back holds more steps than a story shows; ranked by distance alone, the user's writes (the
deepest) were "less telling" and cut, though they are what makes the final write wrong.
"""

from __future__ import annotations

from typing import Any

import harness as h
from harness.kube import APIServer, KubeObject

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

    async def user() -> None:
        await first_read.wait()  # (a test of the story, not a search: the user comes back after that read)
        await api.delete("ConfigMap", "default", "cfg")
        await api.create(KubeObject("ConfigMap", "default", "cfg", extra={"data": {"v": "2"}}))

    world.spawn("controller", controller)
    world.spawn("user", user)

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
    cx = _found()
    story = cx.story()
    text = str(story)
    causal = len(story.causal)
    assert causal > 15, (causal, text)  # more kept than a story shows: the ranking decides
    assert "user: delete ConfigMap default/cfg" in text or "main: create ConfigMap default/cfg" in text, text
    assert "create ConfigMap default/result" in text, text  # the harm itself


def test_story_keeps_the_read_a_later_write_adopted() -> None:
    cx = _found()
    text = str(cx.story())
    # the controller's first GET of cfg (whose uid the result carries) is a line of the story
    assert "controller: get ConfigMap default/cfg" in text, text
