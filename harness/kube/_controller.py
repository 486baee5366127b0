"""A controller-runtime style controller: a rate-limited work queue and N workers.

``Controller`` reproduces ``sigs.k8s.io/controller-runtime``
``pkg/internal/controller/controller.go`` ``reconcileHandler`` exactly (section
0.3): an error gives ``AddRateLimited``; ``RequeueAfter > 0`` gives ``Forget``
then ``AddAfter``; ``Requeue`` gives ``AddRateLimited``; otherwise ``Forget``;
``Done`` always. Workers (``MaxConcurrentReconciles``) are daemon actors
``"<name>/worker-<i>"``.

What counts as "reconcile returned an error": an exception of one of the
``error_types`` (default :class:`ApiError`, i.e. a failed request the model did
not handle). Any other exception is a bug in the model and propagates, so it
shows as an "actor raised" verdict instead of being retried forever.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from harness.sim import World

from ._errors import ApiError
from ._process import ControllerProcess
from ._ratelimit import RateLimiter
from ._workqueue import ShutDown, WorkQueue

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Result:
    """``reconcile.Result``: ``requeue_after`` in virtual seconds."""

    requeue: bool = False
    requeue_after: float = 0.0


Reconciler = Callable[[T], Awaitable["Result | None"]]


class Controller(Generic[T]):
    """``controller.New(name, mgr, Options{Reconciler, MaxConcurrentReconciles, RateLimiter})``."""

    def __init__(
        self,
        world: World,
        name: str,
        reconcile: Callable[[T], Awaitable[Result | None]],
        *,
        workers: int = 1,
        rate_limiter: RateLimiter | None = None,
        error_types: tuple[type[BaseException], ...] = (ApiError,),
        process: ControllerProcess | None = None,
    ) -> None:
        self._world = world
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.error_types = error_types
        self.process = process
        self.queue: WorkQueue[T] = WorkQueue(world, name, rate_limiter, process=process)
        self.reconciles = 0
        self.errors = 0
        self.last_error: BaseException | None = None
        self._started = False

    def start(self) -> None:
        """Spawn the workers (daemon actors)."""
        if self._started:
            return
        self._started = True
        for i in range(1, self.workers + 1):
            name = f"{self.name}/worker-{i}"
            if self.process is not None:
                self.process.spawn(name, self._worker, daemon=True)
            else:
                self._world.spawn(name, self._worker, daemon=True)

    def enqueue(self, item: T) -> None:
        """``queue.Add``: what event handlers call."""
        self.queue.add(item)

    async def _worker(self) -> None:
        while True:
            try:
                item = await self.queue.get()
            except ShutDown:
                return
            await self.reconcile_handler(item)

    async def reconcile_handler(self, item: T) -> None:
        """One ``processNextWorkItem`` after ``Get``: reconcile, then requeue as controller-runtime does."""
        queue = self.queue
        try:
            self.reconciles += 1
            try:
                result = await self.reconcile(item)
            except self.error_types as err:
                self.errors += 1
                self.last_error = err
                queue.add_rate_limited(item)
                return
            if result is None:
                result = Result()
            if result.requeue_after > 0:
                queue.forget(item)
                queue.add_after(item, result.requeue_after)
            elif result.requeue:
                queue.add_rate_limited(item)
            else:
                queue.forget(item)
        finally:
            queue.done(item)
