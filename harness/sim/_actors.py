"""The actor table: who the actors of a run are (:class:`_Actor`), the scenario's own, and where a waiting one waits.

Every actor is a Trio task spawned by the harness; its table entry holds what
the scheduler needs to decide whether it may run next (its registered action,
guard, window and place in the canonical order) and how to resume it. Who
runs next is decided from these entries by ``_dispatch``; this module is the
data both clocks share (the real clock's driver keeps the same entries).
"""

from __future__ import annotations

import functools
import linecache
import os
import sysconfig
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import trio
import trio.lowlevel as tl

from ._choice import Option

if TYPE_CHECKING:
    from ._world import World

_CANCEL = object()  # resume value meaning "a cancel scope around this wait fired"
#: the scenario's own actor: the test that builds the cluster and plays the user (no fault points)
MAIN_ACTOR = "main"

_NOT_THE_MODEL = tuple(
    str(Path(p).resolve()) + os.sep
    for p in (Path(__file__).parent.parent, Path(trio.__file__).parent, sysconfig.get_paths()["stdlib"])
)
#: installed packages (anyio, lightkube, httpx): a model's line is preferred to theirs, theirs to none
_PACKAGES = tuple({str(Path(sysconfig.get_paths()[k]).resolve()) + os.sep for k in ("purelib", "platlib")})


#: a model file's name as labels give it, by the name it runs under (a hunt's copy of it beside the trace)
FILE_ALIASES: dict[str, str] = {}


def alias_model_file(copy: str, original: str) -> None:
    """Labels name lines of ``copy`` (a file name) as lines of ``original``: a trace hunted from ``original`` and
    replayed from the hunt's copy of it names the same lines (``wake at kopf_op.py:86 in ...``)."""
    if copy.endswith(".py") and original.endswith(".py"):
        FILE_ALIASES[Path(copy).name] = Path(original).name


def shown_name(path: str) -> str:
    """A source file's name as a label gives it (``kopf_op.py``), through :data:`FILE_ALIASES`."""
    name = Path(path).name
    return FILE_ALIASES.get(name, name)


@functools.lru_cache(maxsize=4096)
def _whose(path: str) -> int:
    """2: the model's own code; 1: an installed package's; 0: the harness's, Trio's or the standard library's."""
    resolved = str(Path(path).resolve())
    if resolved.startswith(_NOT_THE_MODEL):
        return 0
    return 1 if resolved.startswith(_PACKAGES) else 2


#: Trio tasks whose next wake-up is mechanical: woken only to start an operation whose own yield points are the
#: choices (an asyncio task's actor handed a request), so the world runs it at once, with no decision of its own
MECHANICAL: set[tl.Task] = set()

#: a Trio task that runs another library's coroutines (an asyncio task's host, ``_asyncio.py``) -> where those wait
FOREIGN_FRAMES: dict[tl.Task, Callable[[], Iterator[FrameType]]] = {}


def awaited_frames(task: tl.Task) -> Iterator[FrameType]:
    """The frames of a task's chain of awaited coroutines (``cr_await``), outermost first: where it waits.

    A Trio task hosting an asyncio task continues into that task's chain: that is where the model's code waits.
    """
    coro: Any = task.coro
    for _ in range(200):  # a chain of awaits, never a cycle; bounded all the same
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        yield frame
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    foreign = FOREIGN_FRAMES.get(task)
    if foreign is not None:
        yield from foreign()


def waiting_at(task: tl.Task | None) -> str | None:
    """``model.py:88 in scenario (await done.wait(...))``: the innermost line of the model's own code a task awaits on.

    Walks the task's chain of awaited coroutines (``cr_await``) and keeps the
    last frame of the model's own code (else of an installed package: a line of
    anyio's is better than none), never the harness's, Trio's or the standard
    library's, so a wait is named where its author wrote it, not in
    ``_primitives``.
    """
    if task is None:
        return None
    found: tuple[int, Any] | None = None
    for frame in awaited_frames(task):
        whose = _whose(frame.f_code.co_filename)
        if whose and (found is None or whose >= found[0]):
            found = (whose, frame)
    if found is None:
        return None
    frame = found[1]
    path = frame.f_code.co_filename
    line = linecache.getline(path, frame.f_lineno).strip()
    return f"{shown_name(path)}:{frame.f_lineno} in {frame.f_code.co_name}" + (f" ({line[:80]})" if line else "")


class _Actor:
    """One actor's entry in the table: its task, the action it registered, and where it stands in the canonical order."""

    __slots__ = (
        "abort_fn",
        "adopted",
        "cancel_pending",
        "daemon",
        "done",
        "fresh",
        "go",
        "guard",
        "held",
        "idle",
        "index",
        "key",
        "label",
        "latest_ns",
        "name",
        "option",
        "ready_ns",
        "rv",
        "seq",
        "since_ns",
        "started",
        "task",
        "task_parked",
        "trio_blocked",
        "urgent",
        "waiting",
    )

    def __init__(self, name: str, index: int, daemon: bool) -> None:
        self.name = name
        self.index = index
        self.daemon = daemon
        self.task: tl.Task | None = None
        self.label = "start"
        self.key: str | None = None
        self.rv: int | None = None
        self.guard: Callable[[], bool] | None = None
        self.ready_ns = 0  # when its action becomes enabled (a sleep's end), in nanoseconds
        self.since_ns = 0  # when it became enabled: its place in the canonical order
        self.latest_ns = 0  # the end of its window: it may be postponed until then
        self.seq = 0
        self.waiting = False  # registered an action and waits to be chosen
        self.task_parked = False  # physically inside wait_task_rescheduled
        self.go = False  # chosen; continue at the next check
        self.cancel_pending = False
        self.done = False
        self.idle = False  # a daemon's "waiting for work" wait (not a deadlock)
        self.fresh = False  # it waits for work or for time: what it does next starts afresh (a story's program order)
        self.option = Option(name, "start", None)
        #: a Trio task the actor's own code started (its nursery, its task group), not one world.spawn started
        self.adopted = False
        #: made runnable by Trio (an event set, a deadline) and held off Trio's run queue until the world chooses it
        self.held = False
        #: blocked at Trio level (a trio/anyio primitive, a raw sleep), not at a harness yield point
        self.trio_blocked = False
        #: it has run once (an adopted task's first action is its start)
        self.started = True
        #: its registered action is mechanical (``MECHANICAL``): taken before any other, never a choice
        self.urgent = False
        self.abort_fn: Callable[[Any], tl.Abort] = lambda _rc: tl.Abort.SUCCEEDED


async def _call_with_params(scenario: Callable[..., Awaitable[object]], world: World) -> None:
    """What the scenario's own actor (:data:`MAIN_ACTOR`) runs, under either clock: the scenario with the run's params."""
    await scenario(world, **world.params)
