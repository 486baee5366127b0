"""asyncio under the world: an operator's event loop whose every task is an actor and every wait a choice.

Most Python operators are asyncio code (kopf, ``kubernetes_asyncio``, a
lightkube operator started with ``anyio.run``). Left to itself, an asyncio
loop runs its ready callbacks in FIFO order and its timers on the real clock:
one fixed order, never explored, and not even reproducible. :class:`WorldLoop`
is an asyncio event loop (``asyncio.BaseEventLoop``, so futures, tasks,
``asyncio.timeout``, queues and locks are asyncio's own) whose scheduling is
the world's:

* **every asyncio task is hosted by a Trio task** spawned in the operator's
  nursery, so the adopter (``_tasks.py``) makes it an actor named after its
  coroutine (``kopf-op/watcher``). A task's steps, and the callbacks its steps
  schedule, run only in its host, one step at a time, never beside another
  actor's;
* **a wake-up is an action**: a future completing schedules the waiting task's
  step on *that task's* host (``call_soon`` sees which task a callback steps),
  and waking a parked host is a Trio-level wake-up, which the adopter holds
  until the world chooses it (``wake at kopf_op.py:41 in handler``). The ready
  queue never decides an observable order by itself;
* **time is virtual**: ``loop.time()`` is the world's clock; a timer
  (``asyncio.sleep``, ``call_later``, ``wait_for``, ``asyncio.timeout``) belongs
  to the host that set it, which parks with the timer as its Trio deadline, so
  the world moves the clock to it when nothing else is enabled;
* **the world's own operations** (a request to the apiserver, a watch read) are
  Trio code with yield points: :meth:`WorldLoop.run_trio` hands one to the
  current task's host, which runs it as that actor's steps and settles the
  asyncio future the task awaits;
* **blocking code in threads** (``run_in_executor``, ``asyncio.to_thread``;
  kopf's sync handlers) runs in a real thread in lockstep with the world
  (``_lockstep.py``): one thread or actor at a time, never both.

What the world cannot order is refused as a model error at the model's line: a
raw socket or file descriptor (``add_reader``), a child process, signal
handlers, a connection to a host the scenario does not serve.

Rejected alternatives: trio-asyncio (one Trio task runs the whole asyncio loop,
so a task that waits on the world parks every other asyncio task, and its ready
queue is FIFO); a loop on a virtual clock alone (looptime: time becomes virtual
but the order stays the ready queue's, and nothing is a choice).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import re
import sys
import threading
from asyncio import events
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio
import trio.lowlevel as tl
from sniffio import thread_local as _sniffio

from .._errors import HarnessError
from ._actors import FOREIGN_FRAMES, _whose
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
    """An operator's loop was asked for something the world cannot order (a socket, a child process, a signal)."""


class _Host:
    """The Trio task that runs one asyncio task's steps, and the callbacks its steps schedule."""

    __slots__ = ("event", "jobs", "name", "ready", "scope", "task", "timers", "trio_task")

    def __init__(self, task: asyncio.Task[Any] | None, name: str) -> None:
        self.task = task
        self.name = name
        self.ready: deque[events.Handle] = deque()
        self.timers: list[events.TimerHandle] = []
        #: the world's operations its task awaits, run as this host's Trio code (:meth:`WorldLoop.run_trio`)
        self.jobs: deque[tuple[Callable[[], Awaitable[Any]], asyncio.Future[Any]]] = deque()
        self.event: trio.Event | None = None  # set while it is parked
        self.scope: trio.CancelScope | None = None  # its park's deadline: its earliest timer
        self.trio_task: tl.Task | None = None

    def next_deadline(self) -> float:
        timers = self.timers
        while timers and timers[0].cancelled():
            heapq.heappop(timers)
        return timers[0].when() if timers else float("inf")

    def idle(self) -> bool:
        return not self.ready and not self.jobs


def _coroutine_frames(task: asyncio.Task[Any]) -> Iterator[FrameType]:
    coro: Any = task.get_coro()
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


def _creation_key(host: _Host) -> tuple[str, tuple[tuple[str, str], ...]]:
    """Tasks created by one step, in a canonical order: their coroutine's function, then its plain arguments."""
    coro: Any = host.task.get_coro() if host.task is not None else None
    frame = getattr(coro, "cr_frame", None)
    args = () if frame is None else tuple(sorted((k, repr(v)) for k, v in frame.f_locals.items()
                                                 if isinstance(v, _PLAIN)))
    return (host.name, args)


