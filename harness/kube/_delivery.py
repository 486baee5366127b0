"""The delivery of watch events: the window each one is delivered in, and the faults that break a watch before it.

Shared by the informer's reflector (``_informer.py``) and the HTTP API's watch
connections (``_http/_watch.py``), which both read the apiserver's watch and
both deliver every event inside ``[commit + latency, commit + latency +
max_lag]``: with the same default window and the same fault points, a plan
names a broken watch the same way whoever reads it.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.sim import World

    from ._revisions import WatchEvent

#: default ``max_lag``: seconds an informer event may come after its nominal time
DEFAULT_MAX_LAG = 2.0


def watch_break(
    world: World, name: str, ev: WatchEvent, last_rv: int, *, drops: bool, ends: bool,
    drop_then: str = "relists after backoff", end_then: str | None = None,
) -> str | None:
    """The two reception fault points of one watch event: does the watch break before ``ev`` is sent?

    ``"drop"`` (``watch_drop``: the watch ends with an error), ``"end"``
    (``watch_end``: it closes cleanly) or None. Shared by the informer's
    reflector and the HTTP API's watch connections (``_http/_watch.py``), so a
    plan names a broken watch the same way whoever reads it; ``drop_then`` and
    ``end_then`` say what the reader does next.
    """
    obj = ev.object
    # labels read whole with their revisions and without them (a plan entry's identity drops "rv=N")
    head = f"{ev.type} {obj.key} rv={obj.resource_version}"
    if world.fault("watch_drop", f"{name} watch drops before {head} is sent; {drop_then}", key=obj.ref,
                   default=drops):
        return "drop"
    then = end_then if end_then is not None else f"resumes from the last received rv={last_rv}"
    if world.fault("watch_end", f"{name} watch ends before {head} is sent; {then}", key=obj.ref, default=ends):
        return "end"
    return None


def note_lost(world: World, events: builtins.list[WatchEvent], drop: bool, then: str, *, rv: int = 0) -> None:
    """The note of a broken watch: the events it lost (never sent, so never delivered) and what comes next."""
    said = ", ".join(f"{e.type} {e.object.key} rv={e.object.resource_version}" for e in events)
    world.note(
        f"watch {'drops' if drop else 'ends'}: lost (never delivered) {said}; {then}", kind="watch",
        keys=[e.object.ref for e in events], lost=[f"{e.type} {e.object.key} rv={e.object.resource_version}"
                                                    for e in events], drop=drop, rv=rv,
    )
