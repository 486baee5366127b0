"""``retry.RetryOnConflict`` (``k8s.io/client-go/util/retry/util.go``) in virtual time.

``DefaultBackoff`` is ``{Duration: 10ms, Factor: 5, Jitter: 0.1, Steps: 4}``:
up to 4 attempts with sleeps of about 10, 50 and 250 ms. The jitter is not
drawn (it would only add choices that change no ordering); each sleep is a
harness ``world.sleep``, a yield point. Each attempt must re-read the object:
``fn`` is called afresh, and a ``fn`` that reads a lister re-reads a stale cache.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from harness.sim import World

from ._errors import Conflict

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    """``wait.Backoff`` without jitter: ``steps`` attempts, sleeps ``duration * factor**i``."""

    duration: float = 0.010
    factor: float = 5.0
    steps: int = 4


DEFAULT_BACKOFF = Backoff()


async def retry_on_conflict(world: World, fn: Callable[[], Awaitable[T]], backoff: Backoff = DEFAULT_BACKOFF) -> T:
    """Call ``fn`` until it does not raise :class:`Conflict`; the last Conflict propagates."""
    delay = backoff.duration
    for attempt in range(backoff.steps):
        try:
            return await fn()
        except Conflict:
            if attempt == backoff.steps - 1:
                raise
        await world.sleep(delay, f"retry on conflict: back off {delay * 1000:g} ms")
        delay *= backoff.factor
    raise AssertionError("unreachable")  # pragma: no cover