def actor_name(name: str) -> str:
    """A name the operator gave a task (kopf's ``watcher for configmaps.v1@default``) as one word of an actor's
    name: no spaces or slashes (a slash separates an actor from its parent)."""
    name = re.sub(r"<([\w.]+) object at 0x[0-9a-fA-F]+>", lambda m: m.group(1).rpartition(".")[2], name)
    name = re.sub(r"\s*\bat 0x[0-9a-fA-F]+|0x[0-9a-fA-F]+", "", name)  # (an address differs from process to process)
    return re.sub(r"[\s/]+", "-", name).strip("-") or "task"


class WorldLoop(asyncio.BaseEventLoop):
    """An asyncio event loop whose tasks are the world's actors and whose clock is the world's (see the module)."""

    def __init__(self, world: World, network: Network | None = None) -> None:
        super().__init__()
        self.world = world
        self.network = network
        self._hosts: dict[asyncio.Task[Any], _Host] = {}
        self._current: _Host | None = None
        self._driver: _Host | None = None
        self._nursery: trio.Nursery | None = None
        self._names = itertools.count(1)
        #: hosts of tasks created in the running step, started when it is over
        self._unspawned: list[_Host] = []
        self._ending = False
        self._agens_alive: list[Any] = []
        #: callbacks scheduled from a lockstep thread, taken on by the host that runs the thread when it resumes
        self._from_threads: deque[events.Handle] = deque()
        self._trio_thread = threading.get_ident()
        self._signals: dict[int, tuple[Callable[..., Any], tuple[Any, ...]]] = {}

    # ------------------------------------------------------------------ running
    async def run(self, coro: Awaitable[T]) -> T:
        """Run ``coro`` as the loop's main task (``asyncio.run`` under the world) and return what it returns.

        The calling Trio task (an actor) is the loop's driver: it runs the
        callbacks and timers no task owns, and ends the loop when the main task
        ends: the tasks still pending are cancelled and run to their end, as
        ``asyncio.run`` does. Cancelled from outside (a crash, the run's end),
        every pending task's coroutine is closed where it waits, in task order.
        """
        if self._nursery is not None:
            raise RuntimeError("a WorldLoop runs once")
        self._thread_id = threading.get_ident()
        self._trio_thread = self._thread_id
        main: asyncio.Task[T] | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                driver = self._driver = _Host(None, "loop")
                driver.trio_task = tl.current_task()
                context = contextvars.copy_context()
                main = self.create_task(coro, context=context)
                main.add_done_callback(lambda _t: self._wake(driver))
                await self._serve(driver, until=main)
                for task in [t for t in self._hosts if not t.done()]:
                    task.cancel()  # asyncio.run's _cancel_all_tasks
                await self._serve(driver, until=None)
        finally:
            self._abandon()
            self._thread_id = None  # type: ignore[assignment]
            self._closed = True
        assert main is not None
        return main.result()

    async def _serve(self, host: _Host, until: asyncio.Task[Any] | None) -> None:
        """The driver's loop: run what no task owns until ``until`` is done (None: until every task is)."""
        while True:
            await self._turn(host)
            if (until.done() if until is not None else all(t.done() for t in self._hosts)) and host.idle():
                return
            await self._park(host)

    async def _host(self, host: _Host) -> None:
        """A task's host: its steps and callbacks, then parked until a wake-up or its earliest timer."""
        task = host.task
        assert task is not None and host.trio_task is None
        host.trio_task = tl.current_task()
        FOREIGN_FRAMES[host.trio_task] = lambda: _coroutine_frames(task)
        try:
            while True:
                await self._turn(host)
                if task.done() and host.idle():
                    self._hand_timers_on(host)
                    return
                await self._park(host)
        finally:
            FOREIGN_FRAMES.pop(host.trio_task, None)

    async def _turn(self, host: _Host) -> None:
        """Run the host's ready callbacks and the world's operations they await, until none is left."""
        while True:
            self._fire_due(host)
            if host.ready:
                self._run_ready(host)
            elif host.jobs:
                await self._run_job(host)
            else:
                return

    async def _park(self, host: _Host) -> None:
        """Wait for a wake-up (another host's step made a callback of ours ready) or the earliest timer."""
        host.event = trio.Event()
        try:
            with trio.CancelScope(deadline=host.next_deadline()) as scope:
                host.scope = scope
                await host.event.wait()
        finally:
            host.event = host.scope = None

    def _wake(self, host: _Host) -> None:
        if host.event is not None and host is not self._current:
            host.event.set()

    def _fire_due(self, host: _Host) -> None:
        timers = host.timers
        if not timers:
            return
        now = self.time()
        while timers and (timers[0].cancelled() or timers[0].when() <= now):
            timer = heapq.heappop(timers)
            timer._scheduled = False  # type: ignore[attr-defined]
            if not timer.cancelled():
                host.ready.append(timer)

    def _run_ready(self, host: _Host) -> None:
        """Run the host's ready callbacks, as the running loop (one task's step, then what it scheduled for itself)."""
        saved_loop = events._get_running_loop()
        saved_library = _sniffio.name
        saved_hooks = sys.get_asyncgen_hooks()
        events._set_running_loop(self)
        _sniffio.name = "asyncio"  # (Trio names itself for the whole thread; anyio asks sniffio)
        sys.set_asyncgen_hooks(firstiter=self._asyncgen_firstiter_hook, finalizer=self._asyncgen_finalizer_hook)
        self._current = host
        try:
            ready = host.ready
            while ready:
                handle = ready.popleft()
                if not handle._cancelled:
                    handle._run()
                if self._unspawned:
                    # in an order that does not depend on memory addresses: asyncio.as_completed and asyncio.wait
                    # create their tasks in the order of a set of coroutines, which is by id()
                    for new in sorted(self._unspawned, key=_creation_key):
                        self._spawn(new)
                    self._unspawned.clear()
        finally:
            self._current = None
            sys.set_asyncgen_hooks(*saved_hooks)
            _sniffio.name = saved_library
            events._set_running_loop(saved_loop)

    async def _run_job(self, host: _Host) -> None:
        fn, fut = host.jobs.popleft()
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
        self._current = host  # (what settling schedules is this host's to run, as if its step had settled it)
        try:
            if outcome[0]:
                fut.set_result(outcome[1])
            else:
                fut.set_exception(outcome[1])
        finally:
            self._current = None

    def _hand_timers_on(self, host: _Host) -> None:
        """A finished task's timers (a ``call_later`` it left behind) are the driver's to fire."""
        driver = self._driver
        live = [t for t in host.timers if not t.cancelled()]
        host.timers.clear()
        if driver is None or not live:
            return
        for t in live:
            heapq.heappush(driver.timers, t)
        self._redeadline(driver)

    def _redeadline(self, host: _Host) -> None:
        if host.scope is not None:
            host.scope.deadline = host.next_deadline()

    def _abandon(self) -> None:
        """The loop ends with tasks pending (a crash, the run's end): each is cancelled, as ``asyncio.run`` does.

        Trio is cancelling, so nothing here may wait: the pending tasks are
        cancelled and their steps run at once, in task order (their ``finally``
        and ``except CancelledError`` run as they would); an operation of the
        world one of them starts is refused (cancelled); timers never fire. A
        task still pending after that is closed where it waits.
        """
        self._ending = True
        try:
            for _ in range(50):
                pending = [t for t in self._hosts if not t.done()]
                if not pending:
                    break
                for task in pending:
                    if not task.cancelling():
                        task.cancel()
                ran = False
                for host in [*self._hosts.values(), *([self._driver] if self._driver else [])]:
                    while host.jobs:
                        host.jobs.popleft()[1].cancel()
                    if host.ready:
                        ran = True
                        self._run_ready(host)
                if not ran:
                    break
            saved = events._get_running_loop()
            events._set_running_loop(self)
            try:
                for task in self._hosts:
                    if not task.done():
                        task._log_destroy_pending = False  # type: ignore[attr-defined]
                        with contextlib.suppress(BaseException):
                            task.get_coro().close()
            finally:
                events._set_running_loop(saved)
        finally:
            self._hosts.clear()
            self._agens_alive.clear()

    # ------------------------------------------------------------------ the world's operations
    def run_trio(self, fn: Callable[[], Awaitable[T]], host: object = None) -> asyncio.Future[T]:
        """A future of ``await fn()`` run as Trio code of a task's host: its yield points are that task's actor's.

        ``host`` is one :meth:`current_host` returned (default: the host running
        now). For the harness's own adapters (the apiserver's in-memory
        connections): call it from a task's step and await the future.
        """
        runner = host if isinstance(host, _Host) else self._current
        if runner is None:
            raise RuntimeError("run_trio is called from an asyncio task's step under a WorldLoop")
        fut: asyncio.Future[T] = self.create_future()
        runner.jobs.append((fn, fut))
        self._wake(runner)
        return fut

    def current_host(self) -> object:
        """The host running now (an opaque token for :meth:`run_trio`; None between steps)."""
        return self._current

    def current_name(self) -> str | None:
        """The name of the host running now (its task's coroutine), None between steps."""
        return None if self._current is None else self._current.name

    # ------------------------------------------------------------------ scheduling (asyncio's API)
    def time(self) -> float:
        return trio.current_time()

    def _owner(self, callback: Callable[..., Any]) -> _Host:
        """Whose host runs a callback: the task it steps (a step, a wake-up), else the host scheduling it."""
        task = getattr(callback, "__self__", None)
        if isinstance(task, _TASKS) and task.get_loop() is self:
            host = self._hosts.get(task)
            if host is None:
                host = self._new_host(task)
            return host
        current = self._current
        if current is not None:
            return current
        driver = self._driver
        if driver is None:
            raise RuntimeError("this WorldLoop is not running: start it with `await loop.run(main())`")
        return driver

    def _new_host(self, task: asyncio.Task[Any]) -> _Host:
        nursery = self._nursery
        if nursery is None:
            raise RuntimeError("this WorldLoop is not running: start it with `await loop.run(main())`")
        host = self._hosts[task] = _Host(task, _short_name(task.get_coro()))
        if self._ending:
            return host  # (while the loop ends, its steps run at once, in _abandon)
        if self._current is not None:
            self._unspawned.append(host)  # started when the step that created it is over: it may name it still
        else:
            self._spawn(host)
        return host

    def _spawn(self, host: _Host) -> None:
        """Start a task's host, named after the task (``asyncio.create_task(coro, name=...)`` names it after
        creating it) or else its coroutine."""
        assert self._nursery is not None and host.task is not None
        name = host.task.get_name()
        if not (name.startswith("Task-") and name[5:].isdigit()):
            host.name = actor_name(name)
        self._nursery.start_soon(self._host, host, name=VERBATIM + host.name)

    def call_soon(self, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                  context: contextvars.Context | None = None) -> events.Handle:
        self._check_closed()  # type: ignore[attr-defined]
        handle = events.Handle(callback, args, self, context)
        if threading.get_ident() != self._trio_thread:
            self._from_threads.append(handle)  # (a lockstep thread runs while the world waits for it)
            return handle
        host = self._owner(callback)
        host.ready.append(handle)
        self._wake(host)
        return handle

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                             context: contextvars.Context | None = None) -> events.Handle:
        return self.call_soon(callback, *args, context=context)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                context: contextvars.Context | None = None) -> events.TimerHandle:
        self._check_closed()  # type: ignore[attr-defined]
        timer = events.TimerHandle(when, callback, args, self, context)
        host = self._owner(callback)
        heapq.heappush(host.timers, timer)
        timer._scheduled = True  # type: ignore[attr-defined]
        if host is not self._current:
            self._redeadline(host)
        return timer

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                   context: contextvars.Context | None = None) -> events.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def _timer_handle_cancelled(self, handle: events.TimerHandle) -> None:
        pass  # a host drops cancelled timers when it next looks at its deadline

    def take_from_threads(self) -> None:
        """Callbacks a lockstep thread scheduled: each to its owner's host (the thread's own host runs the rest)."""
        while self._from_threads:
            handle = self._from_threads.popleft()
            host = self._owner(handle._callback)  # type: ignore[attr-defined]
            host.ready.append(handle)
            self._wake(host)

    def create_task(self, coro: Any, *, name: str | None = None,  # type: ignore[override]
                    context: contextvars.Context | None = None) -> asyncio.Task[Any]:
        self._check_closed()  # type: ignore[attr-defined]
        if self._task_factory is not None:  # type: ignore[attr-defined]
            raise OutsideTheWorld("a task factory set on the operator's loop would hide its tasks from the world; "
                                  "run the operator without loop.set_task_factory under the harness")
        # a name of the loop's own count: asyncio's default (Task-N) counts every task of the process
        return _PyTask(coro, loop=self, name=name or f"Task-{next(self._names)}", context=context)

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
        at = _model_line()
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
        if self._current is not None:
            fn(*args)
            return
        saved_loop, saved_library = events._get_running_loop(), _sniffio.name
        events._set_running_loop(self)
        _sniffio.name = "asyncio"
        self._current = self._driver
        try:
            fn(*args)
        finally:
            self._current = None
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
        return run_in_thread(self, func, args)

    def spawn_host(self, name: str, fn: Callable[[], Awaitable[None]]) -> None:
        """Start a Trio task in the loop's nursery (an actor named ``name``): a lockstep thread's side."""
        assert self._nursery is not None
        self._nursery.start_soon(fn, name=name)


def _model_line() -> str | None:
    """``op.py:12 in main (...)``: the innermost frame of the model's own code on the calling stack."""
    import linecache
    from pathlib import Path

    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != "_run_ready":  # (the step's own stack, not the world's)
        path = frame.f_code.co_filename
        if not path.startswith("<") and _whose(path) == 2:
            line = linecache.getline(path, frame.f_lineno).strip()
            return f"{Path(path).name}:{frame.f_lineno} in {frame.f_code.co_name}" + (f" ({line[:80]})" if line else "")
        frame = frame.f_back  # type: ignore[assignment]
    return None


#: sockets aiohappyeyeballs "connected" to the apiserver's address: the in-memory connection replaces them
_CONNECTED: dict[Any, tuple[str, int]] = {}
