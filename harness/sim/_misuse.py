"""What an actor's exception says about the model: a misuse of the harness is a model error at the model's line.

An operator written for production, put under the world as it is, met two
things the world cannot run yet, and both came out as a *finding*:

- its own task group's tasks awaited the apiserver outside any actor, and the
  run said ``raised ExceptionGroup: Exceptions from Trio nursery (2
  sub-exceptions) ... proved minimal``, the real message (``NotInSimulation``)
  in no output at all;
- an ``asyncio.sleep`` in Trio code said ``RuntimeError: no running event
  loop ... proved minimal``.

Neither is the controller's bug. Here an exception group is opened to the
exception that ended it (the first leaf that is not a cancellation: the
others were cancelled *because* of it), and an exception that says the
harness was misused is worded as what to do, at the innermost line of the
model's own code (not the harness's, Trio's, asyncio's or a client
library's). The world records it as a ``misuse`` violation, which the search
reports as a model error.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from pathlib import Path

import trio

from ._actors import shown_name

#: code that is not the model's: the harness, Trio, the standard library and installed packages
_NOT_THE_MODEL = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {
        str(Path(__file__).parent.parent),
        str(Path(trio.__file__).parent),
        *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")),
    }
)


def ending(exc: BaseException) -> BaseException:
    """The exception that ended a task group: its first leaf that is not a cancellation (else its first leaf)."""
    if not isinstance(exc, BaseExceptionGroup):
        return exc
    leaves = list(_leaves(exc))
    return next((e for e in leaves if not isinstance(e, trio.Cancelled)), leaves[0] if leaves else exc)


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


def model_line(exc: BaseException) -> str | None:
    """``operator.py:145 in run (await asyncio.sleep(1))``: the innermost frame of the model's own code."""
    found = None
    for f in traceback.extract_tb(exc.__traceback__):
        try:
            path = str(Path(f.filename).resolve())
        except (OSError, ValueError):
            continue
        if path.startswith(_NOT_THE_MODEL) or f.filename.startswith("<"):
            continue
        code = (f.line or "").strip()
        found = f"{shown_name(f.filename)}:{f.lineno} in {f.name}" + (f" ({code[:80]})" if code else "")
    return found


def _asyncio_call(exc: BaseException) -> str | None:
    """``asyncio.sleep``: the asyncio function the model called, when the exception came from asyncio."""
    frames = traceback.extract_tb(exc.__traceback__)
    for i, f in enumerate(frames):
        name = f.filename.replace("\\", "/")
        if "/asyncio/" in name and i > 0:
            return f"asyncio.{f.name}"
    return None


def misuse(exc: BaseException, actor: str) -> str | None:
    """The model error an exception stands for (what happened, where, what to do), or None for a finding."""
    from .._errors import NotInSimulation, OperatorNotLoaded, OutsideTheCluster, UsageError

    at = model_line(exc)
    where = f" at {at}" if at else ""
    if isinstance(exc, NotInSimulation):
        return (f"{actor} awaited the harness from a task the world does not schedule{where}: {exc} A task "
                "the world cannot see (a Trio system task, a nursery no actor opened) is not an actor; start each "
                "concurrent loop with world.spawn(...) or in an actor's own nursery or task group")
    if isinstance(exc, OutsideTheCluster):
        return f"{actor} made a request the world does not serve{where}: {exc}"
    if isinstance(exc, OperatorNotLoaded):
        return f"{actor} could not start: {exc}"
    if isinstance(exc, UsageError):  # (a library at an untested version, an option out of range: said as it is)
        return f"{actor} could not run{where}: {exc}"
    from ._asyncio import AsyncioUnderTheWorld

    if isinstance(exc, AsyncioUnderTheWorld):
        call = _asyncio_call(exc)
        return f"{actor} started an asyncio event loop{where}{f' ({call})' if call else ''}: {exc}"
    text = str(exc)
    call = _asyncio_call(exc)
    if isinstance(exc, RuntimeError) and ("no running event loop" in text or "no current event loop" in text
                                          or call is not None):
        what = f" ({call})" if call else ""
        return (f"{actor} used asyncio{where}{what}: this actor runs on Trio under the world, and asyncio "
                f"primitives need an asyncio event loop ({text}); use trio's or anyio's (anyio.sleep, "
                "anyio.Event) or the world's (world.sleep, world.Event()), or run the operator on asyncio")
    if type(exc).__name__ == "AsyncLibraryNotFoundError":  # sniffio: a library asked which loop runs it
        return (f"{actor} called an async library that could not tell which event loop runs it{where}: "
                f"{text}; call it from an actor's own code")
    return None
