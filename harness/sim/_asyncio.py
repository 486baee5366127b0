"""asyncio under the world: an operator's event loop as one process of the world, its I/O the world's choices.

Most Python operators are asyncio code (kopf, ``kubernetes_asyncio``, a
lightkube operator started with ``anyio.run``). Left to itself, an asyncio
loop's order comes from the real network and the real clock: never explored,
and not even reproducible. :class:`WorldLoop` is an asyncio event loop
(``asyncio.BaseEventLoop``: futures, tasks, ``asyncio.timeout``, queues and
locks are asyncio's own) run by the world:

* **the loop is the operator's actor**, and runs as asyncio runs: its ready
  callbacks in FIFO order, each task's step to its next ``await``. What
  asyncio's own order cannot decide, the world does: when a response comes,
  when a watch event arrives, when a timer's instant comes, when the loop gets
  the CPU again relative to the rest of the world (its wake-up is a choice,
  ``wake at kopf_op.py:41 in handler``). The ready queue never decides an order
  the real network would decide; and the world never makes an order asyncio
  cannot (a task's first step postponed past later I/O: its ready queue is
  FIFO);
* **every asyncio task that talks to the world is an actor** named after the
  task (``kopf-op/watcher-for-configmaps.v1@default``): an operation of the
  world it awaits (a request to the apiserver: :meth:`WorldLoop.run_trio`) runs
  as that actor's Trio code, with the world's yield points, while the loop goes
  on with its other tasks, as a request in flight lets it;
* **time is virtual**: ``loop.time()`` is the world's clock; the loop parks with
  its earliest timer (``asyncio.sleep``, ``call_later``, ``wait_for``,
  ``asyncio.timeout``) as its Trio deadline, so the world moves the clock to it
  when nothing else is enabled; ``time.monotonic()`` in its tasks reads the
  same value, and ``time.time()`` and ``datetime.now()`` the world's epoch
  plus it (``_clocks``);
* **blocking code in threads** (``run_in_executor``, ``asyncio.to_thread``;
  kopf's sync handlers) runs in a real thread in lockstep with the world
  (``_lockstep.py``): one thread or actor at a time, never both;
* **what asyncio leaves to memory addresses** is given an order: tasks one step
  creates (``asyncio.as_completed`` and ``asyncio.wait`` create theirs from a
  set) start in the order of their coroutines' names and plain arguments.

What the world cannot order is refused as a model error at the model's line: a
raw socket or file descriptor (``add_reader``), a child process, a connection
to a host the scenario does not serve. Signal handlers are kept and never
called (the world sends no signal).

Rejected alternatives: trio-asyncio (one Trio task runs the loop, but a task
that waits on the world parks every other task, and time is Trio's real
clock); a loop on a virtual clock alone (looptime: time becomes virtual, but
I/O still comes from a real network); every task an actor whose steps the
world orders freely (it explored orders asyncio cannot produce: a task's first
step postponed past responses the loop handled after it, which broke kopf's
startup in a way no real run can).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import inspect
import itertools
import re
import sys
import threading
import types
import weakref
from asyncio import events
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio
import trio.lowlevel as tl
from sniffio import thread_local as _sniffio

from .._errors import HarnessError
from ._actors import FOREIGN_FRAMES, MECHANICAL, _whose, shown_name
from ._tasks import VERBATIM

if TYPE_CHECKING:
    from ._world import World

T = TypeVar("T")

# asyncio's pure-Python task: its step and wake-up callbacks are bound methods, so ``call_soon`` sees whose they are
_PyTask: type[asyncio.Task[Any]] = asyncio.tasks._PyTask  # type: ignore[attr-defined]
_TASKS = (asyncio.Task, _PyTask)  # (the pure-Python class is not a subclass of the C one)


class Network(Protocol):
    """What an operator's loop may connect to: the scenario's apiserver (``harness.kube``), nothing else."""

    def resolve(self, host: str, port: int | str | None) -> list[tuple[Any, ...]] | None:
        """``getaddrinfo``'s answer for ``host``, or None when the world does not serve it."""

    def connect(self, loop: WorldLoop, protocol_factory: Callable[[], asyncio.BaseProtocol], host: str,
                port: int) -> tuple[asyncio.BaseTransport, asyncio.BaseProtocol] | None:
        """An in-memory connection to ``host:port`` (an address :meth:`resolve` gave), or None."""


