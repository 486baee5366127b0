"""Virtual time: the nanosecond grid every instant lies on, and the Trio clock that shows it to Trio."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from ._world import World

#: virtual time's resolution: Go's ``time.Duration`` counts whole nanoseconds
TICKS_PER_SECOND = 1_000_000_000


def on_grid(t: float) -> float:
    """``t`` rounded to a whole nanosecond (every instant the scheduler keeps is on this grid)."""
    return t if t == math.inf else round(t * TICKS_PER_SECOND) / TICKS_PER_SECOND


def later(now: float, delay: float) -> float:
    """``now + delay`` on the nanosecond grid; a positive delay is at least one nanosecond.

    Why: in float seconds ``5 - (10.005 - 5.005)`` is 1e-15, and a controller
    that requeues after that fires again at the same instant for ever (a
    livelock Go cannot have: its durations are whole nanoseconds, and a
    positive one moves the clock). Here every delay ends on the grid and a
    positive one ends at least one tick later, so time always moves.
    """
    if delay <= 0:
        return now
    if delay == math.inf:
        return math.inf
    return max(round((now + delay) * TICKS_PER_SECOND), round(now * TICKS_PER_SECOND) + 1) / TICKS_PER_SECOND



class VirtualClock(trio.abc.Clock):
    """Trio's view of the world's virtual time; jumps only when the world advances."""

    def __init__(self, world: World | None) -> None:
        #: the world whose time this is; :func:`run_batch` moves it from run to run
        self._world = world

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self._world._now if self._world is not None else 0.0

    def deadline_to_sleep_time(self, deadline: float) -> float:
        w = self._world
        if w is None:
            return 86_400.0
        if w._advancing and deadline != math.inf:
            if deadline > w._now:
                w._now = deadline
            return 0.0
        # Not ours to move: let Trio idle so the watcher can report the block.
        return 0.0 if deadline <= w._now else 86_400.0
