"""Rate limiters of ``k8s.io/client-go/util/workqueue/default_rate_limiters.go``, in virtual time.

``When(item)`` both answers and *records*: the per-item limiter bumps its failure
count, the bucket takes a token. That is why ``MaxOf`` must call every limiter
(as ``MaxOfRateLimiter.When`` does) and why ``AddRateLimited`` from many distinct items drives the
bucket negative without bound.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from harness.sim import World


class RateLimiter(Protocol):
    """``workqueue.TypedRateLimiter``: ``when`` records a failure and returns the delay."""

    def when(self, item: Hashable) -> float:
        """Record one more failure of ``item`` and return how long its re-add waits, in seconds."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item``: its next failure starts from the base delay again."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of ``item`` are recorded (``NumRequeues``)."""
        ...

    def tracked(self) -> int:
        """How many items the limiter keeps per-item state for (the failure map's size)."""
        ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures[item]`` capped at ``max_delay``; ``forget`` clears the count.

    The failure map is a dict (membership only, insertion order), so identity
    items work and no hash order leaks into a decision.
    """

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """``base_delay * 2**failures``, capped at ``max_delay``; counts this failure."""
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 64:  # 2**64 * base overflows any sane cap; Go guards the same way
            return self.max_delay
        return min(self.base_delay * float(2**exp), self.max_delay)

    def forget(self, item: Hashable) -> None:
        """Clear ``item``'s failure count."""
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """``item``'s failure count."""
        return self._failures.get(item, 0)

    def tracked(self) -> int:
        """How many items have a failure count."""
        return len(self._failures)


class BucketRateLimiter:
    """A global token bucket (``golang.org/x/time/rate`` ``Limiter.Reserve().Delay()``).

    Starts full with ``burst`` tokens and refills at ``qps`` per virtual second.
    Each ``when`` takes one token *now*, so the balance may go negative; the
    delay is ``max(0, -tokens_after / qps)``. ``forget`` does nothing.
    """

    def __init__(self, world: World, qps: float = 10.0, burst: int = 100) -> None:
        self._world = world
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self._last = world.now

    def _advance(self) -> None:
        now = self._world.now
        if now > self._last:
            self.tokens = min(float(self.burst), self.tokens + (now - self._last) * self.qps)
            self._last = now

    def when(self, item: Hashable) -> float:
        """Take one token now (the balance may go negative) and return the wait until it is repaid."""
        self._advance()
        self.tokens -= 1.0
        return max(0.0, -self.tokens / self.qps)

    def forget(self, item: Hashable) -> None:
        """Nothing: the bucket is shared by every item."""
        pass

    def num_requeues(self, item: Hashable) -> int:
        """Always 0: the bucket keeps no per-item count."""
        return 0

    def tracked(self) -> int:
        """Always 0: the bucket keeps no per-item state."""
        return 0


class MaxOfRateLimiter:
    """Calls **every** limiter's ``when`` and returns the largest delay."""

    def __init__(self, *limiters: RateLimiter) -> None:
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        """Ask every limiter (each records the failure) and return the largest delay."""
        return max(limiter.when(item) for limiter in list(self.limiters))

    def forget(self, item: Hashable) -> None:
        """Forget ``item`` in every limiter."""
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """The largest failure count any limiter keeps for ``item``."""
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def tracked(self) -> int:
        """The per-item entries of every limiter, summed."""
        return sum(limiter.tracked() for limiter in self.limiters)


def default_controller_rate_limiter(world: World) -> MaxOfRateLimiter:
    """``DefaultControllerRateLimiter()``: MaxOf(ItemExponential(5ms, 1000s), Bucket(10 qps, 100 burst))."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(world, 10.0, 100))