class OutsideTheWorld(Exception):
    """An operator's loop was asked for something the world cannot order (a socket, a child process)."""


class _Agent:
    """The actor of one asyncio task that awaits the world: the Trio task running its operations, in order."""

    __slots__ = ("event", "jobs", "name", "trio_task")

    def __init__(self, name: str) -> None:
        self.name = name
        self.trio_task: tl.Task | None = None
        self.jobs: deque[tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = deque()
        self.event: trio.Event | None = None  # set while it waits for a job


def _coroutine_frames(task: asyncio.Task[Any] | None) -> Iterator[FrameType]:
    coro: Any = task.get_coro() if task is not None else None
    for _ in range(200):
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            return
        yield frame
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)


def _short_name(coro: Any) -> str:
    """An actor's name for a task: its coroutine's function (``watcher``), as a Trio task's is."""
    code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
    return getattr(code, "co_name", None) or type(coro).__name__


_PLAIN = (str, int, float, bool, type(None))

#: coroutines a client library runs as a task of their own for the task making a request
_CLIENT_HELPERS = frozenset({"write_bytes"})  # aiohttp's ClientRequest.write_bytes (a request's body)


def _start_key(handle: events.Handle) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A new task's first step, in a canonical order: its coroutine's function, then its plain arguments."""
    task: Any = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    coro: Any = task.get_coro() if task is not None else None
    frame = getattr(coro, "cr_frame", None)
    args = () if frame is None else tuple(sorted((k, repr(v)) for k, v in frame.f_locals.items()
                                                 if isinstance(v, _PLAIN)))
    return (_short_name(coro), args)


def _close_unstarted(roots: list[Any], limit: int = 5000) -> None:
    """Close the coroutines the abandoned tasks hold but never started (kopf's ``guard(coro)`` holds the task's
    real coroutine; a scheduler's queue holds the ones it was to spawn), so none is left for the garbage collector to
    call "never awaited" in whichever later run or test it collects them. A bounded walk of what their frames hold."""
    seen: set[int] = set()
    todo: deque[tuple[Any, int]] = deque((r, 0) for r in roots)
    while todo and len(seen) < limit:
        obj, depth = todo.popleft()
        if id(obj) in seen or depth > 5:
            continue
        seen.add(id(obj))
        if isinstance(obj, types.CoroutineType):
            frame = obj.cr_frame
            if frame is None:
                continue
            if inspect.getcoroutinestate(obj) == inspect.CORO_CREATED:
                todo.extend((v, depth + 1) for v in frame.f_locals.values())
                with contextlib.suppress(BaseException):
                    obj.close()
                continue
            todo.extend((v, depth + 1) for v in frame.f_locals.values())
            if obj.cr_await is not None:
                todo.append((obj.cr_await, depth + 1))
        elif isinstance(obj, (list, tuple, set, frozenset, deque)):
            todo.extend((v, depth + 1) for v in list(obj)[:200])
        elif isinstance(obj, dict):
            todo.extend((v, depth + 1) for v in list(obj.values())[:200])
        elif isinstance(obj, (str, bytes, int, float, type, types.ModuleType, types.FunctionType)):
            continue
        else:
            attrs = getattr(obj, "__dict__", None)
            if isinstance(attrs, dict):
                todo.extend((v, depth + 1) for v in list(attrs.values())[:200])


def actor_name(name: str) -> str:
    """A name the operator gave a task (kopf's ``watcher for configmaps.v1@default``) as one word of an actor's
    name: no spaces or slashes (a slash separates an actor from its parent), no memory addresses."""
    name = re.sub(r"<([\w.]+) object at 0x[0-9a-fA-F]+>", lambda m: m.group(1).rpartition(".")[2], name)
    name = re.sub(r"\s*\bat 0x[0-9a-fA-F]+|0x[0-9a-fA-F]+", "", name)  # (an address differs from process to process)
    return re.sub(r"[\s/]+", "-", name).strip("-") or "task"


def _task_of(handle: events.Handle) -> asyncio.Task[Any] | None:
    task = getattr(handle._callback, "__self__", None)  # type: ignore[attr-defined]
    return task if isinstance(task, _TASKS) else None


def running_world_loop() -> WorldLoop | None:
    """The :class:`WorldLoop` whose step is running now (an operator's asyncio code), else None (Trio code)."""
    loop = events._get_running_loop()
    return loop if isinstance(loop, WorldLoop) else None


class WorldLoop(asyncio.BaseEventLoop):
    """An asyncio event loop run by the world: one actor, FIFO as asyncio, its I/O and time the world's (see the
    module)."""

    _ready: deque[events.Handle]  # (asyncio's own, not in its stubs)
    _scheduled: list[events.TimerHandle]

    def __init__(self, world: World, network: Network | None = None) -> None:
        super().__init__()
        self.world = world
        self.network = network
        self._nursery: trio.Nursery | None = None
        self._names = itertools.count(1)
        #: the loop's own Trio task (the operator's actor) while it parks; set to wake it
        self._event: trio.Event | None = None
        self._scope: trio.CancelScope | None = None
        self._running_step = False
        #: the first steps of tasks the running step created: queued, in a canonical order, when it is over
        self._starts: list[events.Handle] = []
        #: the actors of tasks that awaited the world, by task
        self._agents: dict[asyncio.Task[Any], _Agent] = {}
        self._tasks: list[asyncio.Task[Any]] = []
        self._ending = False
        self._agens_alive: list[Any] = []
        self._trio_thread = threading.get_ident()
        self._from_threads = False
        self._signals: dict[int, tuple[Callable[..., Any], tuple[Any, ...]]] = {}
        self._tasks_seen: set[asyncio.Task[Any]] = set()
        self._helper_of: dict[object, asyncio.Task[Any] | None] = {}
        self.install_lockstep()

    @staticmethod
    def install_lockstep() -> None:
        """Make the process ready for lockstep threads (``_lockstep``): ``time.sleep``, ``threading.Event.wait`` and
        a blocked lock's acquire in one are the world's, and the locks made from now on hand off (``_handoff``).
        Once per process; a loop does it when made, an asyncio ``Operator`` when built."""
        from ._lockstep import install

        install()

    # ------------------------------------------------------------------ running
    async def run(self, coro: Awaitable[T]) -> T:
        """Run ``coro`` as the loop's main task (``asyncio.run`` under the world) and return what it returns.

        The calling Trio task (an actor: the operator) runs the loop. When the
        main task ends, the tasks still pending are cancelled and run to their
        end, as ``asyncio.run`` does. Cancelled from outside (a crash, the run's
        end), the pending tasks are cancelled and stepped at once (nothing may
        wait then), and what still waits is closed where it waits.
        """
        if self._nursery is not None:
            raise RuntimeError("a WorldLoop runs once")
        self._thread_id = threading.get_ident()
        self._trio_thread = self._thread_id
        me = tl.current_task()
        FOREIGN_FRAMES[me] = self._next_frames
        main: asyncio.Task[T] | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                main = self.create_task(coro, context=contextvars.copy_context())
                await self._serve(lambda: main is not None and main.done())
                for task in [t for t in self._tasks if not t.done()]:
                    task.cancel()  # asyncio.run's _cancel_all_tasks
                await self._serve(lambda: all(t.done() for t in self._tasks))
                for agent in self._agents.values():
                    if agent.event is not None:
                        agent.event.set()  # (its task is done: it ends)
        finally:
            FOREIGN_FRAMES.pop(me, None)
            self._abandon()
            self._thread_id = None  # type: ignore[assignment]
            self._closed = True
        assert main is not None
        return main.result()

    def _next_frames(self) -> Iterator[FrameType]:
        """Where the loop goes on when woken: the task of its first ready callback (else the main task)."""
        task = next((t for h in self._ready if (t := _task_of(h)) is not None), None)
        if task is None:  # woken by its deadline: the task a due timer wakes (``asyncio.sleep``'s future's waiter)
            for timer in sorted(t for t in self._scheduled if not t.cancelled()):
                fut = next(iter(timer._args), None)
                callbacks = getattr(fut, "_callbacks", None) or ()
                task = next((w for cb, _ctx in callbacks if isinstance(w := getattr(cb, "__self__", None), _TASKS)),
                            None)
                if task is not None:
                    break
        return _coroutine_frames(task if task is not None else (self._tasks[0] if self._tasks else None))

    async def _serve(self, done: Callable[[], bool]) -> None:
        """Run the loop: its ready callbacks FIFO, its due timers; park until woken or the earliest timer."""
        while True:
            self._iterate()
            if self._ready:
                await trio.lowlevel.checkpoint()  # (a callback that schedules itself forever still lets Trio in)
                continue
            if done():
                return
            await self._park()

    def _iterate(self) -> None:
        """One iteration of asyncio's ``_run_once`` without I/O (the world delivers it): due timers, then the
        callbacks ready when it began, in order."""
        scheduled = self._scheduled
        now = self.time()
        while scheduled and (scheduled[0].cancelled() or scheduled[0].when() <= now):
            timer = heapq.heappop(scheduled)
            timer._scheduled = False  # type: ignore[attr-defined]
            if not timer.cancelled():
                self._ready.append(timer)
        if self._ready:
            self._run_ready(len(self._ready))

    def _run_ready(self, count: int) -> None:
        saved_loop = events._get_running_loop()
        saved_library = _sniffio.name
        saved_hooks = sys.get_asyncgen_hooks()
        events._set_running_loop(self)
        _sniffio.name = "asyncio"  # (Trio names itself for the whole thread; anyio asks sniffio)
        sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
        ready = self._ready
        try:
            for _ in range(count):
                if not ready:
                    break
                handle = ready.popleft()
                if handle._cancelled:
                    continue
                self._running_step = True
                try:
                    handle._run()
                finally:
                    self._running_step = False
                if self._starts:
                    # in an order that does not depend on memory addresses: asyncio.as_completed and asyncio.wait
                    # create their tasks in the order of a set of coroutines, which is by id()
                    ready.extend(sorted(self._starts, key=_start_key))
                    self._starts.clear()
        finally:
            sys.set_asyncgen_hooks(*saved_hooks)
            _sniffio.name = saved_library
            events._set_running_loop(saved_loop)

    async def _park(self) -> None:
        """Wait until something makes a callback ready (an operation settled, a delivery) or the earliest timer."""
        self._event = trio.Event()
        try:
            with trio.CancelScope(deadline=self._next_deadline()) as scope:
                self._scope = scope
                await self._event.wait()
        finally:
            self._event = self._scope = None

    def _next_deadline(self) -> float:
        scheduled = self._scheduled
        while scheduled and scheduled[0].cancelled():
            heapq.heappop(scheduled)
        return scheduled[0].when() if scheduled else float("inf")

    def _wake(self) -> None:
        if self._event is not None and threading.get_ident() == self._trio_thread:
            self._event.set()

    def _abandon(self) -> None:
        """The loop ends with tasks pending (a crash, the run's end): each is cancelled, as ``asyncio.run`` does.

        Trio is cancelling, so nothing here may wait: the pending tasks are
        cancelled and their steps run at once (their ``finally`` and ``except
        CancelledError`` run as they would); an operation of the world one of
        them starts is refused (cancelled); timers never fire. A task still
        pending after that is closed where it waits.
        """
        self._ending = True
        try:
            # a task cancelled before its first step never runs its body: what its coroutine holds unstarted
            # (kopf's guard(coro)) would be left "never awaited"
            _close_unstarted([c for t in self._tasks if not t.done()
                              if inspect.getcoroutinestate(c := t.get_coro()) == inspect.CORO_CREATED])  # type: ignore[arg-type]
            for _ in range(50):
                pending = [t for t in self._tasks if not t.done()]
                if not pending:
                    break
                for task in pending:
                    if not task.cancelling():
                        task.cancel()
                for agent in self._agents.values():
                    while agent.jobs:
                        agent.jobs.popleft()[1].cancel()
                if not self._ready:
                    break
                while self._ready:
                    self._run_ready(len(self._ready))
            saved = events._get_running_loop()
            events._set_running_loop(self)
            try:
                pending = [t for t in self._tasks if not t.done()]
                _close_unstarted([t.get_coro() for t in pending])
                for task in pending:
                    task._log_destroy_pending = False  # type: ignore[attr-defined]
                    with contextlib.suppress(BaseException):
                        task.get_coro().close()
            finally:
                events._set_running_loop(saved)
        finally:
            for agent in self._agents.values():
                MECHANICAL.discard(agent.trio_task)
            self._tasks.clear()
            self._agents.clear()
            self._helper_of.clear()
            self._agens_alive.clear()

    # ------------------------------------------------------------------ the world's operations
    def run_trio(self, fn: Callable[[], Awaitable[T]], task: object = None) -> asyncio.Future[T]:
        """A future of ``await fn()`` run as the Trio code of a task's actor: its yield points are that actor's.

        ``task`` is the asyncio task whose operation it is (default: the one
        running). For the harness's own adapters (the apiserver's in-memory
        connections): call it from a task's step and await the future.
        """
        owner = task if isinstance(task, _TASKS) else asyncio.current_task(self)
        if owner is None:
            raise RuntimeError("run_trio is called from an asyncio task's step under a WorldLoop")
        fut: asyncio.Future[T] = self.create_future()
        if self._ending:
            fut.cancel()
            return fut
        agent = self._agents.get(owner)
        if agent is None:
            agent = self._agents[owner] = _Agent(self._name_of(owner))
            nursery = self._nursery
            assert nursery is not None
            known = {a.trio_task for a in self._agents.values()}
            nursery.start_soon(self._agent, owner, agent, name=VERBATIM + agent.name)
            agent.trio_task = next(t for t in nursery.child_tasks
                                   if t.name == VERBATIM + agent.name and t not in known)
            MECHANICAL.add(agent.trio_task)  # (its start only begins the operation: the operation's points decide)
        agent.jobs.append((fn, fut))
        if agent.event is not None and not agent.event.is_set():
            assert agent.trio_task is not None
            MECHANICAL.add(agent.trio_task)
            agent.event.set()
        return fut

    def _name_of(self, task: asyncio.Task[Any]) -> str:
        """A task's actor name: the name the operator gave it (``create_task(coro, name=...)``), else its
        coroutine's function."""
        name = task.get_name()
        if name.startswith("Task-") and name[5:].isdigit():
            return _short_name(task.get_coro())
        if re.fullmatch(r"[\w.<>]+", name):  # a function's qualified name (anyio names its tasks so): its last part
            return name.rpartition(".")[2] or name
        return actor_name(name)

    async def _agent(self, task: asyncio.Task[Any], agent: _Agent) -> None:
        """An actor that runs one task's operations of the world, in order, until the task is done."""
        me = tl.current_task()
        FOREIGN_FRAMES[me] = lambda: _coroutine_frames(task)
        try:
            while True:
                while agent.jobs:
                    fn, fut = agent.jobs.popleft()
                    await self._run_job(fn, fut)
                if task.done():
                    return
                agent.event = trio.Event()
                try:
                    await agent.event.wait()
                finally:
                    agent.event = None
        finally:
            FOREIGN_FRAMES.pop(me, None)

    async def _run_job(self, fn: Callable[[], Awaitable[Any]], fut: asyncio.Future[Any]) -> None:
        if fut.done():
            return
        with trio.CancelScope() as scope:
            def stopped(f: asyncio.Future[Any]) -> None:
                if f.cancelled():
                    scope.cancel()  # the task stopped awaiting it: the operation is cancelled where it waits

            fut.add_done_callback(stopped)
            outcome: tuple[bool, Any]
            try:
                outcome = (True, await fn())
            except HarnessError:
                raise  # the harness misused (a request the world does not serve): a model error, not the task's
            except Exception as exc:
                outcome = (False, exc)
            fut.remove_done_callback(stopped)
        if fut.done():
            return
        if outcome[0]:
            fut.set_result(outcome[1])
        else:
            fut.set_exception(outcome[1])

    def current_host(self) -> object:
        """The asyncio task running now (an opaque token for :meth:`run_trio`; None between steps)."""
        return asyncio.current_task(self) if self._running_step else None

    def current_name(self) -> str | None:
        """The actor name of the task running now, None between steps."""
        task = asyncio.current_task(self) if self._running_step else None
        return None if task is None else self._name_of(task)

    # ------------------------------------------------------------------ scheduling (asyncio's API)
    def time(self) -> float:
        return trio.current_time()

    def call_soon(self, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                  context: contextvars.Context | None = None) -> events.Handle:
        self._check_closed()  # type: ignore[attr-defined]
        handle = events.Handle(callback, args, self, context)
        if threading.get_ident() != self._trio_thread:
            self._from_threads = True  # (a lockstep thread runs while the world waits for it)
            self._ready.append(handle)
            return handle
        task = getattr(callback, "__self__", None)
        if self._running_step and isinstance(task, _TASKS) and task not in self._tasks_seen:
            self._tasks_seen.add(task)
            self._tasks.append(task)
            self._starts.append(handle)  # (a task created by the running step: queued when the step is over)
            return handle
        if isinstance(task, _TASKS) and task not in self._tasks_seen:
            self._tasks_seen.add(task)
            self._tasks.append(task)
        self._ready.append(handle)
        self._wake()
        return handle

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                             context: contextvars.Context | None = None) -> events.Handle:
        return self.call_soon(callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                context: contextvars.Context | None = None) -> events.TimerHandle:
        self._check_closed()  # type: ignore[attr-defined]
        timer = events.TimerHandle(when, callback, args, self, context)
        heapq.heappush(self._scheduled, timer)
        timer._scheduled = True  # type: ignore[attr-defined]
        if self._scope is not None and threading.get_ident() == self._trio_thread:
            self._scope.deadline = min(self._scope.deadline, when)
        return timer

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                   context: contextvars.Context | None = None) -> events.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: events.TimerHandle) -> None:
        pass  # the loop drops cancelled timers when it next looks at its deadline

    def take_from_threads(self) -> None:
        """Wake the loop for what a lockstep thread scheduled (on the Trio thread, once the thread handed back)."""
        if self._from_threads:
            self._from_threads = False
            if self._scope is not None:
                self._scope.deadline = min(self._scope.deadline, self._next_deadline())
            self._wake()

    def create_task(self, coro: Any, *, name: str | None = None,  # type: ignore[override]
                    context: contextvars.Context | None = None) -> asyncio.Task[Any]:
        if self._closed:  # (a finalizer after the run: the coroutine is closed, never left unawaited for the GC)
            with contextlib.suppress(BaseException):
                coro.close()
        self._check_closed()  # type: ignore[attr-defined]
        if self._task_factory is not None:  # type: ignore[attr-defined]
            raise OutsideTheWorld("a task factory set on the operator's loop would hide its tasks from the world; "
                                  "run the operator without loop.set_task_factory under the harness")
        # a name of the loop's own count: asyncio's default (Task-N) counts every task of the process
        task = _PyTask(coro, loop=self, name=name or f"Task-{next(self._names)}", context=context)
        if _short_name(coro) in _CLIENT_HELPERS and self._running_step:
            self._helper_of[task] = asyncio.current_task(self)
        return task

    def owner_of(self, task: object) -> object:
        """Whose operation a task's write is: a client library's helper task (aiohttp's ``write_bytes``, which
        sends a request's body) writes for the task that made the request."""
        return self._helper_of.get(task, task)

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        """asyncio's report of an error no task took (logged by the ``asyncio`` logger), except once the loop's run
        is over: an object of that run finalized later (aiohttp's "Unclosed client session" when the GC takes a
        crashed operator's session) belongs to no run, and must not turn up in whichever run the GC ran in."""
        if not self._closed:
            super().call_exception_handler(context)

    def _asyncgen_firstiter_hook(self, agen: Any) -> None:
        self._agens_alive.append(agen)

    def _asyncgen_finalizer_hook(self, agen: Any) -> None:
        if agen in self._agens_alive:
            self._agens_alive.remove(agen)
        if not self._closed:
            self.call_soon(self.create_task, agen.aclose())

    # ------------------------------------------------------------------ what the world cannot order
    def _outside(self, what: str) -> OutsideTheWorld:
        """A model error at the model's line (recorded on the world: an operator that catches it changes nothing)."""
        at = model_line_here()
        exc = OutsideTheWorld(
            f"{what}{f' at {at}' if at else ''}: under the world an operator's loop reaches only the scenario's "
            "apiserver (its kubeconfig), and its waits are the world's choices; a real socket, file descriptor, "
            "child process or signal would wait on the real clock. Serve what the operator needs from the "
            "scenario, or skip it under the harness")
        world = self.world
        actor = world._current
        world._fail("misuse", f"misuse in {actor.name if actor else 'the operator'}", str(exc), actor)
        return exc

    def call_now(self, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn`` at once as the loop would (running loop set): a watch delivery pushed to a connection."""
        if events._get_running_loop() is self:
            fn(*args)
            return
        saved_loop, saved_library = events._get_running_loop(), _sniffio.name
        events._set_running_loop(self)
        _sniffio.name = "asyncio"
        try:
            fn(*args)
        finally:
            _sniffio.name = saved_library
            events._set_running_loop(saved_loop)

    def add_reader(self, fd: Any, callback: Callable[..., Any], *args: Any) -> None:  # type: ignore[override]
        raise self._outside("the operator watches a file descriptor (loop.add_reader)")

    def add_writer(self, fd: Any, callback: Callable[..., Any], *args: Any) -> None:  # type: ignore[override]
        raise self._outside("the operator watches a file descriptor (loop.add_writer)")

    def add_signal_handler(self, sig: int, callback: Callable[..., Any], *args: Any) -> None:  # type: ignore[override]
        self._signals[sig] = (callback, args)  # kept, never called: the world sends no signal

    def remove_signal_handler(self, sig: int) -> bool:
        return self._signals.pop(sig, None) is not None

    async def subprocess_exec(self, *args: Any, **kwargs: Any) -> Any:
        raise self._outside("the operator starts a child process")

    async def subprocess_shell(self, *args: Any, **kwargs: Any) -> Any:
        raise self._outside("the operator starts a child process")

    async def getaddrinfo(self, host: Any, port: Any, *, family: int = 0, type: int = 0,
                          proto: int = 0, flags: int = 0) -> list[tuple[Any, ...]]:
        found = None if self.network is None else self.network.resolve(str(host), port)
        if found is None:
            raise self._outside(f"the operator resolves {host!r}, a host the scenario does not serve")
        return found

    async def sock_connect(self, sock: Any, address: Any) -> None:
        host, port = address[0], address[1]
        if self.network is None or self.network.resolve(str(host), port) is None:
            raise self._outside(f"the operator connects to {host}:{port}, a host the scenario does not serve")
        _CONNECTED[sock] = (str(host), int(port))

    async def create_connection(self, protocol_factory: Callable[[], asyncio.BaseProtocol],
                                host: str | None = None, port: int | None = None, **kwargs: Any) -> Any:
        sock = kwargs.get("sock")
        if sock is not None:
            host, port = _CONNECTED.pop(sock, (None, None))
            sock.close()  # (never connected: the in-memory connection stands for it)
        connected = None
        if self.network is not None and host is not None and port is not None:
            found = self.network.resolve(host, port)
            if found is not None:
                address = found[0][4]
                connected = self.network.connect(self, protocol_factory, str(address[0]), int(address[1]))
        if connected is None:
            raise self._outside(f"the operator connects to {host}:{port}, a host the scenario does not serve")
        return connected

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:  # type: ignore[override]
        from ._lockstep import run_in_thread

        self._check_closed()  # type: ignore[attr-defined]
        if self._ending:  # (the loop is being torn down: nothing new starts)
            fut: asyncio.Future[T] = self.create_future()
            fut.cancel()
            return fut
        return run_in_thread(self, func, args)

    def spawn_host(self, name: str, fn: Callable[[], Awaitable[None]]) -> None:
        """Start a Trio task in the loop's nursery (an actor named ``name``): a lockstep thread's side."""
        assert self._nursery is not None
        self._nursery.start_soon(fn, name=name)


def model_line_here() -> str | None:
    """``op.py:12 in main (...)``: the innermost frame of the model's own code on the calling stack."""
    import linecache

    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "_run_ready":  # (the step's own stack, not the world's)
        path = frame.f_code.co_filename
        if not path.startswith("<") and _whose(path) == 2:
            line = linecache.getline(path, frame.f_lineno).strip()
            return f"{shown_name(path)}:{frame.f_lineno} in {frame.f_code.co_name}" + (f" ({line[:80]})" if line else "")
        frame = frame.f_back  # type: ignore[assignment]
    return None


#: sockets aiohappyeyeballs "connected" to the apiserver's address: the in-memory connection replaces them
_CONNECTED: weakref.WeakKeyDictionary[Any, tuple[str, int]] = weakref.WeakKeyDictionary()


# --------------------------------------------------------------------------- a loop of its own, refused
#: the world of the running ``trio.run``, if it is a world's (set by ``World._main``)
UNDER_WORLD: tl.RunVar[object | None] = tl.RunVar("harness_world", default=None)

_RUN_FOREVER = asyncio.BaseEventLoop.run_forever


class AsyncioUnderTheWorld(HarnessError, RuntimeError):
    """An asyncio loop of its own (``asyncio.run``, ``loop.run_until_complete``) started from code the world runs on
    Trio: it would run outside the world, on the real clock, while every actor waits for it."""


def _in_a_worlds_trio_task() -> bool:
    try:
        tl.current_task()
        return UNDER_WORLD.get() is not None
    except RuntimeError:  # not in Trio (a thread, a plain program): none of the world's business
        return False


def _refuse_a_loop_of_its_own(self: object, coro: object = None) -> None:
    """Refused when a world's Trio task would run an asyncio loop of its own (see :class:`AsyncioUnderTheWorld`).

    ``asyncio.run`` in a Trio operator creates a loop and runs it to its end inside the actor's step: the world
    stops (nothing else can run), its I/O and clock are real, and a short coroutine ends "clean" while a long one
    looks like a CPU loop. Every way to run a loop goes through ``Runner.run``, ``run_until_complete`` or
    ``run_forever``, so refusing them names the model's line however the loop was reached; the coroutine it was
    given is closed, never left unawaited."""
    if isinstance(self, WorldLoop) or not _in_a_worlds_trio_task():
        return
    if inspect.iscoroutine(coro):
        coro.close()
    raise AsyncioUnderTheWorld(
        "an asyncio event loop was started (asyncio.run, loop.run_until_complete) from Trio code the world runs: "
        "it would run outside the world, on the real clock, while every other actor waits. Await the coroutine "
        "with anyio or trio instead, or run an asyncio operator as asyncio: Operator(api, name, main, "
        "asyncio=True) with main the coroutine function asyncio.run would run")


_RUNNER_RUN = asyncio.Runner.run
_RUN_UNTIL_COMPLETE = asyncio.BaseEventLoop.run_until_complete


def _runner_run(self: asyncio.Runner, coro: Any, *, context: contextvars.Context | None = None) -> Any:
    _refuse_a_loop_of_its_own(self, coro)
    return _RUNNER_RUN(self, coro, context=context)


def _run_until_complete(self: asyncio.BaseEventLoop, future: Any) -> Any:
    _refuse_a_loop_of_its_own(self, future)
    return _RUN_UNTIL_COMPLETE(self, future)


def _run_forever(self: asyncio.BaseEventLoop) -> None:
    _refuse_a_loop_of_its_own(self)
    _RUN_FOREVER(self)


asyncio.Runner.run = _runner_run  # type: ignore[method-assign]
asyncio.BaseEventLoop.run_until_complete = _run_until_complete  # type: ignore[method-assign]
asyncio.BaseEventLoop.run_forever = _run_forever  # type: ignore[method-assign]
