"""An actor's own concurrency is the world's: the Trio tasks it starts are actors, and every Trio wake-up a decision.

An operator written for production opens its own task group (a list-and-watch
loop per resource, a worker once the caches synced), waits on ``anyio.Event``
and backs off with ``anyio.sleep``. None of that goes through the world, and
left to Trio it would run in Trio's order (a batch is reversed at random) and on
a clock the world does not move. Here it becomes the world's, without touching
the operator's code, through a Trio instrument (``trio.abc.Instrument``: hooks
Trio itself calls when a task is spawned, woken, stepped or exits):

* **a task spawned in an actor's nursery is an actor** (``task_spawned``), named
  after its parent and its function (``app-operator/watch_apps``; ``#2`` when
  repeated), a daemon when its parent is one; its first step is an action like
  any actor's start;
* **a Trio-level wake-up is an action** (``task_scheduled``): when a task of an
  actor that is not running is made runnable by Trio (an event set, a lock
  released, a memory channel's send, a sleep's deadline, a cancellation), the
  task is taken off Trio's run queue and held, and the actor registers
  ``wake at <the model's line>``; the scheduler resumes it when it chooses it, by
  putting the task back. Wake-ups registered at one decision are sorted by actor
  (Trio breaks ties between equal deadlines by ``id()``, which differs from
  process to process);
* **a block at Trio level hands the turn on** (``after_task_step``): when the
  running actor's task stops without being runnable and without waiting at a
  harness yield point, the world dispatches the next action, as an actor that
  yields does;
* **time**: a raw ``trio.sleep``/``anyio.sleep``, ``fail_after`` and
  ``move_on_after`` are Trio deadlines, and the world's clock moves to the next
  one when nothing else is enabled (``_Time._advance``), so they run in virtual
  time.

A running actor's own reschedule (a checkpoint) and the harness's resumption of
the chosen actor pass through untouched, as does everything once the run is
stopping. An actor blocked on real I/O or on a worker thread cannot be scheduled
by the world (its wake-up comes on the real clock): that is a misuse, a model
error at the model's line. Rejected alternative: patching trio's or anyio's
primitives (the operator's imports would have to be the harness's, and every
primitive would need a twin); the instrument sees them all, present and future.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import trio
import trio.lowlevel as tl
from trio._core._run import GLOBAL_RUN_CONTEXT  # the run queue a held task is put back on

from ._actors import _Actor, awaited_frames, waiting_at
from ._trace import Access

if TYPE_CHECKING:
    from ._world import World

#: where in Trio a task waits when its wake-up comes from outside the world (real I/O, a worker thread)
_OUTSIDE = {
    "_run_process": "a child process (trio.run_process)",
    "open_process": "a child process (trio.lowlevel.open_process)",
    "wait_readable": "real I/O (a socket)",
    "wait_writable": "real I/O (a socket)",
    "wait_overlapped": "real I/O",
    "to_thread_run_sync": "a worker thread (trio.to_thread / anyio.to_thread)",
    "run_sync_in_worker_thread": "a worker thread (anyio.to_thread)",
}


#: a Trio task named ``actor:<name>`` is adopted as ``<parent>/<name>`` (an asyncio task's host: its own name)
VERBATIM = "actor:"


def task_name(task: tl.Task) -> str:
    """The short name of a task's function (``watch_apps``), for an adopted actor's name."""
    if task.name.startswith(VERBATIM):
        return task.name[len(VERBATIM):]
    return task.name.rpartition(".")[2] or "task"  # Trio names a task by its function's qualified name


def blocked_outside(task: tl.Task) -> str | None:
    """What a blocked task waits on that only the real clock can end (I/O, a thread, a child process), or None.

    A child process is named by its command line and pid (``a child process (trio.run_process: kubectl get pods,
    pid 4242)``): the run ends it (Trio's own cancellation sends SIGTERM, then SIGKILL), and whoever reads the
    verdict can tell which of a model's processes it was.
    """
    frames = list(awaited_frames(task))
    what = next((w for f in frames if (w := _OUTSIDE.get(f.f_code.co_name)) is not None), None)
    if what is None or not what.startswith("a child process"):
        return what
    proc = next((p for f in frames if isinstance(p := f.f_locals.get("proc") or f.f_locals.get("self"), trio.Process)),
                None)
    command: object = proc.args if proc is not None else next(
        (c for f in frames if (c := f.f_locals.get("command")) is not None), None)  # still starting (in a thread)
    if command is None:
        return what
    args = " ".join(str(a) for a in command) if isinstance(command, list | tuple) else command
    return f"{what[:-1]}: {str(args)[:120]}{f', pid {proc.pid}' if proc is not None else ''})"


def awaits_own_tasks(task: tl.Task) -> bool:
    """Whether a blocked task waits at the end of its own nursery or task group for the tasks it started.

    Its wake-up comes from those tasks (each an actor of its own), not from
    outside the world: its state is theirs. An operator's ``async with
    anyio.create_task_group() as tg: tg.start_soon(...)`` spends its life there.
    """
    return bool(task.child_nurseries) and any(
        f.f_code.co_name == "_nested_child_finished" for f in awaited_frames(task))


def release_held(adopter: TaskAdopter | None) -> None:
    """The run is stopping: every task Trio woke and the world still holds off the run queue goes back on it.

    A held task is runnable as far as Trio knows, so the run's cancellation never
    reaches it; left off the queue it would never run again, and ``trio.run``
    would wait for it for ever (a child process that exits just after the world
    failed: its waiter is woken, held, and lost).
    """
    if adopter is None:
        return
    runq = GLOBAL_RUN_CONTEXT.runner.runq
    for task, actor in list(adopter.of_task.items()):
        if actor.held:
            actor.held = False
            runq.append(task)
    adopter.woken.clear()


def sleeping(task: tl.Task) -> bool:
    """Whether a blocked task is in a raw ``trio.sleep``/``anyio.sleep`` (its deadline will wake it)."""
    return any(f.f_code.co_name == "sleep_until" for f in awaited_frames(task))


class SpawnHook(trio.abc.Instrument):
    """The one hook every run keeps: a task spawned in an actor's nursery installs the adopter and is adopted."""

    def __init__(self, adopter: TaskAdopter) -> None:
        self.adopter = adopter

    def task_spawned(self, task: tl.Task) -> None:
        nursery = task.parent_nursery
        if nursery is None:
            return
        adopter = self.adopter
        parent = adopter.of_task.get(nursery.parent_task)
        if parent is None or adopter.world._stopping:
            return
        try:
            adopter.install()
            adopter.world._adopt(task, parent, task_name(task))
        except BaseException as exc:  # an instrument's exception is swallowed by Trio: keep it for the run
            adopter.failed = exc


class TaskAdopter(trio.abc.Instrument):
    """The instrument that makes an actor's own Trio tasks and wake-ups the world's.

    Installed only once a run needs it (its first task spawned in an actor's
    nursery, or its first block at Trio level, which leaves Trio idle: the
    world's watcher sees it): a model that never leaves the harness's own
    primitives pays for no hook at all (``bench/``: the ratio with and without).
    """

    def __init__(self, world: World) -> None:
        self.world = world
        #: every actor's task -> its actor (the harness's actors and the adopted ones); kept from the run's start
        self.of_task: dict[tl.Task, _Actor] = {}
        #: tasks Trio woke that wait, off the run queue, for their turn: registered at the next dispatch
        self.woken: list[_Actor] = []
        #: an exception raised inside a hook (Trio would swallow it and drop the instrument): raised after the run
        self.failed: BaseException | None = None
        self.installed = False
        #: actors whose registered action is a mechanical wake-up (``_actors.MECHANICAL``), not yet taken
        self.urgent = 0

    def install(self) -> None:
        if not self.installed:
            self.installed = True
            tl.add_instrument(self)

    def remove(self) -> None:
        if self.installed:
            self.installed = False
            # (Trio drops an instrument whose hook raised; a run torn down from outside has no Trio context left)
            with contextlib.suppress(KeyError, RuntimeError):
                tl.remove_instrument(self)

    def task_scheduled(self, task: tl.Task) -> None:
        actor = self.of_task.get(task)
        if actor is None:
            return
        w = self.world
        if actor is w._current or w._stopping or actor.done:
            return  # the harness resumed it, or it rescheduled itself (a checkpoint), or the run is ending
        runq = GLOBAL_RUN_CONTEXT.runner.runq
        if runq and runq[-1] is task:
            runq.pop()
        else:
            runq.remove(task)
        actor.trio_blocked = False
        actor.held = True
        self.woken.append(actor)
        waker = w._current
        if waker is not None and w._fp is not None:  # a step that wakes a task (an event set, a stream's send):
            # the woken task's next step reads what this one wrote (the story follows it, the referee orders it)
            w._fp.append(Access(f"wake {actor.name}", True, f"wakes {actor.name}"))
        if w._advancing and w._advance_scope is not None:
            w._advance_scope.cancel()  # something is enabled now: time stops here

    def after_task_step(self, task: tl.Task) -> None:
        actor = self.of_task.get(task)
        if actor is None:
            return
        w = self.world
        if actor.done:
            del self.of_task[task]
        if actor is not w._current or w._stopping or w._ended:
            return
        if actor.done:
            if not actor.adopted:
                return  # a harness actor hands off in its own code (_run_actor) before it ends
        elif task._next_send_fn is not None or actor.waiting or actor.task_parked or actor.go:
            return  # it continues (a checkpoint), or it waits at a harness yield point (it handed off)
        try:
            w._blocked_in_trio(actor)
        except BaseException as exc:
            self.failed = exc
            w._fail("interrupted", type(exc).__name__, f"{type(exc).__name__} while scheduling: {exc}", actor)
            w._wake_controller()

    def task_exited(self, task: tl.Task) -> None:
        actor = self.of_task.get(task)
        if actor is not None and actor.adopted:
            actor.done = True
            actor.waiting = False
            actor.held = False
            actor.trio_blocked = False

    # ------------------------------------------------------------------ the world's side
    def wake_label(self, actor: _Actor) -> str:
        """``wake at operator.py:41 in run (await ready.wait())``: where the woken task resumes, in the model's words."""
        if not actor.started:
            return f"start {actor.name}"
        at = waiting_at(actor.task)
        return f"wake at {at}" if at else "wake"
