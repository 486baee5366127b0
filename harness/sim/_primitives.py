"""The world's primitives: ``world.Event()``, ``world.Queue()``, ``world.Lock()``.

Waiting on one is a yield point of the world, under either clock: the
deterministic scheduler enables the wait once its guard holds; the real clock
parks the task until a state change (``_wake``) lets the guard hold.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from ._world import World

T = TypeVar("T")


class Event:
    """A harness event: ``wait()`` is a yield point enabled once the event is set."""

    __slots__ = ("_set", "_world")

    def __init__(self, world: World) -> None:
        self._world = world
        self._set = False

    def set(self) -> None:
        self._set = True
        wake = self._world._wake
        if wake is not None:
            wake()

    def is_set(self) -> bool:
        return self._set

    async def wait(self, label: str = "wait for event", *, idle: bool = False) -> None:
        """Wait until set; ``idle=True`` marks a daemon's wait for work (not a deadlock)."""
        await self._world._yield(label, guard=self.is_set, idle=idle)


class Queue(Generic[T]):
    """An unbounded FIFO whose ``get()`` is a yield point enabled while it holds items."""

    __slots__ = ("_items", "_world")

    def __init__(self, world: World) -> None:
        self._world = world
        self._items: deque[T] = deque()

    def put_nowait(self, item: T) -> None:
        self._items.append(item)
        wake = self._world._wake
        if wake is not None:
            wake()

    def __len__(self) -> int:
        return len(self._items)

    def _ready(self) -> bool:
        return bool(self._items)

    async def get(self, label: str = "get", *, key: str | None = None) -> T:
        await self._world._yield(label, key, None, self._ready, None, idle=True)
        return self._items.popleft()




class Lock:
    """A harness lock: acquiring is a yield point enabled while the lock is free."""

    __slots__ = ("_owner", "_world")

    def __init__(self, world: World) -> None:
        self._world = world
        self._owner: str | None = None

    def _free(self) -> bool:
        return self._owner is None

    def locked(self) -> bool:
        return self._owner is not None

    async def acquire(self, label: str = "acquire lock") -> None:
        await self._world._yield(label, guard=self._free)
        cur = self._world._me()
        self._owner = cur.name if cur is not None else "?"

    def release(self) -> None:
        self._owner = None
        wake = self._world._wake
        if wake is not None:
            wake()

    async def __aenter__(self) -> Lock:
        await self.acquire()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()
