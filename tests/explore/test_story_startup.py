"""An operator's start-up takes no line of its story unless the slice needs it.

A kopf operator's story spent 3 of 12 lines on how every run starts ("Activity 'configure' succeeded", the login,
the version probe, the first LIST of CRDs): steps that joined the slice by a log line or program order, before the
operator first read the kind the oracle judges. The toy operator below starts the same way, and also writes at
start-up the defaults ConfigMap that its reconcile later reads: that start-up step is a cause, and stays.
"""

from __future__ import annotations

import harness as h
from harness.kube import APIServer, KubeObject

NOISE = ("Activity 'configure' succeeded.", "Activity 'login_via_client' succeeded.", "server version 1.30")


@h.scenario
async def noisy_startup(world: h.World, *, fixed: bool = False) -> None:
    api = APIServer(world, namespaces=("default",))
    await api.create(KubeObject("Widget", "default", "w", spec={"size": 3}))

    async def operator() -> None:
        world.note(NOISE[0], key="operator")
        await api.get("Namespace", "", "default")  # (a probe of an unrelated kind)
        world.note(NOISE[1], key="operator")
        await api.list("CustomResourceDefinition")
        world.note(NOISE[2], key="operator")
        # the start-up write a reconcile reads later: the step the slice needs
        await api.create(KubeObject("ConfigMap", "default", "widget-defaults", extra={"data": {"size": 2}}))
        for widget in await api.list("Widget", "default"):  # its first read of the judged kind
            defaults = await api.get("ConfigMap", "default", "widget-defaults")
            size = widget.spec["size"] if fixed else defaults.extra["data"]["size"]  # the bug: the default wins
            widget.status["size"] = size
            await api.update_status(widget)

    world.spawn("widget-operator", operator)

    def sized() -> str | None:
        w = api.peek("Widget", "default", "w")
        if w is None or w.status.get("size") in (None, w.spec["size"]):
            return None
        return f"Widget default/w has size {w.status['size']}, its spec says {w.spec['size']}"

    world.at_end(sized, "a Widget's status says the size its spec asks for")


def test_story_leaves_the_startup_out_but_what_the_slice_needs() -> None:
    result = h.explore(noisy_startup, seed=0, budget=20, fixed=False, prove_minimal=False)
    cx = result.counterexample
    assert cx is not None, result.outcome
    assert not h.explore(noisy_startup, seed=0, budget=20, fixed=True).found
    story = cx.story()
    text = str(story)
    # the start-up: told in the trace, never a line of the story
    for noise in (*NOISE, "get Namespace", "list CustomResourceDefinition"):
        assert noise not in text, text
    assert "startup step(s) left out" in story.lines[0], text
    # the start-up step the slice needs (the defaults the reconcile read) keeps its line, before the harm
    created = next(i for i, x in enumerate(story.lines)
                   if "widget-operator: create ConfigMap default/widget-defaults: wrote" in x)
    harm = next(i for i, x in enumerate(story.lines) if "widget-operator: update_status Widget default/w" in x
                or "widget-operator: update Widget default/w" in x)
    assert created < harm, text
    # and it is honest: every start-up step left out is still in the slice
    told = cx.told()
    startup = {r.step for r in told if r.actor == "widget-operator"
               and any(n.step == r.step and n.text in NOISE for n in told.notes)}
    assert startup and startup <= story.causal and not startup & story.steps, text
