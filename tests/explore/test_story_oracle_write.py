"""The write the violated oracle read last is always in the story, whatever else competes for its fifteen lines."""

from __future__ import annotations

import harness as h
from harness.kube import APIServer, KubeObject

NAMES = [f"web-{c}" for c in "abcdefghijklmnop"]  # more status writes than a story has lines


async def status_sweep(world: h.World, fixed: bool = False) -> None:
    """A controller writes each Pod's ``status.index`` in one sweep, the buggy one off by one on the first Pod.

    The oracle checks the newest Pod first and stops at the first wrong one,
    so it reads sixteen status writes and the one it read last is the wrong
    one, the earliest of them: the story ranks the others (later, as telling)
    above it unless that write is kept on purpose.
    """
    api = APIServer(world)
    for name in NAMES:
        await api.create(KubeObject("Pod", "default", name))

    async def controller() -> None:
        for i, name in enumerate(NAMES):
            pod = await api.get("Pod", "default", name)
            pod.status["index"] = i - 1 if i == 0 and not fixed else i
            await api.update_status(pod)

    world.spawn("controller", controller)

    def indexed() -> str | None:
        for i, name in reversed(list(enumerate(NAMES))):
            pod = api.peek("Pod", "default", name)
            if pod is None or pod.status.get("index") != i:
                return f"{name} has status.index={None if pod is None else pod.status.get('index')}, not {i}"
        return None

    world.at_end(indexed, name="every Pod indexed")


def test_story_keeps_the_write_the_oracle_reads() -> None:
    result = h.explore(status_sweep, seed=0, budget=10, prove_minimal=False)
    cx = result.counterexample
    assert cx is not None and "web-a has status.index=-1" in cx.violation.message
    story = cx.story()
    assert len(story.lines) <= 15 and "less telling left out" in story.lines[0], story  # the room is contested
    wrote = [x for x in story.lines if "update_status Pod default/web-a" in x]
    assert len(wrote) == 1 and "status.index (none) -> -1" in wrote[0], story
    assert h.explore(status_sweep, seed=0, budget=5, fixed=True).verdict == "none-found"
