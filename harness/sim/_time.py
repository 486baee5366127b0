"""Virtual time: whole nanoseconds (as Go's ``time.Duration``), and the Trio clock that shows it to Trio in seconds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from ._world import World

#: virtual time's resolution: Go's ``time.Duration`` counts whole nanoseconds, and so does the world's clock
TICKS_PER_SECOND = 1_000_000_000
#: "never" in nanoseconds (an unset horizon, a window without end): Go's largest Duration, 292 years
NEVER = (1 << 63) - 1


def to_ns(seconds: float) -> int:
    """``seconds`` as whole nanoseconds, rounded to the nearest (infinity is :data:`NEVER`)."""
    if seconds == math.inf:
        return NEVER
    return round(seconds * TICKS_PER_SECOND)


def ceil_ns(seconds: float) -> int:
    """The first whole nanosecond at or after ``seconds`` (a deadline is never reached early)."""
    if seconds == math.inf:
        return NEVER
    t = round(seconds * TICKS_PER_SECOND)  # an instant on the grid comes back as itself
    return t + 1 if t / TICKS_PER_SECOND < seconds else t


def to_seconds(ns: int) -> float:
    """Nanoseconds as the seconds the public API shows (:data:`NEVER` is infinity)."""
    return math.inf if ns >= NEVER else ns / TICKS_PER_SECOND


def later(now: int, delay: float) -> int:
    """``now`` (nanoseconds) plus ``delay`` seconds as a Go Duration: whole nanoseconds, a positive one at least 1.

    Why: in float seconds ``5 - (10.005 - 5.005)`` is 1e-15, and a controller
    that requeues after that fires again at the same instant for ever (a
    livelock Go cannot have: its durations are whole nanoseconds, and a
    positive one moves the clock). The clock is an integer count of
    nanoseconds, and a positive delay moves it by at least one.
    """
    if delay <= 0:
        return now
    if delay == math.inf or now >= NEVER:
        return NEVER
    d = round(delay * TICKS_PER_SECOND)
    t = now + d if d > 0 else now + 1  # (no min/max: this runs at every step with a window)
    return t if t < NEVER else NEVER


class VirtualClock(trio.abc.Clock):
    """Trio's view of the world's virtual time; jumps only when the world advances."""

    def __init__(self, world: World | None) -> None:
        #: the world whose time this is; :func:`run_batch` moves it from run to run
        self._world = world

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self._world._now_ns / TICKS_PER_SECOND if self._world is not None else 0.0

    def deadline_to_sleep_time(self, deadline: float) -> float:
        w = self._world
        if w is None:
            return 86_400.0
        if w._advancing and deadline != math.inf:
            t = ceil_ns(deadline)  # the deadline's nanosecond: Trio sees it reached, never passed early
            if t > w._now_ns:
                w._now_ns = t
            return 0.0
        # Not ours to move: let Trio idle so the watcher can report the block.
        return 0.0 if deadline <= w._now_ns / TICKS_PER_SECOND else 86_400.0
